import FoundationEssentials
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsVoice

/// The attendees' voice profiles and the running meeting's speaker encoder, on the loop: loads the profiles
/// at start-up, learns from the floor while a meeting runs (each 1.6 s window that lies wholly in one turn
/// may teach that turn's holder, as `VoiceMatcher.teaches` rules), writes what a meeting taught when it ends
/// (on the clean-up thread), and forgets profiles on request or with their attendee.
///
/// What a meeting teaches is the meeting's: used at once (its later windows are matched with it) and written at
/// each change of floor, since a crash recovers the meeting (its journal) and so keeps what it taught up to
/// there; but a discarded meeting saves nothing, so its end (`end(_:keepsLearning:cleanup:)`) puts every
/// profile it taught back as it was before the meeting, and a file it created is removed.
final class VoiceService {
    /// The encoder's weights, or why there are none (the daemon then attributes by the floor alone).
    enum Model: Sendable {
        case loaded(VoiceModel, path: String)
        case unavailable(String)

        /// Reads the weights file at `path`; a missing or damaged one is a reason, never a failure to start.
        static func load(_ path: String?) -> Model {
            guard let path else { return .unavailable("voices off: no voice model configured") }
            BlockingWork.check("reading the voice model \(path)")
            do {
                let (fd, _) = try FileDescriptor.openRegularFile(path)
                defer { fd.close() }
                return .loaded(try VoiceModel(bytes: try fd.readToEnd(limit: 64 << 20)), path: path)
            } catch let error as SystemError where error.errno == .noSuchFile {
                return .unavailable(
                    "voices off: no voice model at \(path) (syncupsd-voice-model, or make voice-model in the source tree, installs it)"
                )
            } catch {
                return .unavailable("voices off: the voice model \(path) is unusable: \(error)")
            }
        }

        var status: String {
            switch self {
            case .loaded(_, let path): "on: \(VoiceModel.version) from \(path)"
            case .unavailable(let reason): reason
            }
        }
    }

    enum Message: Sendable {
        /// A window of the microphone (`nil`: a meeting without the call) or of one of a call meeting's channels.
        case window(VoiceWindow, VoiceChannel?, Meeting.ID)
        /// The meeting's encoder has embedded all its audio: what it taught can be written.
        case drained(Meeting.ID)
        /// The model read again (SIGHUP), off the loop.
        case model(Model)
        /// A removal on the writer thread left these attendees' files in place (tried again at each forget).
        case unremoved(Set<Attendee.ID>)
        /// A profile set aside was moved back on the writer thread: its person is in a sync-up again.
        case broughtBack(Attendee.ID, VoiceProfile)
    }

    /// One meeting's listening: its encoder and the turns its windows are learned against.
    private struct Listening {
        var meeting: Meeting.ID
        var listener: VoiceListener
        /// The meeting's attendees now (its live roster: one added mid-meeting is matched from the next
        /// window): the only voices its windows are matched against or teach.
        var attendees: () -> [Attendee]
        var turns: () -> [SpeakerTurn]
        /// The holder of the turn the last window taught: when it changes, what the turn taught is written.
        var lastHolder: Attendee.ID?
        /// Where the encoder is joined once the meeting's audio ended.
        var cleanup: SerialWorker?
        /// A call meeting's attendees in the room and on the call, and what each may learn from.
        var call = CallLearning()
        /// Windows of the microphone found to be the call's echo, not heard.
        var echoWindows = 0
        /// Attendees forgotten (or removed) during the meeting, with the frame the audio had reached then: a
        /// window of earlier audio, embedded late, never teaches them again.
        var forgottenBefore: [Attendee.ID: Int] = [:]
        /// What each attendee this meeting's windows reached had before it (their profile and the windows kept
        /// aside for a changed voice): what a discard puts back.
        var before: [Attendee.ID: Prior] = [:]
        /// False once the meeting is discarded: its windows still being embedded teach nothing.
        var keepsLearning = true
    }

    /// An attendee's learning before a meeting.
    private struct Prior {
        var profile: VoiceProfile?
        var change: VoiceChange?
    }

