import Foundation
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Remote stand-ups against a real PipeWire (`scripts/pipewire-graph`): the local attendee speaks into the
/// virtual microphone (`micfeed` → `mic`), the remote one out of the meeting app into the `call` sink; the
/// built daemon records both through libpulse and transcribes them, attributed to whoever holds the floor.
/// One at a time: two recognizers and sound servers at once on two shared cores make each other late. The
/// call's devices without a recognizer are `CallDeviceTests`, below, run beside these.
@Suite(.serialized, .enabled(if: PipeWireGraph.unavailableReason == nil, "\(PipeWireGraph.unavailableReason ?? "")"))
struct CallAudioTests {
    static let local = "yesterday i finished the review"
    static let remote = "today i will deploy the service"
    static let hasSpeechModel = FileManager.default.fileExists(
        atPath: "/usr/share/pocketsphinx/model/en-us/en-us/mdef")

    /// A daemon on the graph's sound server, transcribing with the stand-up grammar (or not at all).
    static func daemon(on graph: PipeWireGraph, transcribes: Bool = true) throws -> DaemonProcess {
        var arguments = ["--no-cue"]
        if transcribes {
            arguments += [
                "--speech-engine", "pocketsphinx", "--speech-grammar", SpeechFixture.writeGrammar(in: graph.directory),
            ]
        } else {
            arguments += ["--speech-engine", "none"]
        }
        return try DaemonProcess(arguments: arguments, environment: graph.environment)
    }

