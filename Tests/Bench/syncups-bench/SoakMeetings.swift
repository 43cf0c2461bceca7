import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import Synchronization

/// Where the meeting controller tells the request clients which sync-up is being recorded and which
/// meeting was saved last, for their `syncups.get` and `meetings.get`.
final class MeetingBoard: Sendable {
    struct Reference: Sendable {
        var syncUp: String
        var meeting: String
    }

    private let state = Mutex<(current: Reference?, lastSaved: Reference?)>((nil, nil))

    var current: Reference? { state.withLock { $0.current } }
    var lastSaved: Reference? { state.withLock { $0.lastSaved } }

    func started(_ reference: Reference) { state.withLock { $0.current = reference } }

    func ended(saved: Reference?) {
        state.withLock {
            $0.current = nil
            if let saved { $0.lastSaved = saved }
        }
    }
}

/// Records meetings back to back, the way a team with a long day of stand-ups would: creates a sync-up of
/// three attendees, starts a session with audio and transcription, lets it end on its own when the time is
/// up, checks what was saved, and starts the next at once. Sync-ups older than the last two are deleted
/// (with their meetings and audio), so the daemon's data stays the same size and only a leak can make its
/// memory grow.
///
/// Its connection subscribes to the `session` topic, on top of the 20 subscribers of the soak.
struct MeetingController {
    /// Each meeting's length: 10 seconds per attendee.
    static let meetingSeconds = 30
    static let attendees = ["Ann", "Bob", "Cy"]

    struct Result: Sendable {
        var started = 0
        /// Seconds into the run when each meeting started.
        var startTimes: [Double] = []
        /// Saved when their time was up.
        var completed = 0
        var nonEmptyTranscripts = 0
        /// Transcripts equal to the sentences the microphone played.
        var exactTranscripts = 0
        /// Seconds of audio in each saved meeting's recording (`meetings.get`).
        var audioSeconds: [Double] = []
        /// Seconds from `session.start` to `session.ended`, for each completed meeting.
        var lengths: [Double] = []
        /// A meeting still running when the soak ended, discarded.
        var discardedAtEnd = 0
        /// `session.error` events: audio or speech trouble.
        var sessionErrors: [String] = []
        var failures: [String] = []
    }

    let socketPath: String
    /// When the load started: the zero of the times reported.
    let start: MonotonicInstant
    let board: MeetingBoard
    /// What the transcript of a meeting should be: the sentences of the microphone's audio.
    let expectedTranscript: String