    let store: VoiceProfileStore
    let logger: Logger
    let wallClock: WallClock
    let mailbox: Mailbox<Message>
    let loop: EventLoop
    /// Writes profiles off the loop, one write at a time, and removes forgotten ones in order with the writes;
    /// a failed write is retried with the user's files' back-off (`StoreRetry`).
    let writer: RetryingFileWriter
    /// Profiles learned (or relearned) since their last successful write.
    private(set) var unsaved: Set<Attendee.ID> = []
    /// Why the last write failed, until one succeeds (for `voices` and `status.persistence`).
    var writeError: String? { writer.lastError }
    var matcher = VoiceMatcher()
    var model: Model
    /// Counts the changes of `model`'s status (SIGHUP read it again): `status` says it anew.
    private(set) var modelGeneration = 0
    /// Where a voice matched with confidence goes: the session, which attributes speech by it.
    var onEvidence: (VoiceEvidence, Meeting.ID) -> Void = { _, _ in }
    private(set) var profiles: [Attendee.ID: VoiceProfile]
    private var listening: [Meeting.ID: Listening] = [:]
    /// Windows of holders whose mature profile stopped matching them, kept aside until they show the voice
    /// changed (`VoiceMatcher.learn`), by attendee id; in memory only: a restart starts the evidence anew.
    private var changes: [String: VoiceChange] = [:]
    /// Windows of speech learned, and dropped for want of time, since start-up (for `voices`).
    private(set) var learnedWindows = 0
    /// Forgotten attendees whose files could not be removed: a failed write of the voice profiles, tried again
    /// by `writer` with its back-off until they go (or the attendee has a profile again).
    private(set) var unremoved: Set<Attendee.ID> = []
    /// Attendees whose profiles are set aside (`VoiceProfileStore.asideDirectory`): no sync-up named them.
    private(set) var aside: Set<Attendee.ID>
    /// Attendees whose set-aside profiles are being moved back; a forget meanwhile takes them out.
    private var comingBack: Set<Attendee.ID> = []

    init(
        loop: EventLoop, directory: DataDirectory, model: Model, logger: Logger, wallClock: WallClock,
        fileSystem: FileSystem = .live
    ) throws(SystemError) {
        store = VoiceProfileStore(dataDirectory: directory, fileSystem: fileSystem)
        self.loop = loop
        writer = RetryingFileWriter(loop: loop, threadName: "voice-writer", writing: "voice profiles", logger: logger)
        self.logger = logger
        self.wallClock = wallClock
        self.model = model
        let loaded = store.loadAll()
        for warning in loaded.warnings { logger.warning(warning) }
        profiles = loaded.profiles
        aside = store.asideAttendees()
        let mailbox = try Mailbox<Message>()
        self.mailbox = mailbox
        _ = try mailbox.attach(to: loop) { [unowned self] messages in
            for message in messages { receive(message) }
        }
        writer.prepare = { [unowned self] in nextWrite() }
    }

    /// Starts the meeting's encoder if there is a model; returns it for the audio relay to feed. On the loop,
    /// at the meeting's start: nothing here waits (the model was read at start-up or on SIGHUP, off the loop;
    /// the encoder is made on its own thread; this makes an eventfd and starts that thread),
    /// `VoiceListenerStartTests`.
    func begin(
        _ meeting: Meeting.ID, attendees: @escaping () -> [Attendee], turns: @escaping () -> [SpeakerTurn]
    ) -> VoiceListener? {
        guard case .loaded(let voiceModel, _) = model else { return nil }
        do {
            let listener = try VoiceListener(model: voiceModel) { [mailbox] window, channel in
                mailbox.post(.window(window, channel, meeting))
            }
            listening[meeting] = Listening(meeting: meeting, listener: listener, attendees: attendees, turns: turns)
            return listener
        } catch {
            logger.warning("voices: cannot start the speaker encoder: \(error); attributing by the floor alone")
            return nil
        }
    }

