import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsProtocol

/// The one owner of the daemon's data: every sync-up and meeting. Every change to them goes through here,
/// which hands the store the new state (written off the loop, throttled; a meeting at once) and then
/// publishes the event that describes the change.
///
/// Lives on the event loop's thread; nothing else holds a reference to the array.
final class DaemonState {
    private(set) var syncUps: [SyncUp]
    /// The number of meetings of all sync-ups, kept for `status` (which must not walk the list each time);
    /// each change adjusts it, so none costs a walk of every sync-up either.
    private(set) var meetingCount = 0
    /// The sync-ups' ids by position, for lookups by id or prefix; changed with every append and removal.
    private var ids: IDIndex
    private let store: SyncUpStore
    private let publishEvent: PublishEvent
    let uuid: UUIDGenerator
    let now: WallClock
    let logger: Logger
    /// Page sizes and reply budgets.
    let limits: Limits
    /// Told when the sync-up of a running meeting changes or goes away.
    weak var session: SessionController?
    /// The people removed from each sync-up (`former-attendees.json`, which the store writes with the state).
    private(set) var former: FormerAttendees
    /// Saved meetings whose details file is not written yet (the clean-up thread writes them, and retries):
    /// `meetings.get` has them at once; `SessionController` performs the writes and reports to it.
    /// What `status` warns of a meeting recovered at start-up whose details could not be written, shown while
    /// they still wait (`detailsWrites`).
    var recoveredDetailsWarnings: [Meeting.ID: String] = [:]
    var detailsWrites = DetailsWrites<UnwrittenDetails>(
        initialDelay: StoreRetry.initialDelay, maximumDelay: StoreRetry.maximumDelay)
    /// Which writes of the user's data fail now: every writer reports to it through `writeFailed` and
    /// `writeWorked`, which publish what it says; `status.persistence.lastError` is its `lastError`.
    private(set) var failingWrites = FailingWrites()

    init(
        syncUps: [SyncUp],
        former: FormerAttendees = FormerAttendees(),
        store: SyncUpStore,
        uuid: UUIDGenerator,
        now: WallClock,
        logger: Logger,
        limits: Limits,
        publish: @escaping PublishEvent
    ) {
        self.limits = limits
        self.syncUps = syncUps
        self.former = former
        self.meetingCount = syncUps.reduce(0) { $0 + $1.meetings.count }
        self.ids = IDIndex(syncUps.map(\.id.description))
        self.store = store
        self.uuid = uuid
        self.now = now
        self.logger = logger
        self.publishEvent = publish
    }

    var dataDirectory: DataDirectory { store.directory }

    // MARK: - Finding

    /// The index of the sync-up `text` names (a full id or a unique prefix of 4+ characters).
    func index(of text: String) throws(ProtocolError) -> Int {
        switch ids.resolve(text) {
        case .found(let index): return index
        case .notFound: throw .notFound("no sync-up with id \(text)")
        case .tooShort: throw .invalidArgument("id \"\(text)\" is too short: give the full id or at least 4 characters")
        case .ambiguous(let indices):
            let matches = indices.map { "\(syncUps[$0].id) (\(syncUps[$0].title))" }.joined(separator: ", ")
            throw .invalidArgument("id prefix \"\(text)\" matches \(indices.count) sync-ups: \(matches)")
        }
    }

    /// The sync-up and meeting indices that `syncUpText` and `meetingText` name.
    func meetingIndex(syncUp syncUpText: String, meeting meetingText: String) throws(ProtocolError) -> (Int, Int) {
        let syncUpIndex = try index(of: syncUpText)
        let meetings = syncUps[syncUpIndex].meetings
        switch IDPrefix.resolve(meetingText, in: meetings.map(\.id.description)) {
        case .found(let index): return (syncUpIndex, index)
        case .notFound: throw .notFound("sync-up \(syncUps[syncUpIndex].title) has no meeting with id \(meetingText)")
        case .tooShort:
            throw .invalidArgument("id \"\(meetingText)\" is too short: give the full id or at least 4 characters")
        case .ambiguous(let indices):
            let matches = indices.map { meetings[$0].id.description }.joined(separator: ", ")
            throw .invalidArgument("id prefix \"\(meetingText)\" matches \(indices.count) meetings: \(matches)")
        }
    }

    // MARK: - Changing

    func create(_ draft: SyncUpDraft) throws(ProtocolError) -> SyncUp {
        let syncUp: SyncUp
        do {
            syncUp = try draft.validated(id: SyncUp.ID(uuid()), uuid: uuid)
        } catch {
            throw .invalidArgument(error.description)
        }
        syncUps.append(syncUp)
        ids.append(syncUp.id.description)
        store.save(syncUps)
        publish(.syncups, EventName.syncUpCreated, ["syncup": WireFormat.syncUp(syncUp, meetings: .summary)])
        logger.info("created sync-up \"\(syncUp.title)\"", .syncUp(syncUp.id))
        return syncUp
    }

