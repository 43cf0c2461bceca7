import FoundationEssentials
import Glibc
import SyncUpsAudio
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol
import SyncUpsSpeech
import Synchronization

/// The running meeting's sync-up edited, removed by an outside edit, or deleted.
extension SessionController {
    /// The session's sync-up was edited (or replaced by an outside edit): attendees and duration apply from the next tick.
    func syncUpChanged(_ syncUp: SyncUp) {
        guard let session = active, session.machine.syncUp.id == syncUp.id, session.machine.syncUp != syncUp else {
            return
        }
        handle(.syncUpEdited(syncUp), in: session)
    }

    /// Another program's edit of sync-ups.json no longer has the running meeting's sync-up. The meeting goes
    /// on (the machine keeps its copy of the sync-up) and is saved with the sync-up restored.
    func syncUpRemovedByOutsideEdit() {
        guard let session = active else { return }
        state.warn(
            "another program's edit of sync-ups.json removed \"\(session.machine.syncUp.title)\" while its meeting is being recorded; the meeting goes on, and is saved with the sync-up restored"
        )
    }

    func syncUpDeleted(_ id: SyncUp.ID) {
        guard let session = active, session.machine.syncUp.id == id else { return }
        logger.notice(
            "the sync-up of the running meeting was deleted; discarding the meeting", .syncUp(id),
            .meeting(session.meetingID))
        handle(.syncUpDeleted, in: session)
    }
}