    /// The meeting's audio has ended: its encoder finishes on `cleanup`, then its profiles are written. A
    /// meeting discarded (`keepsLearning` false) taught nothing: its profiles are put back at once.
    func end(_ meeting: Meeting.ID, keepsLearning: Bool = true, cleanup: SerialWorker) {
        guard let listener = listening[meeting]?.listener else { return }
        if !keepsLearning { dropLearning(of: meeting) }
        listening[meeting]?.cleanup = cleanup
        cleanup.run { [mailbox] in
            listener.finishAndJoin()
            mailbox.post(.drained(meeting))
        }
    }

    private static func traceLine(
        _ window: VoiceWindow, channel: VoiceChannel, start: Double, end: Double, _ outcome: String
    ) -> String {
        let span = "\((start * 100).rounded() / 100)-\((end * 100).rounded() / 100) s"
        let level = window.level.isFinite ? "\(Int(window.level.rounded()))" : "-inf"
        let similarity = window.echoSimilarity.map { ", following the call \(($0 * 100).rounded() / 100)" } ?? ""
        return "voices: \(channel) window \(span) (\(level) dBFS\(similarity)): \(outcome)"
    }

    private func receive(_ message: Message) {
        switch message {
        case .window(let window, let channel, let meeting):
            if window.echo { self.listening[meeting]?.echoWindows += 1 }
            let rate = Double(MelFrontend.sampleRate)
            let start = Double(window.start) / rate
            let end = Double(window.start + window.count) / rate
            // A call meeting's windows, each with what became of it: why a profile learned what it did.
            // Built only when debug messages are logged.
            func trace(_ outcome: String) {
                guard let channel else { return }
                logger.debug(
                    Self.traceLine(window, channel: channel, start: start, end: end, outcome), .meeting(meeting))
            }
            guard let embedding = window.embedding, let listening = listening[meeting] else {
                return trace(window.echo ? "the call's echo" : "silence")
            }
            guard listening.keepsLearning else { return trace("the meeting was discarded") }
            let turns = listening.turns()
            let attendees = listening.attendees()
            var keyed: [String: VoiceProfile] = [:]
            for attendee in attendees { keyed[attendee.id.description] = profiles[attendee.id] }
            // Attributed first, with what was known before this window.
            let middle = (start + end) / 2
            let floor = turns.last { $0.start <= middle }?.speaker.id.description
            let decision =
                if let channel {
                    matcher.decide(embedding, on: channel, sides: listening.call.sides, floor: floor, keyed)
                } else {
                    matcher.decide(embedding, floor: floor, keyed)
                }
            if case .voice(let id, let confidence) = decision,
                let speaker = attendees.first(where: { $0.id.description == id })
            {
                onEvidence(
                    VoiceEvidence(speaker: speaker, start: start, end: end, confidence: Double(confidence)), meeting)
            }
            // Only a window within one turn teaches: one straddling a change of floor is two people's.
            guard let turn = turns.last(where: { $0.start <= start }), (turn.end ?? .infinity) >= end else {
                return trace("straddles a change of floor")
            }
            let holder = turn.speaker.id
            // Not someone forgotten since this audio was heard, nor someone who left the meeting.
            guard window.start >= listening.forgottenBefore[holder] ?? 0, attendees.contains(where: { $0.id == holder })
            else { return trace("\(holder) was forgotten since, or left the meeting") }
            let seconds = Double(window.count) / rate
            // A turn's end (another holder teaching) writes what the turn taught: a crash loses one turn at most.
            if let last = listening.lastHolder, last != holder { write() }
            guard let channel else {
                teach(embedding, seconds: seconds, holder: holder, in: meeting, &keyed)
                return
            }
            // A call meeting: the holder learns only from their own side's channel, once it is known, and
            // against the voices of that side alone (a remote voice is not a local one's to block).
            guard
                let learnable = self.listening[meeting]?.call.heard(
                    embedding, seconds: seconds, on: channel, holder: holder.description),
                let sides = self.listening[meeting]?.call.sides
            else { return }
            var candidates = sides.candidates(on: channel, keyed)
            var taught = 0
            for heard in learnable {
                taught +=
                    teach(heard.embedding, seconds: heard.seconds, holder: holder, in: meeting, &candidates) ? 1 : 0
            }
            let side = sides.side(of: holder.description).map { "\($0)" } ?? "not known yet"
            trace("in \(holder)'s turn (their side: \(side)), taught \(taught) of \(learnable.count) windows")
        case .drained(let meeting):
            guard let finished = listening.removeValue(forKey: meeting) else { return }
            let dropped = finished.listener.dropped.load(ordering: .relaxed)
            if dropped > 0 {
                logger.warning("voices: the speaker encoder fell behind and skipped \(dropped) chunks of 0.1 s")
            }
            if finished.echoWindows > 0 {
                logger.info(
                    "voices: \(finished.echoWindows) windows of the microphone were the call's echo, not a voice",
                    .meeting(meeting))
            }
            write()
        case .unremoved(let ids):
            unremoved.formUnion(ids)
            write()
        case .broughtBack(let id, let profile):
            // Forgotten meanwhile (its file then went after the move), or learned anew (the one to keep).
            guard comingBack.remove(id) != nil, profiles[id] == nil else { return }
            profiles[id] = profile
        case .model(let new):
            let changed = new.status != model.status
            model = new
            guard changed else { return }
            modelGeneration += 1
            logger.notice("SIGHUP: \(new.status)\(listening.isEmpty ? "" : " (from the next meeting)")")
        }
    }