    func run(until stop: () -> Bool) -> Result {
        var result = Result()
        let connection: LineConnection
        do {
            connection = try LineConnection(path: socketPath)
            let reply = try connection.request(#"{"cmd":"subscribe","args":{"topics":["session"],"snapshot":false}}"#)
            guard LineScan.isSuccess(reply) else { throw SoakFailure(String(decoding: reply, as: UTF8.self)) }
        } catch {
            result.failures.append("meeting controller: \(error)")
            return result
        }
        var kept: [String] = []
        var number = 0
        while !stop() {
            number += 1
            do {
                let syncUp = try create(number, on: connection)
                kept.append(syncUp)
                if kept.count > 2 {
                    let old = kept.removeFirst()
                    _ = try expectSuccess(
                        connection.request(#"{"cmd":"syncups.delete","args":{"id":"\#(old)"}}"#), "syncups.delete")
                }
                try record(syncUp, on: connection, into: &result, until: stop)
            } catch {
                result.failures.append("meeting \(number): \(error)")
                board.ended(saved: nil)
                // Whatever went wrong, do not spin: the next meeting starts a second later.
                sleep(until: MonotonicInstant.now() + .seconds(1))
            }
        }
        return result
    }

    private func create(_ number: Int, on connection: LineConnection) throws -> String {
        let names = Self.attendees.map { "\"\($0)\"" }.joined(separator: ",")
        let reply = try expectSuccess(
            connection.request(
                #"{"cmd":"syncups.create","args":{"title":"Soak meeting \#(number)","duration":\#(Self.meetingSeconds),"attendees":[\#(names)]}}"#
            ), "syncups.create")
        guard let id = reply["result"]?["id"]?.stringValue else { throw SoakFailure("syncups.create: no id") }
        return id
    }

    /// One meeting, from `session.start` to `session.ended`, then the checks of what was saved.
    private func record(
        _ syncUp: String, on connection: LineConnection, into result: inout Result, until stop: () -> Bool
    )
        throws
    {
        var ended: JSONValue?
        var errors: [String] = []
        let onEvent = { (line: [UInt8]) in
            switch LineScan.eventName(line) {
            case "session.ended": ended = try? JSONParser().parse(line)["data"]
            case "session.error":
                errors.append((try? JSONParser().parse(line)["data"]?["message"]?.stringValue) ?? "session.error")
            default: break
            }
        }
        let start = MonotonicInstant.now()
        let started = try expectSuccess(
            connection.request(
                #"{"cmd":"session.start","args":{"syncup":"\#(syncUp)","audio":true,"transcribe":true}}"#,
                onEvent: onEvent),
            "session.start")
        result.started += 1
        result.startTimes.append((start - self.start).seconds)
        let meeting = started["result"]?["meeting"]?.stringValue ?? ""
        board.started(MeetingBoard.Reference(syncUp: syncUp, meeting: meeting))
        if let warnings = started["result"]?["warnings"]?.arrayValue, !warnings.isEmpty {
            result.sessionErrors += warnings.compactMap(\.stringValue).map { "session.start warning: \($0)" }
        }

        // Its own time (plus the recognizer's last words) and a margin.
        let deadline = start + .seconds(Self.meetingSeconds + 40)
        var discarded = false
        while ended == nil {
            if stop() && !discarded {
                // The soak is over: end the meeting without saving it. After its time is up it may already be
                // saving (`invalid_state`) or have ended; either way `session.ended` follows.
                discarded = true
                _ = try connection.request(#"{"cmd":"session.end","args":{"action":"discard"}}"#, onEvent: onEvent)
                continue
            }
            guard MonotonicInstant.now() < deadline else {
                throw SoakFailure("no session.ended \(Self.meetingSeconds + 40) s after session.start")
            }
            if let line = try connection.readLine() { onEvent(line) }
        }
        result.sessionErrors += errors
        let outcome = ended?["outcome"]?.stringValue
        let saved = ended?["meeting"]
        board.ended(saved: saved == nil ? nil : MeetingBoard.Reference(syncUp: syncUp, meeting: meeting))
        if outcome == "discarded" && discarded {
            result.discardedAtEnd += 1
            return
        }
        guard outcome == "saved", ended?["reason"]?.stringValue == "time is up", let saved else {
            throw SoakFailure(
                "ended \(outcome ?? "?") (\(ended?["reason"]?.stringValue ?? "?")), not saved when time was up")
        }
        result.completed += 1
        result.lengths.append((MonotonicInstant.now() - start).seconds)
        let transcript = saved["transcript"]?.stringValue ?? ""
        if !transcript.isEmpty { result.nonEmptyTranscripts += 1 }
        if transcript == expectedTranscript { result.exactTranscripts += 1 }

        // What the history holds: the recording's length and the attributed transcript.
        let details = try expectSuccess(
            connection.request(
                #"{"cmd":"meetings.get","args":{"syncup":"\#(syncUp)","meeting":"\#(meeting)"}}"#, onEvent: onEvent),
            "meetings.get")
        result.audioSeconds.append(details["result"]?["audio"]?["seconds"]?.numberValue?.double ?? 0)
    }

    private func expectSuccess(_ reply: [UInt8], _ command: String) throws -> JSONValue {
        let value = try JSONParser().parse(reply)
        guard value["ok"] == true else {
            throw SoakFailure(
                "\(command): \(value["error"]?["code"]?.stringValue ?? "?"): \(value["error"]?["message"]?.stringValue ?? "")"
            )
        }
        return value
    }
}