    /// A two-attendee stand-up of `seconds` (half each), started; returns the sync-up's id and the reply.
    static func startMeeting(_ client: RawClient, seconds: Int, transcribes: Bool = true) throws -> (
        String, JSONValue
    ) {
        let created = try client.result(
            "syncups.create", ["title": "Remote", "duration": .int(seconds), "attendees": ["Ann", "Bob"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        var arguments: JSONObject = ["syncup": .string(id)]
        if !transcribes { arguments.append("transcribe", false) }
        return (id, try client.result("session.start", .object(arguments)))
    }

    /// Asks `session.get` until `condition` holds for its session object (`timeout` at most).
    static func waitForSession(
        _ client: RawClient, _ what: String, timeout: Duration = .seconds(10), _ condition: (JSONValue) -> Bool
    ) throws -> JSONValue {
        let deadline = MonotonicInstant.now() + timeout
        while MonotonicInstant.now() < deadline {
            let session = try client.result("session.get")
            if condition(session) { return session }
            _ = try? client.readJSON(timeout: .milliseconds(200))  // the next event, or 200 ms
        }
        throw TestFailure("the session never showed \(what): \(JSONWriter().string(try client.result("session.get")))")
    }

    /// Waits until the sound server has `count` recording streams (the daemon's microphone and call).
    static func waitForCaptureStreams(_ graph: PipeWireGraph, count: Int, timeout: Duration = .seconds(10)) throws {
        let deadline = MonotonicInstant.now() + timeout
        var streams = ""
        while MonotonicInstant.now() < deadline {
            streams = try graph.pactl(["list", "short", "source-outputs"])
            if streams.split(separator: "\n").count >= count { return }
            _ = poll(nil, 0, 20)  // the server has no event for this to wait on: ask again in 20 ms
        }
        throw TestFailure("the sound server never had \(count) recording streams: \(streams)")
    }

    static func samples(ofWAV path: String) throws -> [Int16] {
        let bytes = try #require(Files.read(path), "\(path) exists")
        return bytes.dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// RMS of `samples` between `from` and `to` seconds, as a fraction of full scale.
    static func rms(_ samples: [Int16], from: Double, to: Double) -> Double {
        let lower = max(0, Int(from * 16_000))
        let upper = min(samples.count, Int(to * 16_000))
        guard lower < upper else { return 0 }
        let range = lower..<upper
        let sum = samples[range].reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(range.count)).squareRoot() / 32_768
    }

    /// How much later than the call the microphone heard its leak between `from` and `to` seconds: the lag of
    /// the best match of their 10 ms loudness envelopes, -1 to 1 s.
    static func leakDelay(microphone: [Int16], call: [Int16], from: Double, to: Double) -> Double {
        func envelope(_ samples: [Int16]) -> [Double] {
            stride(from: from - 1, to: to + 1, by: 0.01).map { log10(rms(samples, from: $0, to: $0 + 0.01) + 1e-5) }
        }
        let (heard, played) = (envelope(microphone), envelope(call))
        let span = 100..<(heard.count - 100)
        func distance(_ lag: Int) -> Double { span.reduce(0) { $0 + abs(heard[$1] - played[$1 - lag]) } }
        let best = (-100...100).min { distance($0) < distance($1) } ?? 0
        return Double(best) / 100
    }

    /// The loudest 100 ms between `from` and `to` seconds.
    static func loudest(_ samples: [Int16], from: Double, to: Double) -> Double {
        stride(from: from, to: to, by: 0.1).map { rms(samples, from: $0, to: $0 + 0.1) }.max() ?? 0
    }

    /// Plays the local attendee at once and, once she is done and 5 s have passed, hands the floor to Bob and
    /// plays the remote one, optionally leaking into the microphone at -3 dB; returns the saved meeting, when
    /// Bob's turn began (in seconds of the recordings) and the daemon's log. The meeting ends once the remote voice has played and the call's recording has caught up
    /// with it: a loaded machine starts `paplay` late, and a meeting whose time ran out while Bob still spoke
    /// cut his words off (as it rightly would: what is said after a meeting is not in it).
    static func remoteStandUp(leaks: Bool) throws -> (
        meeting: JSONValue, segments: [JSONValue], microphone: [Int16], call: [Int16], remoteTurn: Double,
        log: String
    ) {
        let graph = try PipeWireGraph()
        if leaks { try graph.leakCallIntoMicrophone() }
        let daemon = try daemon(on: graph)
        let client = try daemon.client()
        let (id, started) = try startMeeting(client, seconds: 120)
        #expect(started["callAudio"]?["state"] == "recording")
        #expect(started["callAudio"]?["device"] == "call.monitor")
        #expect(started["audio"]?["through"] == "sound server")
        #expect(started["audio"]?["source"] == "mic")
        // The sound server's streams connect on the capture threads: what is played before they are up is
        // heard by no one (a loaded machine takes longer than the 0.3 s of silence below).
        try waitForCaptureStreams(graph, count: 2)

        try graph.play(SpeechFixture.silence(seconds: 0.3) + SpeechFixture.say(local, voice: "en-gb"), into: "micfeed")
        try client.waitUntilElapsed(5)
        // Bob's turn from here (`next` counts his turn's time from its slot, so the time is read before).
        let remoteTurn = try #require(try client.result("session.get")["secondsElapsed"]?.numberValue?.double)
        _ = try client.result("session.next")
        let remoteVoice = SpeechFixture.silence(seconds: 0.3) + (try SpeechFixture.say(remote, voice: "en-us"))
        try graph.play(remoteVoice, into: "call")
        // Played: the sound server has taken the last of it. Both recordings a second past that, then the end.
        let played = try #require(try client.result("session.get")["callAudio"]?["seconds"]?.numberValue?.double)
        let recorded = try waitForSession(client, "the call recorded past the remote voice", timeout: .seconds(20)) {
            ($0["callAudio"]?["seconds"]?.numberValue?.double ?? 0) >= played + 1
                && ($0["audio"]?["seconds"]?.numberValue?.double ?? 0) >= played + 1
        }
        // The microphone lost (`leakCallIntoMicrophone` says when it was): what the server's graph looked like
        // then goes with the daemon's log.
        let graphState =
            recorded["audio"]?["error"] == .null ? "" : "\n\(recorded["audio"] ?? .null)\n\(graph.describe())"
        _ = try client.result("session.end")
        let ended = try client.nextEvent("session.ended", timeout: .seconds(30))
        let meeting = try #require(ended["data"]?["meeting"])
        let meetingID = try #require(meeting["id"]?.stringValue)
        let details = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        let directory = daemon.dataPath + "/meetings/" + meetingID
        return (
            meeting, details["segments"]?.arrayValue ?? [], try samples(ofWAV: directory + ".wav"),
            try samples(ofWAV: directory + ".call.wav"), remoteTurn, daemon.log.contents + graphState
        )
    }

    @Test(.enabled(if: hasSpeechModel))
    func recordsEachSideInItsOwnFileAndTranscribesBothToTheFloorHolder() throws {
        let (meeting, segments, microphone, call, bob, log) = try Self.remoteStandUp(leaks: false)
        #expect(meeting["transcript"]?.stringValue == "\(Self.local) \(Self.remote)", "\(log)")
        #expect(segments.map { $0["speaker"]?["name"]?.stringValue } == ["Ann", "Bob"])
        #expect(segments.map { $0["text"]?.stringValue } == [Self.local, Self.remote])

        // Each voice is in its own file, in step: Ann in her turn in the microphone's, Bob in his in the
        // call's, and nothing crossed over.
        let end = Double(call.count) / 16_000
        #expect(
            abs(microphone.count - call.count) <= 16_000 / 2,
            "the two files are as long (±0.5 s): \(microphone.count), \(call.count), Bob from \(bob) s")
        #expect(Self.loudest(microphone, from: 0, to: bob - 0.5) > 0.05)
        #expect(Self.loudest(call, from: bob, to: end) > 0.05, "\(call.count), Bob from \(bob) s")
        #expect(Self.loudest(microphone, from: bob, to: end) < 0.001)
        #expect(Self.loudest(call, from: 0, to: bob - 0.5) < 0.001)
    }

    @Test(.enabled(if: hasSpeechModel))
    func aRemoteVoiceLeakingIntoTheMicrophoneIsTranscribedOnce() throws {
        let (meeting, segments, microphone, _, bob, log) = try Self.remoteStandUp(leaks: true)
        let transcript = meeting["transcript"]?.stringValue ?? ""
        #expect(transcript == "\(Self.local) \(Self.remote)", "no word twice: \(transcript)\n\(log)")
        #expect(segments.map { $0["speaker"]?["name"]?.stringValue } == ["Ann", "Bob"])
        // The leak is real: the microphone's file holds the remote voice too.
        #expect(Self.loudest(microphone, from: bob, to: Double(microphone.count) / 16_000) > 0.03, "\(log)")
    }

    /// Voices in a remote stand-up: Ann in the room opens her turn, then Bob on the call interjects in it (his
    /// voice leaking into the microphone too), then Bob speaks in his own turn. The encoder hears each channel
    /// on its own: Ann's profile learns from the microphone alone, never Bob's interjection nor its echo
    /// (heard in the mix, her young profile took both: 8 s and more where she spoke under 5).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: voiceWeights)))
    func aLocalHoldersProfileLearnsNeitherTheCallsVoiceNorItsEcho() throws {
        let graph = try PipeWireGraph()
        try graph.leakCallIntoMicrophone()
        let daemon = try DaemonProcess(
            arguments: ["--no-cue", "--speech-engine", "none", "--voice-model", voiceWeights],
            environment: graph.environment)
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Remote", "duration": 20, "attendees": ["Ann", "Bob"]])
        let id = try #require(created["id"]?.stringValue)
        let ann = try #require(created["attendees"]?[0]?["id"]?.stringValue)
        let bob = try #require(created["attendees"]?[1]?["id"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
        #expect(started["callAudio"]?["state"] == "recording")
        try Self.waitForCaptureStreams(graph, count: 2)

        let annSays = SpeechFixture.trimmingTrailingSilence(
            try SpeechFixture.say("yesterday i finished the review", voice: "en-gb"))
        let annSeconds = Double(annSays.count) / 32_000
        try graph.play(SpeechFixture.silence(seconds: 0.3) + annSays, into: "micfeed")
        try client.waitUntilElapsed(6)
        try graph.play(try SpeechFixture.say("sorry which service was that", voice: "en-us"), into: "call")
        try client.waitUntilElapsed(10)
        try graph.play(
            try SpeechFixture.say(
                "today i will deploy the payment service to staging and then look at the alerts", voice: "en-us"),
            into: "call")
        let ended = try client.nextEvent("session.ended", timeout: .seconds(30))
        let base = daemon.dataPath + "/meetings/" + (try #require(ended["data"]?["meeting"]?["id"]?.stringValue))
        let (microphone, call) = (try Self.samples(ofWAV: base + ".wav"), try Self.samples(ofWAV: base + ".call.wav"))
        let leak = [4.8, 6.4, 8.0, 9.6, 11.2, 12.8].map {
            "\($0): \(Self.leakDelay(microphone: microphone, call: call, from: $0, to: $0 + 1.6))"
        }

        // The encoder has drained: what the meeting taught is known.
        let deadline = MonotonicInstant.now() + .seconds(20)
        var voices = try client.result("voices")
        while voices["learning"] == true && MonotonicInstant.now() < deadline {
            _ = poll(nil, 0, 100)  // `voices` has no event to wait on
            voices = try client.result("voices")
        }
        #expect(voices["learning"] == false)
        let learned = Dictionary(
            uniqueKeysWithValues: (voices["attendees"]?.arrayValue ?? []).compactMap { attendee in
                attendee["id"]?.stringValue.map { ($0, attendee["seconds"]?.numberValue?.double ?? 0) }
            })
        // Ann's windows: those her speech reaches, from 0.3 s on (1.6 s each).
        let annWindows = ((0.3 + annSeconds) / 1.6).rounded(.up)
        #expect((learned[ann] ?? 0) > 0)
        let windows = daemon.log.contents.split(separator: "\n").filter { $0.contains(" window ") }
        #expect(
            (learned[ann] ?? 0) <= annWindows * 1.6 + 0.05,
            "Ann (\(ann)) spoke \(annSeconds) s, the leak was \(leak) s after the call: \(voices)\n\(windows.joined(separator: "\n"))"
        )
        #expect((learned[bob] ?? 0) >= 3.2, "\(learned), Ann \(ann), Bob \(bob)")
    }

    /// A call source that carries nothing (the meeting app plays elsewhere) is `silent` after 10 s, and the
    /// shipped tmux snippet, unchanged, shows it in a real tmux's status line drawn for a real client; the
    /// call carrying sound again clears it.
    @Test(.enabled(if: access("/usr/bin/tmux", X_OK) == 0 && access("/usr/bin/script", X_OK) == 0, "needs tmux"))
    func aSilentCallShowsInTheSessionAndInTheShippedTmuxStatusLine() throws {
        let graph = try PipeWireGraph()
        let daemon = try Self.daemon(on: graph, transcribes: false)
        let client = try daemon.client()
        _ = try Self.startMeeting(client, seconds: 120, transcribes: false)
        let silent = try Self.waitForSession(client, "the call silent", timeout: .seconds(20)) {
            $0["callAudio"]?["silent"] == true
        }
        let callAudio = try #require(silent["callAudio"])
        #expect(callAudio["device"] == "call.monitor")
        #expect(callAudio["recording"] == true)
        #expect(callAudio["level"] == .null, "pure silence has no level")
        #expect(callAudio["silentSeconds"]?.numberValue?.double ?? 0 >= 10)
        #expect(callAudio["error"] == .null)
        let status = try daemon.ctl(["status"]).standardOutput
        #expect(status.contains("call:      call.monitor, recording, silent for 1"), "\(status)")

        let tmux = TemporaryDirectory("tmux")
        let socket = tmux.appending("socket")
        let environment = Subprocess.currentEnvironment().merging([
            "PATH": BuiltProducts.directory + ":/usr/bin:/bin", "SYNCUPSD_SOCKET": daemon.socketPath,
            "TERM": "xterm", "HOME": tmux.path,
        ]) { $1 }
        func tmuxCommand(_ arguments: [String]) throws {
            let result = try CommandResult.run("/usr/bin/tmux", ["-S", socket] + arguments, environment: environment)
            guard result.exitCode == 0 else { throw TestFailure("tmux \(arguments): \(result.standardError)") }
        }
        try tmuxCommand(["-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "5"])
        defer { try? tmuxCommand(["kill-server"]) }
        try tmuxCommand(["source-file", BuiltProducts.repositoryRoot + "/contrib/tmux/syncups.tmux"])
        // tmux draws its status line (and runs the snippet's #(…)) only for an attached client: one on a
        // pseudo-terminal, whose screen is what `script` prints.
        let attached = try Subprocess(
            executable: "/usr/bin/script",
            arguments: ["-qfc", "stty cols 200 rows 5; exec tmux -S \(socket) attach", "/dev/null"],
            environment: environment, standardInput: .pipe, standardOutput: .pipe, standardError: .null)
        let screen = try OutputCollector(attached.standardOutput!, name: "tmux-screen")
        defer {
            try? tmuxCommand(["kill-server"])
            _ = attached.wait()
            screen.join()
            attached.closeStreams()
        }
        #expect(
            screen.wait(timeout: .seconds(15)) { $0.contains("Ann 1/2 · ") && $0.contains(" · call audio: silent ") },
            "the status line: \(screen.contents.suffix(400))")

        // The meeting app plays into the call again: not silent any more, in the session and in tmux.
        try graph.play(try SpeechFixture.say("no blockers for me"), into: "call")
        _ = try Self.waitForSession(client, "the call not silent") { $0["callAudio"]?["silent"] == false }
        let drawnBefore = screen.contents.count
        #expect(
            screen.wait(timeout: .seconds(15)) { text in
                // A whole status line drawn since, with the time left and no word of silence.
                let since = text.dropFirst(drawnBefore)
                guard let line = since.range(of: "Ann 1/2 · ") else { return false }
                return since[line.upperBound...].prefix(12).contains(" ")
                    && !since[line.upperBound...].prefix(40).contains("call audio")
            }, "the status line after the call carried sound: \(screen.contents.suffix(400))")
    }
}

/// The call's devices through a real PipeWire, with no recognizer: a new default output, a sound server that
/// restarts, hangs, stops answering or is not there, a source that vanishes, a crash mid-recording. One at a
/// time, and a share of `scripts/run-tests` of its own, beside `CallAudioTests`: one sound server and one
/// recognizer at once kept time on two cores where two of each did not.
@Suite(.serialized, .enabled(if: PipeWireGraph.unavailableReason == nil, "\(PipeWireGraph.unavailableReason ?? "")"))
struct CallDeviceTests {
    @Test func followsANewDefaultOutputAndGoesOnThroughASoundServerRestart() throws {
        let graph = try PipeWireGraph()
        try graph.pactl(["load-module", "module-null-sink", "sink_name=headphones"])
        let daemon = try CallAudioTests.daemon(on: graph, transcribes: false)
        let client = try daemon.client()
        let began = MonotonicInstant.now()
        _ = try CallAudioTests.startMeeting(client, seconds: 120, transcribes: false)
        let tone = try SpeechFixture.say("no blockers for me")

        // Headphones plugged in: the call plays there now, and the recording follows.
        try graph.pactl(["set-default-sink", "headphones"])
        do {
            _ = try CallAudioTests.waitForSession(client, "the headphones' monitor") {
                $0["callAudio"]?["device"] == "headphones.monitor"
            }
        } catch {
            // What the server and the daemon each said then: which of them did not follow (once, under load).
            let server = (try? graph.pactl(["info"])) ?? "pactl info failed"
            let devices = (try? daemon.ctl(["devices"]).standardOutput) ?? "syncupsctl devices failed"
            throw TestFailure(
                "\(error)\nserver: \(server)\ndevices: \(devices)\nlog: \(daemon.log.contents.suffix(3000))")
        }
        let devices = try daemon.ctl(["devices"]).standardOutput
        #expect(devices.contains("sound server: PulseAudio (on PipeWire"), "\(devices)")
        #expect(
            devices.split(separator: "\n").contains { $0.hasPrefix("call") && $0.contains("headphones.monitor") },
            "the new default output's monitor is marked call: \(devices)")
        #expect(devices.split(separator: "\n").contains { $0.hasPrefix("mic ") && $0.contains(" mic ") }, "\(devices)")
        let headphonesAt = (MonotonicInstant.now() - began).seconds
        try graph.play(tone, into: "headphones")

        // The sound server crashes and comes back: the meeting goes on, silence fills the gap.
        try graph.kill()
        let killedAt = (MonotonicInstant.now() - began).seconds
        let away = try CallAudioTests.waitForSession(client, "the call not recording") {
            $0["callAudio"]?["recording"] == false
        }
        #expect(away["callAudio"]?["error"]?.stringValue?.isEmpty == false, "says why: \(away["callAudio"] ?? .null)")
        let awayStatus = try daemon.ctl(["status"]).standardOutput
        #expect(awayStatus.contains("call:      headphones.monitor, not recording (reading @call: "), "\(awayStatus)")
        // Away for 16 s, long enough for the sound-server watcher's backoff (1, 2, 4, 8 s) to be 16 s: a
        // meeting's captures ask it to try every second, so both sources are back within seconds.
        try client.waitUntilElapsed(Int(killedAt) + 16)
        try graph.restart()
        // Within 12 s: the watcher's own backoff would next try 16 s after the last, and a loaded machine (the
        // suite's other shares) took over 6 s to bring the server's streams back once.
        let back = try CallAudioTests.waitForSession(client, "the call recorded again", timeout: .seconds(12)) {
            $0["callAudio"]?["recording"] == true && $0["callAudio"]?["device"] == "call.monitor"
                && $0["audio"]?["recording"] == true
        }
        #expect(back["callAudio"]?["reconnects"]?.numberValue?.int64 ?? 0 >= 1)
        #expect(back["state"] == "running")
        #expect(back["callAudio"]?["error"] == .null)
        let callAt = (MonotonicInstant.now() - began).seconds
        try graph.play(tone, into: "call")
        let ending = try client.result("session.end")
        let endedAt = (MonotonicInstant.now() - began).seconds
        let ended = try client.nextEvent("session.ended", timeout: .seconds(15))
        let meetingID = try #require(ended["data"]?["meeting"]?["id"]?.stringValue)
        _ = ending

        let base = daemon.dataPath + "/meetings/" + meetingID
        let microphone = try CallAudioTests.samples(ofWAV: base + ".wav")
        let call = try CallAudioTests.samples(ofWAV: base + ".call.wav")
        // Audio time stayed meeting time in both files, through the gap.
        let seconds = Double(call.count) / 16_000
        #expect(abs(microphone.count - call.count) <= 16_000 / 2, "\(microphone.count) vs \(call.count) frames")
        #expect(seconds > endedAt - 1.5 && seconds <= endedAt + 0.5, "\(seconds) s of call audio in \(endedAt) s")
        #expect(
            CallAudioTests.loudest(call, from: headphonesAt - 0.5, to: headphonesAt + 2) > 0.01, "the headphones' sound"
        )
        #expect(
            CallAudioTests.loudest(call, from: callAt - 0.5, to: callAt + 2) > 0.01,
            "the call's sound after the restart")
        #expect(CallAudioTests.loudest(microphone, from: 0, to: seconds) < 0.001, "nothing played into the microphone")
    }

    /// A server without an input makes an output's monitor its default source (PipeWire, for a moment after a
    /// restart, is one): the microphone, which follows the default source, recorded the call there a second
    /// time (the restart test above once found the call's tone in the microphone's file). It waits for an
    /// input instead, saying why, and records the input once there is one.
    @Test func aMonitorAsTheDefaultSourceIsNoMicrophone() throws {
        let graph = try PipeWireGraph()
        try graph.pactl(["set-default-source", "call.monitor"])
        let daemon = try CallAudioTests.daemon(on: graph, transcribes: false)
        let client = try daemon.client()
        let watcher = try daemon.client()
        _ = try watcher.result("subscribe", ["topics": ["session"], "snapshot": false])
        let began = MonotonicInstant.now()
        _ = try CallAudioTests.startMeeting(client, seconds: 120, transcribes: false)
        // Said at the start, as a microphone lost mid-meeting is (attack 98: only its return was said).
        let monitor =
            "finding @microphone: the server's default source, call.monitor, is an output's monitor, not a microphone"
        #expect(
            try watcher.nextEvent("session.error")["data"]?["message"]?.stringValue
                == "recording without the microphone until it comes: \(monitor)")
        let waiting = try CallAudioTests.waitForSession(client, "the microphone waiting for an input") {
            $0["audio"]?["error"]?.stringValue == monitor && $0["callAudio"]?["recording"] == true
        }
        #expect(waiting["audio"]?["recording"] == false, "\(waiting["audio"] ?? .null)")
        let tone = try SpeechFixture.say("no blockers for me")
        let callAt = (MonotonicInstant.now() - began).seconds
        try graph.play(tone, into: "call")

        try graph.pactl(["set-default-source", "mic"])
        _ = try CallAudioTests.waitForSession(client, "the microphone on the input") {
            $0["audio"]?["recording"] == true && $0["audio"]?["source"] == "mic"
        }
        let micAt = (MonotonicInstant.now() - began).seconds
        try graph.play(tone, into: "micfeed")

        // A monitor the default again mid-meeting: said in these words at once (attack 98: "No such device"
        // first, the reason a second later), and the call is not recorded as the microphone meanwhile.
        try graph.pactl(["set-default-source", "call.monitor"])
        var said: [String] = []
        let deadline = MonotonicInstant.now() + .seconds(10)
        while !said.contains(where: { $0.contains("output's monitor") }), MonotonicInstant.now() < deadline {
            said.append(
                try watcher.nextEvent("session.error", timeout: deadline - .now())["data"]?["message"]?.stringValue
                    ?? "")
        }
        #expect(said.last == "the microphone went away (\(monitor)); retrying every second", "\(said)")
        let againAt = (MonotonicInstant.now() - began).seconds
        try graph.play(tone, into: "call")
        _ = try client.result("session.end")
        let ended = try client.nextEvent("session.ended", timeout: .seconds(15))
        let base = daemon.dataPath + "/meetings/" + (try #require(ended["data"]?["meeting"]?["id"]?.stringValue))
        let microphone = try CallAudioTests.samples(ofWAV: base + ".wav")
        let call = try CallAudioTests.samples(ofWAV: base + ".call.wav")
        #expect(CallAudioTests.loudest(call, from: callAt - 0.5, to: callAt + 2) > 0.01, "the call's sound")
        #expect(
            CallAudioTests.loudest(microphone, from: 0, to: micAt - 0.5) < 0.001,
            "the call is not recorded as the microphone:\n\(daemon.log.contents)")
        #expect(CallAudioTests.loudest(microphone, from: micAt - 0.5, to: micAt + 3) > 0.01, "the input's sound")
        #expect(CallAudioTests.loudest(call, from: againAt - 0.5, to: againAt + 2) > 0.01, "the call's sound again")
        #expect(
            CallAudioTests.loudest(microphone, from: againAt, to: Double(microphone.count) / 16_000) < 0.001,
            "nor after the monitor became the default again")
    }

    /// The microphone through ALSA (a steady clock), the call through the graph's server, no transcript.
    static func daemonWithALSAMicrophone(on graph: PipeWireGraph, _ arguments: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(
            arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"] + arguments,
            environment: graph.environment)
    }

    @Test func aSoundServerThatStopsAnsweringNeitherHoldsTheLoopNorPutsTheCallOutOfStep() throws {
        let graph = try PipeWireGraph()
        let daemon = try Self.daemonWithALSAMicrophone(on: graph)
        let client = try daemon.client()
        let (id, _) = try CallAudioTests.startMeeting(client, seconds: 120, transcribes: false)
        try client.waitUntilElapsed(1)

        // The server hangs for 4 s of the meeting, then carries on: the call's file gets silence for that time
        // instead of falling 4 s behind the microphone's.
        try graph.pause()
        try client.waitUntilElapsed(5)
        try graph.resume()
        _ = try CallAudioTests.waitForSession(client, "3 s of call audio after the hang") {
            $0["callAudio"]?["seconds"]?.numberValue?.double ?? 0 >= 7
        }
        _ = try client.result("session.end")
        let ended = try client.nextEvent("session.ended")
        let base = daemon.dataPath + "/meetings/" + (try #require(ended["data"]?["meeting"]?["id"]?.stringValue))
        let microphone = try CallAudioTests.samples(ofWAV: base + ".wav")
        let call = try CallAudioTests.samples(ofWAV: base + ".call.wav")
        #expect(abs(microphone.count - call.count) <= 16_000 / 2, "\(microphone.count) vs \(call.count) frames")

        // Hung at the start of a meeting: the stream's open waits for an answer (1.5 s at most), which must not
        // be the event loop's time. The start is sent and not read; another client is answered meanwhile.
        try graph.pause()
        let starting = try daemon.client()
        try starting.send(#"{"id":1,"cmd":"session.start","args":{"syncup":"\#(id)","transcribe":false}}"# + "\n")
        let other = try daemon.client()
        #expect(try other.result("ping") != .null)
        let started = try starting.readJSON()
        #expect(started["ok"] == true, "\(started)")
        #expect(started["result"]?["callAudio"]?["state"] == "recording")
        try graph.resume()
        let recorded = try CallAudioTests.waitForSession(other, "the call recorded once the server answers") {
            $0["callAudio"]?["recording"] == true && $0["callAudio"]?["seconds"]?.numberValue?.double ?? 0 >= 1
        }

        // Hung when the meeting ends: the call's capture is in a read that fails only after the stop, and its
        // file still ends with the meeting, as the microphone's does.
        try graph.pause()
        try client.waitUntilElapsed(Int(recorded["secondsElapsed"]?.numberValue?.double ?? 0) + 3)
        _ = try client.result("session.end")
        let second = try client.nextEvent("session.ended")
        let secondBase =
            daemon.dataPath + "/meetings/" + (try #require(second["data"]?["meeting"]?["id"]?.stringValue))
        let secondMicrophone = try CallAudioTests.samples(ofWAV: secondBase + ".wav")
        let secondCall = try CallAudioTests.samples(ofWAV: secondBase + ".call.wav")
        #expect(
            abs(secondMicrophone.count - secondCall.count) <= 16_000 / 2,
            "\(secondMicrophone.count) vs \(secondCall.count) frames")
        try graph.resume()
    }

    /// Attack 96: both sources through a server that hangs just before the meeting ends. The microphone's stop
    /// waits for its read to give up on the server (up to 1.5 s); the call's stop, made after it, ended the
    /// call's file that much later (0.45 s longer after a 1 s hang, at a SIGTERM). Both end where the
    /// recording did.
    @Test func aHangAtTheEndLeavesBothFilesAsLong() throws {
        let graph = try PipeWireGraph()
        let daemon = try CallAudioTests.daemon(on: graph, transcribes: false)
        let client = try daemon.client()
        _ = try CallAudioTests.startMeeting(client, seconds: 120, transcribes: false)
        _ = try CallAudioTests.waitForSession(client, "both sources recorded") { session in
            ["audio", "callAudio"].allSatisfy { session[$0]?["seconds"]?.numberValue?.double ?? 0 >= 1 }
        }
        try graph.pause()
        _ = try client.result("session.end")
        let ended = try client.nextEvent("session.ended")
        try graph.resume()
        let base = daemon.dataPath + "/meetings/" + (try #require(ended["data"]?["meeting"]?["id"]?.stringValue))
        let microphone = try CallAudioTests.samples(ofWAV: base + ".wav")
        let call = try CallAudioTests.samples(ofWAV: base + ".call.wav")
        #expect(abs(microphone.count - call.count) <= 16_000 / 5, "\(microphone.count) vs \(call.count) frames")
    }

    /// K5: a sound server that hangs (pipewire-pulse stopped) and stays hung. Each meeting started meanwhile says
    /// so within seconds (a `session.error` and the audio's `error`, as for a microphone that vanished), and once
    /// it ends nothing of its captures is left: the daemon's threads and descriptors are what they were before,
    /// meeting after meeting. Before, each meeting said it recorded (seconds 0, error null) and left 4 threads and
    /// 14 descriptors blocked in the server until it woke up.
    @Test func aHungSoundServerIsReportedAndNoMeetingLeavesAnythingBehind() throws {
        let graph = try PipeWireGraph()
        let daemon = try CallAudioTests.daemon(on: graph, transcribes: false)
        let client = try daemon.client()
        /// The daemon's threads but the server's reply thread (started by the first reply made off the loop, a
        /// meeting's start with audio, and kept), and its descriptors.
        func counts() -> (threads: Int, descriptors: Int) {
            let process = "/proc/\(daemon.pid)"
            let tasks = (try? DirectoryListing.names(in: process + "/task")) ?? []
            return (
                tasks.filter { Files.readString(process + "/task/\($0)/comm") != "syncups-reply\n" }.count,
                (try? DirectoryListing.names(in: process + "/fd").count) ?? 0
            )
        }
        let idleThreads = counts().threads
        /// Waits (10 s at most) until the ended meeting's threads are gone and the descriptors at most `limit`.
        func released(descriptors limit: Int) -> Bool {
            let deadline = MonotonicInstant.now() + .seconds(10)
            while MonotonicInstant.now() < deadline {
                let now = counts()
                if now.threads <= idleThreads && now.descriptors <= limit { return true }
                _ = try? client.readJSON(timeout: .milliseconds(100))  // the next event, or 100 ms
            }
            return false
        }
        // A meeting while the server answers, so what a first meeting makes once is made.
        let (id, _) = try CallAudioTests.startMeeting(client, seconds: 120, transcribes: false)
        _ = try CallAudioTests.waitForSession(client, "the microphone recorded") {
            $0["audio"]?["seconds"]?.numberValue?.double ?? 0 >= 1
        }
        _ = try client.result("session.end")
        _ = try client.nextEvent("session.ended")
        #expect(released(descriptors: Int.max), "\(counts()) after a meeting, \(idleThreads) threads before")
        let baseline = counts()

        try graph.pause()
        for meeting in 1...3 {
            _ = try client.result("session.start", ["syncup": .string(id), "transcribe": false])
            let error = try client.nextEvent("session.error")
            #expect(error["data"]?["message"]?.stringValue?.contains("does not answer") == true, "\(error)")
            _ = try CallAudioTests.waitForSession(client, "both sources reported") { session in
                ["audio", "callAudio"].allSatisfy {
                    session[$0]?["error"]?.stringValue?.contains("does not answer") == true
                        && session[$0]?["recording"] == false
                }
            }
            _ = try client.result("session.end")
            _ = try client.nextEvent("session.ended")
            #expect(
                released(descriptors: baseline.descriptors),
                "meeting \(meeting) with the server hung left \(counts()), \(baseline) before")
        }
        try graph.resume()
    }

    @Test func aCallSourceThatDoesNotExistIsAWarningAndOneThatVanishesIsWaitedFor() throws {
        let graph = try PipeWireGraph()
        let module = try graph.pactl(["load-module", "module-null-sink", "sink_name=headphones"])
            .filter(\.isNumber)
        // A typo: the server would record some other source under that name, so it is refused.
        let typo = try Self.daemonWithALSAMicrophone(on: graph, ["--call-audio", "headphnes.monitor"])
        let (_, refused) = try CallAudioTests.startMeeting(try typo.client(), seconds: 60, transcribes: false)
        #expect(refused["callAudio"]?["state"] == "failed")
        #expect(
            refused["warnings"]?[0]?.stringValue?.contains("the sound server has no source of that name") == true,
            "\(refused)")
        typo.stop()

        // The named source goes away mid-meeting: not recorded (rather than whatever the server moves the
        // stream to), silence meanwhile, and recorded again once it is back.
        let daemon = try Self.daemonWithALSAMicrophone(on: graph, ["--call-audio", "headphones.monitor"])
        let client = try daemon.client()
        let (_, started) = try CallAudioTests.startMeeting(client, seconds: 60, transcribes: false)
        #expect(started["callAudio"]?["device"] == "headphones.monitor")
        // Recording first: a source removed while its stream is still being created holds pa_simple_new
        // (see the note in PulseCapture), which is another case than a source that goes away.
        _ = try CallAudioTests.waitForSession(client, "the headphones recorded") {
            $0["callAudio"]?["seconds"]?.numberValue?.double ?? 0 >= 0.5
        }
        try graph.pactl(["unload-module", module])
        _ = try CallAudioTests.waitForSession(client, "the call not recording") {
            $0["callAudio"]?["recording"] == false
        }
        try graph.play(try SpeechFixture.say("no blockers for me"), into: "call")
        try graph.pactl(["load-module", "module-null-sink", "sink_name=headphones"])
        _ = try CallAudioTests.waitForSession(client, "the headphones recorded again") {
            $0["callAudio"]?["recording"] == true && $0["callAudio"]?["reconnects"] == 1
        }
        _ = try client.result("session.end")
        let ended = try client.nextEvent("session.ended")
        let base = daemon.dataPath + "/meetings/" + (try #require(ended["data"]?["meeting"]?["id"]?.stringValue))
        let call = try CallAudioTests.samples(ofWAV: base + ".call.wav")
        let microphone = try CallAudioTests.samples(ofWAV: base + ".wav")
        #expect(
            CallAudioTests.loudest(call, from: 0, to: Double(call.count) / 16_000) < 0.001, "nothing from the call sink"
        )
        #expect(abs(microphone.count - call.count) <= 16_000 / 2, "\(microphone.count) vs \(call.count) frames")
    }

    @Test func aSoundServerBackAfterALongAbsenceIsRecordedAgainAtOnce() throws {
        let graph = try PipeWireGraph()
        let daemon = try Self.daemonWithALSAMicrophone(on: graph)
        let client = try daemon.client()
        _ = try CallAudioTests.startMeeting(client, seconds: 120, transcribes: false)
        try graph.kill()
        _ = try CallAudioTests.waitForSession(client, "the call not recording") {
            $0["callAudio"]?["recording"] == false
        }
        // 16 s away: the sound server's watcher, retrying after 1, 2, 4, 8 s… on its own, would next try at
        // 31 s, long after the server is back; the capture's retries every second ask it to try at once.
        try client.waitUntilElapsed(16)
        try graph.restart()
        _ = try CallAudioTests.waitForSession(client, "the call recorded again") {
            $0["callAudio"]?["recording"] == true
        }
    }

    @Test func theMicrophoneNamedAsTheCallIsAWarning() throws {
        let graph = try PipeWireGraph()
        let daemon = try DaemonProcess(
            arguments: ["--no-cue", "--speech-engine", "none", "--call-audio", "mic"], environment: graph.environment)
        let (_, started) = try CallAudioTests.startMeeting(try daemon.client(), seconds: 60, transcribes: false)
        #expect(started["audio"]?["source"] == "mic")
        #expect(started["callAudio"]?["device"] == "mic")
        #expect(
            started["warnings"]?[0]?.stringValue?.hasPrefix("the call's source mic is the microphone itself") == true,
            "\(started)")
    }

    @Test func aCrashLeavesTheCallFileWithItsHeaderRepairedAtTheNextStart() throws {
        let graph = try PipeWireGraph()
        let first = try Self.daemonWithALSAMicrophone(on: graph)
        let client = try first.client()
        let (_, started) = try CallAudioTests.startMeeting(client, seconds: 600, transcribes: false)
        let meetingID = try #require(started["meeting"]?.stringValue)
        try graph.play(try SpeechFixture.say("no blockers for me"), into: "call")
        #expect(first.stop(signal: SIGKILL) == .signaled(SIGKILL))

        let second = try DaemonProcess(
            arguments: ["--audio-device", "null", "--no-cue", "--speech-engine", "none"],
            environment: graph.environment, directory: first.directory)
        _ = try second.client().result("ping")
        for name in ["\(meetingID).wav", "\(meetingID).call.wav"] {
            let wav = try #require(Files.read(second.dataPath + "/meetings/" + name))
            let dataSize = wav[40..<44].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
            #expect(Int(dataSize) == wav.count - 44, "\(name)'s header says all it holds")
            #expect(wav.count > 44 + 16_000, "\(name) holds the audio before the crash")
        }
    }

    @Test func withoutASoundServerRecordsTheMicrophoneThroughALSAAloneAndSaysSo() throws {
        let alsa = try ALSAFixture(microphone: SpeechFixture.silence(seconds: 30))
        let runtime = TemporaryDirectory("no-server")
        let daemon = try DaemonProcess(
            arguments: ["--audio-device", "virtmic", "--no-cue", "--speech-engine", "none"],
            environment: alsa.environment.merging(["XDG_RUNTIME_DIR": runtime.path]) { $1 })
        let client = try daemon.client()
        let (_, started) = try CallAudioTests.startMeeting(client, seconds: 60, transcribes: false)
        #expect(started["warnings"] == [], "auto without a server is not a warning")
        #expect(started["audio"]?["recording"] == true)
        #expect(started["audio"]?["through"] == "ALSA")
        #expect(started["callAudio"]?["state"] == "unavailable")
        #expect(started["callAudio"]?["reason"]?.stringValue?.contains("no sound server") == true)
        let status = try daemon.ctl(["status"]).standardOutput
        #expect(status.contains("call:      unavailable (no sound server"), "\(status)")
        let devices = try daemon.ctl(["devices"]).standardOutput
        #expect(devices.contains("sound server: none"), "\(devices)")
        let ended = try client.result("session.end")
        _ = ended
        let meetingID = try #require(
            try client.nextEvent("session.ended")["data"]?["meeting"]?["id"]?.stringValue)
        let base = daemon.dataPath + "/meetings/" + meetingID
        #expect(access(base + ".wav", F_OK) == 0)
        #expect(access(base + ".call.wav", F_OK) != 0, "no call file without a call")

        // --no-call says why the call is not recorded.
        let noCall = try client.result(
            "session.start", ["syncup": try #require(started["syncup"]), "transcribe": false, "call": false])
        #expect(noCall["callAudio"]?["state"] == "off")
        #expect(noCall["callAudio"]?["reason"] == "--no-call")
    }
}