    /// Reads the model at `path` again (SIGHUP), off the loop: voices turn on when `make voice-model` installed
    /// it while the daemon ran, or off when it was removed. A running meeting keeps the encoder it started with.
    func reloadModel(from path: String?) {
        writer.run { [mailbox] in mailbox.post(.model(Model.load(path))) }
    }

    /// Teaches `holder`'s profile a window of their turn if `VoiceMatcher.learn` takes it; returns whether it did.
    @discardableResult
    private func teach(
        _ embedding: [Float], seconds: Double, holder: Attendee.ID, in meeting: Meeting.ID,
        _ keyed: inout [String: VoiceProfile]
    ) -> Bool {
        let now = Int64(wallClock().timeIntervalSince1970)
        let before = keyed[holder.description]?.seconds ?? 0
        if listening[meeting]?.before.keys.contains(holder) == false {
            listening[meeting]?.before[holder] = Prior(profile: profiles[holder], change: changes[holder.description])
        }
        guard
            matcher.learn(
                embedding, seconds: seconds, holder: holder.description, meeting: meeting.description, at: now,
                into: &keyed, changes: &changes)
        else { return false }
        // Not one window more: relearned from the windows kept aside since it stopped matching its holder.
        if let after = keyed[holder.description]?.seconds, abs(after - before - seconds) > 1e-6 {
            logger.notice(
                "voices: \(holder)'s voice changed: their profile is relearned from \(after) s of it", .meeting(meeting)
            )
        }
        record(keyed[holder.description], for: holder)
        listening[meeting]?.lastHolder = holder
        learnedWindows += 1
        return true
    }

    /// A profile learned: kept, and written at the next turn's end or the meeting's.
    func record(_ profile: VoiceProfile?, for attendee: Attendee.ID) {
        profiles[attendee] = profile
        unsaved.insert(attendee)
    }

    /// A discarded meeting's learning dropped: each profile it taught is put back as it was before the meeting
    /// (written again, or its file removed if the meeting created it), and so are the windows kept aside.
    private func dropLearning(of meeting: Meeting.ID) {
        guard let taught = listening[meeting]?.before else { return }
        listening[meeting]?.before = [:]
        listening[meeting]?.keepsLearning = false
        var created: Set<Attendee.ID> = []
        var restored = 0
        for (id, prior) in taught {
            changes[id.description] = prior.change
            guard profiles[id] != prior.profile else { continue }
            profiles[id] = prior.profile
            if prior.profile == nil {
                unsaved.remove(id)
                created.insert(id)
            } else {
                unsaved.insert(id)
                restored += 1
            }
        }
        guard restored + created.count > 0 else { return }
        logger.notice(
            "voices: the meeting was discarded: \(restored + created.count) profiles it taught are as they were before it",
            .meeting(meeting))
        if restored > 0 { write() }
        if !created.isEmpty { remove(created) }
    }