    func update(_ index: Int, with update: SyncUpUpdate) throws(ProtocolError) -> SyncUp {
        var syncUp = syncUps[index]
        do {
            try syncUp.apply(update, uuid: uuid, former: former.of(syncUp.id))
        } catch {
            throw .invalidArgument(error.description)
        }
        guard syncUp != syncUps[index] else { return syncUp }
        // The running meeting's rule (`SessionMachine.refusal(ofEdit:)`).
        if let refusal = session?.refusal(ofEdit: syncUp) { throw .invalidArgument(refusal) }
        let formerChanged = former.follow(syncUps[index], to: syncUp)
        syncUps[index] = syncUp
        if formerChanged { store.save(syncUps, former: former) } else { store.save(syncUps) }
        publishUpdate(syncUp, change: "edited")
        session?.syncUpChanged(syncUp)
        return syncUp
    }

    /// Removes the sync-up; returns it and its meetings that nothing holds any more, whose files the session's
    /// journal writer removes off the loop (`meetingsDeleted`).
    func delete(_ index: Int) -> (syncUp: SyncUp, orphaned: [Meeting.ID]) {
        let syncUp = syncUps.remove(at: index)
        let formerChanged = former.forget(syncUp.id)
        ids.remove(at: index)
        meetingCount -= syncUp.meetings.count
        session?.syncUpDeleted(syncUp.id)
        if formerChanged { store.save(syncUps, former: former) } else { store.save(syncUps) }
        let orphaned = unheld(syncUp.meetings.map(\.id))
        session?.meetingsDeleted(orphaned)
        publish(
            .syncups, EventName.syncUpDeleted, ["id": .string(syncUp.id.description), "title": .string(syncUp.title)])
        logger.info("deleted sync-up \"\(syncUp.title)\"", .syncUp(syncUp.id))
        return (syncUp, orphaned)
    }

    /// Removes the meeting; returns it and, if nothing holds it any more, its id, whose files the session's
    /// journal writer removes off the loop (`meetingsDeleted`).
    func deleteMeeting(_ syncUpIndex: Int, _ meetingIndex: Int) -> (meeting: Meeting, orphaned: [Meeting.ID]) {
        let meeting = syncUps[syncUpIndex].meetings.remove(at: meetingIndex)
        meetingCount -= 1
        store.save(syncUps)
        let orphaned = unheld([meeting.id])
        session?.meetingsDeleted(orphaned)
        publishUpdate(syncUps[syncUpIndex], change: "meeting.deleted", meeting: .string(meeting.id.description))
        return (meeting, orphaned)
    }

    /// Saves a meeting in its sync-up's history, newest first (a new meeting goes to the top; a recovered
    /// one to its place by date), and writes the file at once: a meeting is never left to the throttle.
    /// Returns false if the sync-up no longer exists.
    @discardableResult
    func insertMeeting(_ meeting: Meeting, into syncUpID: SyncUp.ID) -> Bool {
        guard case .found(let index) = ids.resolve(syncUpID.description) else { return false }
        var syncUp = syncUps[index]
        let position = syncUp.meetings.firstIndex { $0.date <= meeting.date } ?? syncUp.meetings.count
        syncUp.meetings.insert(meeting, at: position)
        syncUps[index] = syncUp
        meetingCount += 1
        store.save(syncUps, urgent: true)
        publishUpdate(syncUp, change: "meeting.saved", meeting: WireFormat.meeting(meeting, includesTranscript: true))
        // Not "saved": the write is the store's, and a failure of it is logged after this line (attack 88).
        logger.info(
            "added a meeting to the history of \"\(syncUp.title)\"; writing sync-ups.json", .syncUp(syncUpID),
            .meeting(meeting.id))
        return true
    }

    /// Those of `meetings` that no sync-up holds any more: only their files may go. A sync-up copied by hand
    /// inside sync-ups.json holds the same meeting ids as the original, and so the same files.
    private func unheld(_ meetings: [Meeting.ID]) -> [Meeting.ID] {
        var candidates = Set(meetings)
        for syncUp in syncUps where !candidates.isEmpty {
            for meeting in syncUp.meetings { candidates.remove(meeting.id) }
        }
        return meetings.filter(candidates.contains)
    }

    /// A warning if a meeting id is held more than once (a sync-up copied by hand inside sync-ups.json, with
    /// its meetings): they share one set of files, which stay until no sync-up holds the meeting.
    func sharedMeetingsWarning() -> String? {
        var holders: [Meeting.ID: [Int]] = [:]
        for (index, syncUp) in syncUps.enumerated() {
            for meeting in syncUp.meetings { holders[meeting.id, default: []].append(index) }
        }
        let shared = holders.filter { $0.value.count > 1 }
        guard !shared.isEmpty else { return nil }
        let examples = shared.sorted { $0.key.description < $1.key.description }.prefix(3).map { id, indices in
            "\(id) (in " + indices.map { "\"\(syncUps[$0].title)\"" }.joined(separator: ", ") + ")"
        }
        let more = shared.count > examples.count ? " and \(shared.count - examples.count) more" : ""
        return
            "\(shared.count) meeting\(shared.count == 1 ? " is" : "s are") in more than one sync-up (copied by hand?): "
            + examples.joined(separator: ", ") + more
            + "; they share their files, which are kept until no sync-up holds the meeting"
    }

