import Foundation
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

let voiceWeights =
    (ProcessInfo.processInfo.environment["SYNCUPS_VOICE_DIR"] ?? BuiltProducts.repositoryRoot + "/.build/voice")
    + "/ge2e.weights"

/// Voice profiles learned from the floor in a real meeting: three real voices (a LibriVox reader, two festival
/// voices) through the real microphone path (ALSA's file plugin), the speaker encoder in the daemon.
@Suite(.enabled(if: FileManager.default.fileExists(atPath: voiceWeights))) struct VoicesTests {
    /// Five seconds of each attendee's speech, one after the other: a 15 s meeting of three 5 s turns.
    static func meetingAudio(in directory: TemporaryDirectory) throws -> [UInt8] {
        let made = try CommandResult.run(BuiltProducts.repositoryRoot + "/scripts/voice-fixtures", [directory.path])
        guard made.exitCode == 0 else { throw TestFailure("voice-fixtures: \(made.standardError)") }
        // Each clip cut to 5 s (pad, then trim) so the turns line up with the floor.
        var audio: [UInt8] = []
        for clip in ["ann1", "ben1", "cat1"] {
            let cut = directory.appending(clip + ".5s.raw")
            let result = try CommandResult.run(
                "/usr/bin/sox",
                [directory.appending(clip + ".wav"), "-t", "raw", cut, "pad", "0", "5", "trim", "0", "5"])
            guard result.exitCode == 0, let bytes = Files.read(cut) else { throw TestFailure(result.standardError) }
            audio += bytes
        }
        return audio
    }

    @Test func profilesAreLearnedFromTheFloorLastAcrossARestartAndAreForgotten() throws {
        let fixtures = TemporaryDirectory("voice-fixtures")
        let audio = try Self.meetingAudio(in: fixtures) + SpeechFixture.silence(seconds: 5)
        let alsa = try ALSAFixture(microphone: audio)
        let arguments = [
            "--audio-device", "virtmic", "--no-cue", "--speech-engine", "none", "--voice-model", voiceWeights,
        ]
        let home = TemporaryDirectory("voices-daemon")
        var daemon: DaemonProcess? = try DaemonProcess(
            arguments: arguments, environment: alsa.environment, directory: home)
        var client = try daemon!.client()
        let status = try client.result("status")
        #expect(status["voices"]?.stringValue == "on: ge2e-resemblyzer-0.1.4 from \(voiceWeights)")
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 15, "attendees": ["Ann", "Ben", "Cat"]])
        let id = try #require(created["id"]?.stringValue)
        let attendees = try #require(created["attendees"]?.arrayValue).compactMap { $0["id"]?.stringValue }
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        var ended = false
        let deadline = MonotonicInstant.now() + .seconds(40)
        while !ended && MonotonicInstant.now() < deadline {
            ended = try client.readJSON(timeout: .seconds(30))["event"] == "session.ended"
        }
        #expect(ended)

        // Each attendee's own turn taught their profile; the files follow once the encoder has drained.
        let profiles = attendees.map { home.appending("data/voices/\($0).json") }
        let written = MonotonicInstant.now() + .seconds(20)
        while !profiles.allSatisfy(Files.exists) && MonotonicInstant.now() < written {
            _ = try client.result("ping")
        }
        let learned = try client.result("voices")
        let seconds = (learned["attendees"]?.arrayValue ?? []).map { $0["seconds"]?.numberValue?.double ?? 0 }
        #expect(seconds.count == 3 && seconds.allSatisfy { $0 >= 1.6 }, "\(learned)")
        #expect(profiles.allSatisfy(Files.exists), "\(Files.list(home.appending("data")))")
        // sync-ups.json stays the app's: no voice in it.
        #expect(Files.readString(home.appending("data/sync-ups.json"))?.contains("seconds") == false)

        // A restart: the profiles come back from the data directory.
        _ = daemon!.stop()
        daemon = nil
        daemon = try DaemonProcess(arguments: arguments, environment: alsa.environment, directory: home)
        client = try daemon!.client()
        #expect(
            try client.result("voices")["attendees"]?.arrayValue?.map { $0["seconds"] }
                == learned["attendees"]?.arrayValue?.map { $0["seconds"] })
        let listed = try daemon!.ctl(["voices"]).standardOutput
        #expect(listed.hasPrefix("voices: on: ge2e-resemblyzer-0.1.4"))
        #expect(listed.contains("Ben"))

        // Forgetting one, by a start of its id, through syncupsctl.
        let forgot = try daemon!.ctl(["voices", "forget", String(attendees[1].prefix(8))])
        #expect(forgot.standardOutput == "forgot the voice of Ben\n", "\(forgot.standardError)")
        #expect(!Files.exists(profiles[1]))
        #expect(try client.result("voices")["attendees"]?[1]?["seconds"] == .number(.double(0)))

        // Removing an attendee forgets them; deleting the sync-up forgets everyone.
        _ = try client.result(
            "syncups.update",
            [
                "id": .string(id),
                "attendees": [
                    ["id": .string(attendees[1]), "name": "Ben"], ["id": .string(attendees[2]), "name": "Cathy"],
                ],
            ])
        #expect(!Files.exists(profiles[0]), "Ann was removed, and her voice with her")
        #expect(Files.exists(profiles[2]), "a renamed attendee keeps their voice")
        _ = try client.result("syncups.delete", ["id": .string(id)])
        #expect(!Files.exists(profiles[0]) && !Files.exists(profiles[2]))
    }

    @Test func withoutTheModelVoicesAreOffAndStatusSaysWhy() throws {
        let daemon = try DaemonProcess(arguments: ["--voice-model", "/nonexistent/ge2e.weights"])
        let status = try daemon.client().result("status")
        #expect(
            status["voices"]?.stringValue
                == "voices off: no voice model at /nonexistent/ge2e.weights (make voice-model installs it)")
        let damaged = TemporaryDirectory("damaged-model")
        Files.write(damaged.appending("ge2e.weights"), Array("SUVGE2E1\u{1}".utf8))
        let second = try DaemonProcess(arguments: ["--voice-model", damaged.appending("ge2e.weights")])
        let damagedStatus = try second.client().result("status")["voices"]?.stringValue
        #expect(
            damagedStatus
                == "voices off: the voice model \(damaged.appending("ge2e.weights")) is unusable: truncated at byte 9")
    }
}