    /// Writes the unsaved profiles on the writer thread (one write at a time; a failure is logged, reported
    /// by `voices` and `status.persistence` and retried, the profiles kept in memory until it works).
    func write() {
        writer.changed()
    }

    /// The write of the profiles unsaved now, and the removals that failed before, for `writer`.
    private func nextWrite() -> RetryingFileWriter.Write? {
        let batch = Dictionary(uniqueKeysWithValues: unsaved.compactMap { id in profiles[id].map { (id, $0) } })
        unsaved = Set(batch.keys)
        // Someone who learned a profile again keeps it: their old files are its to replace.
        unremoved.subtract(profiles.keys)
        let removals = unremoved
        guard !batch.isEmpty || !removals.isEmpty else { return nil }
        let (store, logger) = (store, logger)
        return RetryingFileWriter.Write(
            run: {
                var reason: String?
                if !removals.isEmpty, let left = Self.remove(removals, from: store, logger: logger) {
                    reason = "cannot remove the voice profiles of \(left.ids.count) attendees: \(left.error)"
                }
                for (attendee, profile) in batch.sorted(by: { $0.key.description < $1.key.description }) {
                    do { try store.save(profile, for: attendee) } catch {
                        reason = reason ?? "cannot write the voice profile \(store.path(of: attendee)): \(error)"
                    }
                }
                return reason
            },
            written: { [unowned self] in
                unremoved.subtract(removals)
                for (id, profile) in batch where profiles[id] == profile { unsaved.remove(id) }
            })
    }

    /// The daemon is stopping (the loop no longer runs): the write under way ends, then what is still unsaved
    /// is written here, so a stop right after a meeting keeps what it taught.
    func shutDown() {
        writer.close()
        for id in unsaved.sorted(by: { $0.description < $1.description }) {
            guard let profile = profiles[id] else { continue }
            do { try store.save(profile, for: id) } catch {
                logger.error("voices: cannot write the profile of \(id) before stopping: \(error)")
            }
        }
        unsaved = []
    }

    /// Forgets the attendees' profiles: at once in memory (no later write includes them), and on disk on the
    /// writer thread, after the write under way (which could otherwise bring a removed file back). `done` is
    /// called there with the removal's failure: a file that cannot be removed is logged, reported to `done`
    /// (a `voices.forget` fails with it) and tried again at the next forget, so a profile said to be forgotten
    /// is gone.
    func forget(_ attendees: some Sequence<Attendee.ID>, done: @escaping @Sendable (SystemError?) -> Void = { _ in }) {
        let ids = Set(attendees)
        drop(ids)
        aside.subtract(ids)
        comingBack.subtract(ids)
        remove(ids, done: done)
    }

    /// Sets aside the profiles of people no sync-up names (`VoiceProfileStore.setAside`, on the writer thread
    /// after what is queued there, such as the profiles brought back first) and waits for it: for the start-up
    /// sweep, before the daemon serves. Those set aside are gone from memory as a forgotten profile, kept on disk
    /// for `bringBack`; the others (a full disk) stay in memory and in `voices/`. Returns those set aside and
    /// the failure, if any.
    func setAside(_ attendees: some Sequence<Attendee.ID>) -> (moved: Set<Attendee.ID>, failure: String?) {
        let ids = Set(attendees)
        let (store, logger, now) = (store, logger, wallClock())
        guard let done = try? BlockingQueue<(Set<Attendee.ID>, String?)>(capacity: 1) else {
            return ([], "cannot wait for the voices' writer")
        }
        writer.run {
            var failure: String?
            do {
                for id in try store.setAside(ids, at: now) {
                    logger.notice(
                        "voices: deleted the profile of \(id), set aside longest of more than \(VoiceProfileStore.maximumAside) "
                            + "for more than \(VoiceProfileStore.asideGrace.components.seconds / 86_400) days")
                }
            } catch {
                failure = "\(error)"
            }
            _ = done.push((ids.filter { store.fileSystem.identity(store.path(of: $0)) == nil }, failure))
        }
        let (moved, failure) = done.pop() ?? ([], "the voices' writer stopped")
        drop(moved)
        aside.formUnion(moved)
        return (moved, failure)
    }

