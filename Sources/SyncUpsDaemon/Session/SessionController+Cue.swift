import SyncUpsAudio
import SyncUpsPOSIX

/// The speaker-change cue: a thread that plays it (`CuePlayer`), never waited for. A device that does not
/// answer holds that thread, and is said once a meeting; while it holds an ended meeting's cue, no other
/// thread is started for it (attacks 96, 97, 98).
extension SessionController {
    func startCue(_ session: ActiveSession) {
        guard let device = session.cueDeviceName else { return }
        stuckCues.removeAll { !$0.isPlaying }
        if let held = stuckCues.first(where: { $0.deviceName == device }) {
            session.cueBehind = held
            checkCue(session, after: .zero)
        } else {
            session.cue = makeCue(session, device: device)
        }
    }

    func playCue(_ session: ActiveSession) {
        if session.cue == nil, let held = session.cueBehind, !held.isPlaying {
            session.cueBehind = nil
            session.cue = makeCue(session, device: held.deviceName)
        }
        session.cue?.play()
        if session.cue != nil, session.cueCheck == nil {
            checkCue(session, after: CuePlayer.stuckAfter + .milliseconds(100))
        }
    }

    /// Without waiting: a cue stuck in its device held the clean-up worker, and with it the next meeting's
    /// capture open and this meeting's details, for good (attack 96).
    func stopCue(_ session: ActiveSession) {
        session.cueCheck.map(loop.cancel)
        session.cueCheck = nil
        session.cue?.stop()
        if let cue = session.cue, cue.isPlaying { stuckCues.append(cue) }
        session.cue = nil
        session.cueBehind = nil
    }

    /// Says a cue the device has held for `CuePlayer.stuckAfter` (`.cueFailed`, once a meeting), and looks
    /// again each second while one is in the device. A timer of its own: the ticks stop while a meeting is
    /// paused or ending (attack 98), and a meeting with one cue has no next one to look at it.
    func checkCue(_ session: ActiveSession, after delay: Duration) {
        session.cueCheck = loop.schedule(after: delay) { [unowned self, session] in
            session.cueCheck = nil
            guard active === session, let player = session.cue ?? session.cueBehind else { return }
            if let error = player.stuckError {
                receive(.cueFailed(error, session.meetingID))
            } else if player.isPlaying {
                checkCue(session, after: .seconds(1))
            }
        }
    }

    private func makeCue(_ session: ActiveSession, device: String) -> CuePlayer? {
        let meetingID = session.meetingID
        let failed: @Sendable (AudioError) -> Void = { [mailbox] error in mailbox.post(.cueFailed(error, meetingID)) }
        do {
            return try CuePlayer(deviceName: device, onFailure: failed)
        } catch {
            // Said as a cue that does not play is, after this input: the meeting goes on without it.
            failed(error)
            return nil
        }
    }
}