    /// Runs `action` once every change made so far is durable (fsync'd) in the file (`SyncUpStore.whenDurable`).
    func whenDurable(_ action: @escaping () -> Void) {
        store.whenDurable(action)
    }

    /// Writes any change still waiting for the throttle now.
    func flush() {
        if store.hasUnsavedChanges { store.save(syncUps, urgent: true) }
    }

    /// Adds a sync-up as it was (recovery recreating one that never reached the disk).
    func restore(_ syncUp: SyncUp) {
        syncUps.append(syncUp)
        meetingCount += syncUp.meetings.count
        ids.append(syncUp.id.description)
        store.save(syncUps, urgent: true)
        publish(.syncups, EventName.syncUpCreated, ["syncup": WireFormat.syncUp(syncUp, meetings: .summary)])
    }

    /// A write of the user's data failed (again): `persistence.failed` says what, unless it is a retry that
    /// failed the same way.
    func writeFailed(_ write: FailingWrites.Write, _ error: String) {
        publishChange(failingWrites.failed(write, error))
    }

    /// Writes worked, or are no longer wanted (a deleted meeting's): `persistence.recovered` once none fails.
    func writesWorked(_ writes: [FailingWrites.Write]) {
        publishChange(failingWrites.succeeded(writes))
    }

    private func publishChange(_ change: FailingWrites.Change) {
        switch change {
        case .failed(let error):
            publish(.daemon, EventName.persistenceFailed, ["error": .string(error)])
        case .recovered:
            logger.notice("writing the user's data works again")
            publish(.daemon, EventName.persistenceRecovered, [:])
        case .unchanged:
            break
        }
    }

    /// Publishes `daemon.warning` (and logs it): something was done to keep the user's data.
    func warn(_ message: String) {
        logger.warning(message)
        publish(.daemon, EventName.daemonWarning, ["message": .string(message)])
    }

    /// Another program rewrote `sync-ups.json`: its content is the state now.
    func replaceAll(with syncUps: [SyncUp]) {
        self.syncUps = syncUps
        ids = IDIndex(syncUps.map(\.id.description))
        meetingCount = syncUps.reduce(0) { $0 + $1.meetings.count }
        // A meeting being deleted that the new file names (a backup restored) is the user's again.
        session?.meetingsNamedAgain(syncUps.meetingIDs)
        if let session, let current = session.syncUpID {
            if let syncUp = syncUps.first(where: { $0.id == current }) {
                session.syncUpChanged(syncUp)
            } else {
                // Not a client's delete: a stale copy synced back, an editor. The recording is never lost to it.
                session.syncUpRemovedByOutsideEdit()
            }
        }
        // However large the new state, the event is one page (as in a snapshot): a client fetches the rest.
        publish(.syncups, EventName.syncUpsReloaded, .object(firstPage()))
        logger.notice("reloaded \(syncUps.count) sync-ups after another program changed \(dataDirectory.syncUpsFile)")
        if let warning = sharedMeetingsWarning() { warn(warning) }
    }

    /// The first page of sync-ups, as the `subscribe` snapshot and `syncups.reloaded` carry it:
    /// `{"syncups": [...], "total": N, "next": offset or null}`, within three quarters of `maxReplyBytes`.
    func firstPage() -> JSONObject {
        let page = Paging(offset: 0, limit: limits.maxPageSize)
        let (items, next) = page.take(syncUps, budget: limits.maxReplyBytes * 3 / 4) {
            WireFormat.syncUp($0, meetings: .summary)
        }
        var object = JSONObject()
        object.append("syncups", .array(items))
        object.append("total", .int(syncUps.count))
        object.append("next", next.map(JSONValue.int) ?? .null)
        return object
    }

    /// Publishes an event whose payload is built only if someone follows `topic`.
    private func publish(_ topic: Topic, _ name: String, _ data: @autoclosure () -> JSONValue) {
        publishEvent(topic, name, data)
    }

    /// `syncup.updated` with the sync-up (meetings as `{id, date}`), what changed, and for a saved meeting the
    /// whole meeting, for a deleted one its id.
    private func publishUpdate(
        _ syncUp: SyncUp, change: String, meeting: @autoclosure () -> JSONValue? = nil
    ) {
        publish(
            .syncups, EventName.syncUpUpdated,
            {
                var data = JSONObject()
                data.append("syncup", WireFormat.syncUp(syncUp, meetings: .summary))
                data.append("change", .string(change))
                if let meeting = meeting() { data.append("meeting", meeting) }
                return .object(data)
            }())
    }
}