    /// The people of `roster` whose profiles are set aside get them back (on the writer thread, then in memory):
    /// a sync-up restored with them (an outside edit, or the next start) finds their voices again.
    func bringBack(_ roster: some Sequence<Attendee.ID>) {
        let ids = Set(roster).intersection(aside).filter { profiles[$0] == nil }
        guard !ids.isEmpty else { return }
        aside.subtract(ids)
        comingBack.formUnion(ids)
        let (store, logger, mailbox) = (store, logger, mailbox)
        writer.run {
            for id in ids.sorted(by: { $0.description < $1.description }) {
                switch store.bringBack(id) {
                case .success(let profile?):
                    logger.notice("voices: brought back the profile of \(id), who is in a sync-up again")
                    mailbox.post(.broughtBack(id, profile))
                case .success(nil): break
                case .failure(let warning): logger.warning(warning.message)
                }
            }
        }
    }

    /// Drops the attendees' profiles from memory: no later write includes them, and no meeting still running
    /// learns them again from earlier audio or puts them back at a discard.
    private func drop(_ ids: Set<Attendee.ID>) {
        for id in ids {
            profiles[id] = nil
            changes[id.description] = nil
            unsaved.remove(id)
            for (meeting, heard) in listening.mapValues({ $0.listener.heardUpTo.load(ordering: .relaxed) }) {
                listening[meeting]?.forgottenBefore[id] = heard
                listening[meeting]?.before[id] = nil  // a discard never brings a forgotten profile back
            }
        }
    }

    /// Removes the attendees' files on the writer thread, after the write under way; `done` is called there
    /// with the failure, and what stays is the writer's to retry (`unremoved`).
    private func remove(_ ids: Set<Attendee.ID>, done: @escaping @Sendable (SystemError?) -> Void = { _ in }) {
        let (store, logger, mailbox) = (store, logger, mailbox)
        writer.run {
            guard let left = Self.remove(ids, from: store, logger: logger) else { return done(nil) }
            mailbox.post(.unremoved(left.ids))
            done(left.error)
        }
    }

    /// Removes the attendees' files (on the writer thread); returns those left and why, if any are.
    private static func remove(
        _ ids: Set<Attendee.ID>, from store: VoiceProfileStore, logger: Logger
    ) -> (ids: Set<Attendee.ID>, error: SystemError)? {
        do { try store.remove(ids) } catch {
            let left = ids.filter { id in
                [store.path(of: id), store.path(of: id) + ".bad"].contains { FileIdentity(path: $0) != nil }
            }
            logger.error("voices: cannot remove the profile files of \(left.count) attendees: \(error)")
            return (left, error)
        }
        return nil
    }

    /// `voices`: what is known per attendee of every sync-up.
    func json(_ syncUps: [SyncUp]) -> JSONValue {
        var attendees: [JSONValue] = []
        for syncUp in syncUps {
            for attendee in syncUp.attendees {
                let profile = profiles[attendee.id]
                attendees.append([
                    "id": .string(attendee.id.description),
                    "name": .string(attendee.name),
                    "syncup": ["id": .string(syncUp.id.description), "title": .string(syncUp.title)],
                    "seconds": .double(((profile?.seconds ?? 0) * 10).rounded() / 10),
                    "updated": profile.map {
                        .string(UTCTime(Date(timeIntervalSince1970: Double($0.updated))).rfc3339)
                    } ?? .null,
                ])
            }
        }
        return [
            "model": .string(model.status), "attendees": .array(attendees),
            "learning": .bool(!listening.isEmpty), "unsaved": .int(unsaved.count),
            "writeError": writeError.map { .string($0) } ?? .null,
        ]
    }
}
