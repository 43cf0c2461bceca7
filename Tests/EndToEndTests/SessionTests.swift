import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Recording sessions through the socket, with real ALSA (file plugin) standing in for the microphone.
@Suite struct SessionTests {
    /// A daemon whose microphone and cue device are ALSA test plugins.
    func daemon(_ alsa: ALSAFixture, _ extra: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(
            arguments: ["--audio-device", "virtmic", "--cue-device", "sink"] + extra, environment: alsa.environment)
    }

    func createSyncUp(_ client: RawClient, seconds: Int = 6, attendees: [String] = ["Blob", "Blob Jr", "Blob Sr"])
        throws -> String
    {
        let created = try client.result(
            "syncups.create",
            ["title": "Design", "duration": .int(seconds), "attendees": .array(attendees.map(JSONValue.string))]
        )
        return try #require(created["id"]?.stringValue)
    }

    /// The app's own `timer` test, end to end: 3 attendees, 6 seconds.
    @Test func runsTheAppsSixSecondMeetingAndSavesIt() throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.pattern(seconds: 30))
        let daemon = try daemon(alsa)
        let client = try daemon.client()
        let id = try createSyncUp(client)
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["session", "syncups"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        #expect(started["state"] == "running")
        #expect(started["secondsElapsed"] == 0)
        #expect(started["speaker"]?["name"] == "Blob")
        #expect(started["audio"]?["recording"] == true)

        var ticks: [(speaker: Int64, elapsed: Int64)] = []
        var speakers: [String] = []
        var saved: JSONValue?
        var lastSeq: Int64 = 0
        while saved == nil {
            let event = try watcher.readJSON(timeout: .seconds(15))
            let seq = try #require(event["seq"]?.numberValue?.int64)
            #expect(seq > lastSeq)
            lastSeq = seq
            let session = event["data"]?["session"]
            switch event["event"]?.stringValue {
            case "session.tick":
                ticks.append(
                    (session!["speakerIndex"]!.numberValue!.int64!, session!["secondsElapsed"]!.numberValue!.int64!))
            case "session.speaker":
                speakers.append(session?["speaker"]?["name"]?.stringValue ?? "")
            case "session.ended":
                #expect(event["data"]?["outcome"] == "saved")
                #expect(event["data"]?["reason"] == "time is up")
                saved = event["data"]?["meeting"]
            default: break
            }
        }
        #expect(ticks.map(\.speaker) == [0, 1, 1, 2, 2, 2])
        #expect(ticks.map(\.elapsed) == [1, 2, 3, 4, 5, 6])
        #expect(speakers == ["Blob Jr", "Blob Sr"])
        let meetingID = try #require(saved?["id"]?.stringValue)
        #expect(saved?["date"] == started["startedAt"])

        let syncUp = try client.result("syncups.get", ["id": .string(id)])
        #expect(syncUp["meetings"]?[0]?["id"]?.stringValue == meetingID)
        let meeting = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        #expect(meeting["interrupted"] == false)
        let seconds = try #require(meeting["audio"]?["seconds"]?.numberValue?.double)
        #expect(seconds >= 6 && seconds < 7.5)

        // Two speaker changes, two cues, byte for byte; none at the end.
        let cue = try #require(CueBytes.one)
        #expect(try waitFor { Files.read(alsa.playedPath)?.count == 2 * cue.count })
        #expect(Files.read(alsa.playedPath) == cue + cue)
        #expect(try client.result("session.get") == .null)
    }

    /// A meeting of one attendee, `seconds` long, started (no cue, no transcript) with `audio` fed to the
    /// microphone in real time: the fixture, the daemon, the feeder (to stop), the client and the meeting's id.
    func pacedMeeting(_ audio: [UInt8], seconds: Int) throws
        -> (ALSAFixture, DaemonProcess, PacedFeeder, RawClient, String)
    {
        let alsa = try ALSAFixture(paced: true)
        let daemon = try daemon(alsa, ["--no-cue"])
        let feeder = try PacedFeeder(fifo: alsa.microphonePath, audio: audio)
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: seconds, attendees: ["Solo"])
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        return (alsa, daemon, feeder, client, try #require(started["meeting"]?.stringValue))
    }

    @Test func recordsWhatTheMicrophoneHeardByteForByte() throws {
        let audio = SpeechFixture.pattern(seconds: 20)
        let (_, daemon, feeder, client, meetingID) = try pacedMeeting(audio, seconds: 3)
        defer { feeder.stop() }
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.nextEvent("session.ended")
        let wav = try #require(Files.read(daemon.dataPath + "/meetings/\(meetingID).wav"))
        let data = Array(wav[44...])
        #expect(data.count >= 3 * 32_000 - 3200 && data.count <= 4 * 32_000)
        #expect(data == Array(audio.prefix(data.count)), "every frame fed, in order, none dropped or repeated")
    }

    @Test func pausesResumesMovesOnAndEndsThroughSyncupsctl() throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.pattern(seconds: 60))
        let daemon = try daemon(alsa)
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600)
        #expect(try daemon.ctl(["next"]).exitCode == 65)
        #expect(try daemon.ctl(["next"]).standardError.contains("no_session"))
        let start = try daemon.ctl(["start", String(id.prefix(6)), "--no-transcribe"])
        #expect(start.exitCode == 0)
        #expect(start.standardOutput.hasPrefix("recording \"Design\" 00:00 · Blob 1/3"))
        #expect(try daemon.ctl(["start", id, "--no-transcribe"]).standardError.contains("session_active"))
        #expect(try daemon.ctl(["pause"]).standardOutput.hasPrefix("paused \"Design\""))
        #expect(try daemon.ctl(["pause"]).standardError.contains("invalid_state: the meeting is already paused"))
        #expect(try daemon.ctl(["next"]).standardOutput == "paused \"Design\" 03:20 · Blob Jr 2/3\n")
        #expect(try daemon.ctl(["resume"]).standardOutput.hasPrefix("recording \"Design\" 03:20 · Blob Jr 2/3"))
        _ = try daemon.ctl(["next"])
        // The clock runs again since the resume: 06:40 plus the seconds a loaded machine took.
        let ending = try daemon.ctl(["next"]).standardOutput
        #expect(ending.hasPrefix("ending \"Design\" 06:4") && ending.contains(" · Blob Sr 3/3"), "\(ending)")
        let session = try daemon.ctl(["session"])
        #expect(session.standardOutput.contains("audio:      recording from virtmic"))
        #expect(try daemon.ctl(["end", "--save"]).exitCode == 0)
        #expect(try waitFor { try client.result("syncups.get", ["id": .string(id)])["meetingsTotal"] == 1 })
        #expect(try daemon.ctl(["session"]).standardOutput == "no meeting is being recorded\n")
    }

    @Test func discardsTheMeetingAndItsAudio() throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.pattern(seconds: 60))
        let daemon = try daemon(alsa)
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600)
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        #expect(try waitFor { Files.exists(daemon.dataPath + "/meetings/\(meetingID).wav") })
        let ended = try client.request("session.end", ["action": "discard"])
        #expect(ended["ok"] == true)
        #expect(try waitFor { !Files.exists(daemon.dataPath + "/meetings/\(meetingID).wav") })
        #expect(try client.result("syncups.get", ["id": .string(id)])["meetingsTotal"] == 0)
    }

    @Test func startsWithoutAudioWhenTheMicrophoneCannotBeOpened() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "no_such_device", "--no-cue"])
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let reply = try client.request("session.start", ["syncup": .string(id), "transcribe": false])
        let started = try #require(reply["result"])
        #expect(started["audio"]?["recording"] == false)
        let warning = try #require(started["warnings"]?[0]?.stringValue)
        #expect(
            warning
                == "recording without audio: cannot open the microphone: snd_pcm_open(no_such_device): No such file or directory"
        )
        #expect(try client.nextEvent("session.error")["data"]?["message"]?.stringValue == warning)
        #expect(try client.result("session.pause")["state"] == "paused")
    }

    @Test func appliesEditsAndEndsTheSessionWhenItsSyncUpIsDeleted() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600)
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try daemon.client().result("syncups.update", ["id": .string(id), "duration": 900, "title": "Renamed"])
        var event = try client.nextEvent("session.updated")
        #expect(event["data"]?["session"]?["duration"] == 900)
        #expect(event["data"]?["session"]?["title"] == "Renamed")
        _ = try daemon.client().result("syncups.delete", ["id": .string(id)])
        event = try client.nextEvent("session.ended")
        #expect(event["data"]?["outcome"] == "discarded")
        #expect(event["data"]?["reason"] == "the sync-up was deleted")
        #expect(try client.result("session.get") == .null)
    }

    @Test func recoversAMeetingInterruptedByACrash() throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.pattern(seconds: 60))
        let first = try daemon(alsa, ["--no-cue"])
        let client = try first.client()
        let id = try createSyncUp(client, seconds: 600)
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        while try client.nextEvent("session.tick")["data"]?["session"]?["secondsElapsed"] != 2 {}
        #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))
        #expect(Files.exists(first.dataPath + "/meetings/\(meetingID).recording.json"))

        let second = try DaemonProcess(
            arguments: ["--audio-device", "virtmic", "--no-cue"], environment: alsa.environment,
            directory: first.directory)
        let again = try second.client()
        let meeting = try again.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        #expect(meeting["interrupted"] == true)
        // Killed mid-turn: when that turn ended is not known, so there are no insights rather than made-up ones.
        #expect(meeting["insights"] == .null)
        let shown = try second.ctl(["meeting", id, meetingID]).standardOutput
        #expect(shown.contains("\nno insights: this meeting was saved without its turns\n"), "\(shown)")
        #expect(meeting["date"] == started["startedAt"])
        let seconds = try #require(meeting["audio"]?["seconds"]?.numberValue?.double)
        #expect(seconds >= 1.5)
        // The WAV header was repaired: it describes exactly the samples in the file.
        let wav = try #require(Files.read(second.dataPath + "/meetings/\(meetingID).wav"))
        let dataSize = wav[40..<44].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        #expect(Int(dataSize) == wav.count - 44)
        // Removed once the recovered meeting is written to sync-ups.json, not before.
        #expect(try waitFor { !Files.exists(second.dataPath + "/meetings/\(meetingID).recording.json") })
        let status = try again.result("status")
        #expect(
            status["persistence"]?["warnings"]?[0]?.stringValue?.hasPrefix(
                "recovered a meeting of \"Design\" interrupted by a crash") == true)
        #expect(
            try again.ctl(second, ["meeting", id, meetingID]).standardOutput.contains(
                "(recovered after the daemon stopped mid-meeting)"))
    }

    @Test func savesTheRunningMeetingOnACleanStop() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600)
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        let stopping = MonotonicInstant.now()
        let stopped = daemon.stop()
        #expect(stopped == .exited(0), "stopped after \(MonotonicInstant.now() - stopping):\n\(daemon.log.contents)")
        let meetingID = try #require(started["meeting"]?.stringValue)
        let file = try #require(Files.readString(daemon.dataPath + "/sync-ups.json"))
        #expect(file.contains(meetingID))
        #expect(
            Files.readString(daemon.dataPath + "/meetings/\(meetingID).json")?.contains(#""interrupted" : true"#)
                == true)
        #expect(!Files.exists(daemon.dataPath + "/meetings/\(meetingID).recording.json"))
    }

    /// SIGTERM while the microphone's open hangs (ALSA's `file` plugin on a FIFO nobody writes: the open waits
    /// for a writer): the starting meeting is discarded and the daemon exits without waiting for the open,
    /// which holds nothing of the user's (a meeting's audio file is made once its device is open) and ends with
    /// the process. Before, the stop waited the clean-up's whole bound (10 s) for it, then said it gave up.
    @Test func aSIGTERMDoesNotWaitForACaptureDeviceWhoseOpenHangs() throws {
        let alsa = try ALSAFixture(paced: true)  // no feeder: nobody ever opens the FIFO for writing
        let daemon = try daemon(alsa, ["--no-cue"])
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600, attendees: ["Solo"])
        try client.send(
            #"{"id":"start","cmd":"session.start","args":{"syncup":"\#(id)","transcribe":false}}"# + "\n")
        #expect(daemon.log.wait { $0.contains("opening the capture device virtmic") }, "\(daemon.log.contents)")
        #expect(daemon.stop() == .exited(0))
        let log = daemon.log.contents
        #expect(log.contains("not waiting for a capture device's open that has not returned"), "\(log)")
        #expect(!log.contains("stopping without waiting any longer"), "the stop waited for the open:\n\(log)")
        #expect(Files.list(daemon.dataPath + "/meetings").isEmpty, "\(Files.list(daemon.dataPath + "/meetings"))")
    }

    /// ...while a meeting whose microphone did open has its recording stopped and its file completed by the
    /// stop: every frame captured until then, in order, and a header that says so. The SIGTERM comes while the
    /// file holds audio written after its header's last update (patched once a second), so only the stop's
    /// completion makes the two agree.
    @Test func aSIGTERMMidMeetingCompletesTheAudioFileOfAnOpenedDevice() throws {
        let audio = SpeechFixture.pattern(seconds: 60)
        let (_, daemon, feeder, _, meetingID) = try pacedMeeting(audio, seconds: 600)
        defer { feeder.stop() }
        let path = daemon.dataPath + "/meetings/\(meetingID).wav"
        func declaredAndWritten() -> (declared: Int, written: Int)? {
            guard let wav = Files.read(path), wav.count >= 44 else { return nil }
            let declared = wav[40..<44].reversed().reduce(0) { $0 << 8 | Int($1) }
            return (declared, wav.count - 44)
        }
        #expect(
            try waitFor { declaredAndWritten().map { $0.declared > 0 && $0.written > $0.declared } == true },
            "no audio past the header's last update")
        #expect(daemon.stop() == .exited(0))
        let log = daemon.log.contents
        #expect(!log.contains("not waiting for a capture device's open"), "\(log)")
        #expect(!log.contains("stopping without waiting any longer"), "\(log)")
        let (declared, written) = try #require(declaredAndWritten())
        #expect(declared == written, "the header says \(declared) bytes of \(written)")
        let data = Array(try #require(Files.read(path))[44...])
        #expect(data == Array(audio.prefix(data.count)), "every frame captured, in order")
        let details = Files.readString(daemon.dataPath + "/meetings/\(meetingID).json")
        #expect(details?.contains(#""interrupted" : true"#) == true, "\(details ?? "no details")")
    }

    /// A meeting saved just before the daemon stops: its details, written off the event loop, are finished
    /// before the process exits, and its journal goes only after that.
    @Test func finishesWritingAMeetingSavedJustBeforeAStop() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"])
        let client = try daemon.client()
        let id = try createSyncUp(client, seconds: 600)
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        let meetingID = try #require(started["meeting"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.end", ["action": "save"])
        _ = try client.nextEvent("session.ended")
        #expect(daemon.stop() == .exited(0))
        let details = try #require(Files.readString(daemon.dataPath + "/meetings/\(meetingID).json"))
        #expect(details.contains(#""interrupted" : false"#) && details.contains("Blob Jr"))
        #expect(!Files.exists(daemon.dataPath + "/meetings/\(meetingID).recording.json"))
        #expect(Files.readString(daemon.dataPath + "/sync-ups.json")?.contains(meetingID) == true)
    }
}

extension RawClient {
    /// Runs syncupsctl against `daemon` (a convenience for chained checks).
    func ctl(_ daemon: DaemonProcess, _ arguments: [String]) throws -> CommandResult { try daemon.ctl(arguments) }
}

/// The daemon's cue as bytes, from the audio module's own samples.
enum CueBytes {
    static let one: [UInt8]? = CueSamples.bytes
}
