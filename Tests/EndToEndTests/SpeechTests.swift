import Foundation
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// Live transcription through the daemon: the microphone is ALSA's file plugin playing espeak-ng speech.
@Suite struct SpeechTests {
    static let sentences = [
        ("yesterday i finished the review", "en-us"),
        ("today i will deploy the service", "en-gb"),
        ("no blockers for me", "en-us+f3"),
    ]

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/pocketsphinx/model/en-us/en-us/mdef")))
    func attributesEveryWordOfThreeVoicesToTheRightAttendee() throws {
        let audio = try SpeechFixture.turns(Self.sentences, slotSeconds: 4) + SpeechFixture.silence(seconds: 10)
        let alsa = try ALSAFixture(microphone: audio)
        let grammar = SpeechFixture.writeGrammar(in: alsa.directory)
        let daemon = try DaemonProcess(
            arguments: [
                "--audio-device", "virtmic", "--no-cue", "--speech-engine", "pocketsphinx", "--speech-grammar", grammar,
            ],
            environment: alsa.environment
        )
        let client = try daemon.client()
        let created = try client.result(
            "syncups.create", ["title": "Design", "duration": 12, "attendees": ["Ann", "Bob", "Cy"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id)])
        #expect(started["transcription"]?["engine"] == "pocketsphinx")

        var sawProvisionalText = false
        var ended: JSONValue?
        let deadline = MonotonicInstant.now() + .seconds(40)
        while ended == nil && MonotonicInstant.now() < deadline {
            let event = try client.readJSON(timeout: .seconds(30))
            if event["event"] == "session.transcript",
                event["data"]?["session"]?["transcription"]?["partial"]?.stringValue?.isEmpty == false
            {
                sawProvisionalText = true
            }
            if event["event"] == "session.ended" { ended = event["data"] }
        }
        #expect(sawProvisionalText, "partial text is published while people speak")
        let saved = try #require(ended?["meeting"])
        #expect(saved["transcript"]?.stringValue == Self.sentences.map(\.0).joined(separator: " "))

        let meetingID = try #require(saved["id"]?.stringValue)
        let meeting = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        let segments = try #require(meeting["segments"]?.arrayValue)
        #expect(segments.map { $0["speaker"]?["name"]?.stringValue } == ["Ann", "Bob", "Cy"])
        #expect(segments.map { $0["text"]?.stringValue } == Self.sentences.map(\.0))
        for (index, segment) in segments.enumerated() {
            // Every word lies inside its speaker's four seconds.
            let words = segment["words"]?.arrayValue ?? []
            #expect(!words.isEmpty, "segment \(index) has its word timings")
            for word in words {
                let start = try #require(word["start"]?.numberValue?.double)
                #expect(start >= Double(index) * 4 && start < Double(index + 1) * 4)
            }
        }

        let printed = try daemon.ctl(["meeting", id, meetingID]).standardOutput
        #expect(
            printed.hasSuffix(
                "\nAnn: yesterday i finished the review\nBob: today i will deploy the service\nCy: no blockers for me\n"
            ))
        let vtt = try daemon.ctl(["export", id, meetingID, "--format", "vtt"]).standardOutput
        #expect(vtt.hasPrefix("WEBVTT\n\n00:00:0"))
        #expect(vtt.contains("<v Bob>today i will deploy the service\n"))
        let srt = try daemon.ctl(["export", id, meetingID, "--format", "srt"]).standardOutput
        #expect(srt.hasPrefix("1\n00:00:0"))
        #expect(srt.contains("\n3\n00:00:0"))
        #expect(srt.contains("Cy: no blockers for me\n"))
        let markdown = try daemon.ctl(["export", id, meetingID]).standardOutput
        #expect(markdown.contains("**Ann:** yesterday i finished the review\n"))
    }

    /// The faster-whisper adapter in contrib, end to end: `make test` installs its venv in .build/whisper-venv
    /// (or SYNCUPS_WHISPER_VENV names one). Whisper is not exact on synthetic voices, so each turn is checked
    /// for its telling words, and for going to the right attendee.
    static let whisperVenv =
        ProcessInfo.processInfo.environment["SYNCUPS_WHISPER_VENV"] ?? BuiltProducts.repositoryRoot
        + "/.build/whisper-venv"

    /// `warm`: the adapter started ahead of the meeting (`--speech-spare-at-start`) and handed to it once its
    /// model is loaded: its times still count from the meeting's first sample (each turn's words are its own).
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: whisperVenv + "/bin/python3")),
        arguments: [false, true])
    func whisperThroughTheCommandEngineAttributesEachTurn(warm: Bool) throws {
        let turns = [
            ("Good morning everyone, let us start the meeting.", "en-us", "morning"),
            ("The release is planned for next Friday.", "en-gb", "friday"),
            ("The customer asked for a new report.", "en-us+f3", "report"),
        ]
        let audio =
            try SpeechFixture.turns(turns.map { ($0.0, $0.1) }, slotSeconds: 5) + SpeechFixture.silence(seconds: 10)
        let alsa = try ALSAFixture(microphone: audio)
        let launcher = BuiltProducts.repositoryRoot + "/contrib/speech/faster-whisper/syncups-whisper"
        var environment = alsa.environment
        environment["SYNCUPS_WHISPER_VENV"] = Self.whisperVenv
        let daemon = try DaemonProcess(
            arguments: ["--audio-device", "virtmic", "--no-cue", "--speech-command", "'\(launcher)' --threads 2"]
                + (warm ? ["--speech-spare-at-start"] : []),
            environment: environment
        )
        let client = try daemon.client()
        if warm {
            // The adapter's log: "ready N s after start", once its model is loaded and warmed up.
            #expect(try waitFor(timeout: .seconds(120)) { daemon.log.contents.contains(" after start (") })
            // Warm once the daemon has read the engine's first line, which may come after the log line's turn.
            #expect(try waitFor(timeout: .seconds(60)) { try client.result("status")["speechSpare"] == "warm" })
        }
        let created = try client.result(
            "syncups.create", ["title": "Release", "duration": 15, "attendees": ["Ann", "Bob", "Cy"]])
        let id = try #require(created["id"]?.stringValue)
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        let started = try client.result("session.start", ["syncup": .string(id)])
        #expect(started["transcription"]?["engine"] == "command")
        let ended = try client.nextEvent("session.ended", timeout: .seconds(90))
        let saved = try #require(ended["data"]?["meeting"])
        let meetingID = try #require(saved["id"]?.stringValue)
        let meeting = try client.result("meetings.get", ["syncup": .string(id), "meeting": .string(meetingID)])
        let segments = try #require(meeting["segments"]?.arrayValue)
        #expect(
            segments.map { $0["speaker"]?["name"]?.stringValue } == ["Ann", "Bob", "Cy"],
            "\(daemon.log.contents.suffix(3000))")
        for (segment, turn) in zip(segments, turns) {
            let text = segment["text"]?.stringValue?.lowercased() ?? ""
            #expect(text.contains(turn.2), "\(turn.2) in \(text)")
        }
        #expect(saved["transcript"]?.stringValue?.contains("❌") == false)
        #expect(daemon.log.contents.contains("the meeting takes the engine started ahead") == warm)
    }

    @Test func goesOnWithoutTranscriptionWhenTheRecognizerCrashes() throws {
        // Speaks the protocol for one second of audio, then crashes.
        let meeting = try ScriptedEngineMeeting(seconds: 4) { _ in
            """
            head -c 32000 > /dev/null
            echo '{"type":"final","text":"I completed the project","start":0,"end":1,"words":[]}'
            exit 3

            """
        }
        let client = meeting.client
        #expect(meeting.started["transcription"]?["engine"] == "command")
        let error = try client.nextEvent("session.error")
        #expect(error["data"]?["message"] == "speech recognition failed: the speech command exited with status 3")
        #expect(error["data"]?["session"]?["transcribing"] == false)
        let ended = try client.nextEvent("session.ended")
        #expect(ended["data"]?["meeting"]?["transcript"] == "I completed the project ❌")
        #expect(ended["data"]?["session"]?["secondsElapsed"] == 4)
    }

    /// Stopping the daemon mid-meeting: the recognizer is told the audio ended and its last words, which it
    /// settles only then, are in the saved meeting.
    @Test func keepsTheLastWordsTheRecognizerSettlesAsTheDaemonStops() throws {
        // Like an engine that decodes the last utterance when its audio ends: nothing until EOF, then a final.
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in
            """
            cat > /dev/null
            echo '{"type":"final","text":"said just before the stop","start":0,"end":1,"words":[]}'

            """
        }
        let daemon = meeting.daemon
        let meetingID = try #require(meeting.started["meeting"]?.stringValue)
        _ = try meeting.client.nextEvent("session.tick")
        #expect(daemon.stop() == .exited(0))
        let file = try #require(Files.read(daemon.dataPath + "/sync-ups.json"))
        let saved = try JSONParser().parse(file)[0]?["meetings"]?[0]
        #expect(saved?["id"]?.stringValue == meetingID)
        #expect(saved?["transcript"] == "said just before the stop")
    }

    /// ...but a recognizer that never finishes does not hold the stop up for more than a few seconds, and
    /// does not outlive the daemon: whether the stop comes mid-meeting or while a save waits for the
    /// recognizer's last words (it has been told to finish already).
    @Test(arguments: [false, true])
    func stopsWithinSecondsWhenTheRecognizerNeverFinishes(whileSaving: Bool) throws {
        let (marker, helper) = (ProcessTable.uniqueSleep(), ProcessTable.uniqueSleep())
        defer { for marker in [marker, helper] { ProcessTable.kill(withArgument: marker) } }
        let meeting = try ScriptedEngineMeeting(seconds: 600) { directory in
            "setsid sleep \(helper) > /dev/null 2>&1 < /dev/null &\n"
                + "cat > /dev/null\ntouch '\(directory.appending("eof"))'\nexec sleep \(marker)\n"
        }
        let (daemon, started) = (meeting.daemon, meeting.started)
        _ = try meeting.client.nextEvent("session.tick")
        if whileSaving {
            _ = try meeting.client.result("session.end", ["action": "save"])
            #expect(try waitFor { Files.exists(meeting.alsa.directory.appending("eof")) }, "the engine got its EOF")
        }
        let stopping = MonotonicInstant.now()
        #expect(daemon.stop() == .exited(0))
        #expect(MonotonicInstant.now() - stopping < .seconds(15), "the 5 s wait, not the engine's 60 s")
        #expect(daemon.log.contents.contains("the recognizer did not finish within 5.0 seconds"))
        #expect(
            Files.readString(daemon.dataPath + "/sync-ups.json")?.contains(started["meeting"]!.stringValue!) == true)
        // Neither the engine (its shell runs the script; it may have become the sleep) nor what it detached
        // outlives the daemon.
        #expect(
            try waitFor {
                [meeting.script, marker, helper].allSatisfy { ProcessTable.processes(withArgument: $0).isEmpty }
            })
    }

    /// A transcript of 600 KB, far over the largest reply: every reply and event stays under the limits,
    /// and a client pages through the whole text and every segment, live and once saved.
    @Test func aSixHundredKilobyteTranscriptIsRecordedSavedAndReadBackWhole() throws {
        let finals = 105
        let words = 480
        let expected = (0..<finals).map { final in
            (0..<words).map { "word\(final)x\(String(repeating: "0", count: 4 - String($0).count))\($0)" }
                .joined(separator: " ")
        }
        let meeting = try ScriptedEngineMeeting(seconds: 600) { directory in
            Files.write(
                directory.appending("engine.py"),
                """
                import json, sys, time
                for final in range(\(finals)):
                    words = ["word%dx%04d" % (final, j) for j in range(\(words))]
                    timed = [{"word": w, "start": final * 0.001 + j * 1e-6, "end": final * 0.001 + j * 1e-6}
                             for j, w in enumerate(words)]
                    print(json.dumps({"type": "final", "text": " ".join(words), "start": 0, "end": 0.1,
                                      "words": timed}), flush=True)
                    time.sleep(0.12)  # 48 KB a second: under the 64 KiB a second a transcript takes
                sys.stdin.buffer.read()
                """)
            return "exec python3 \(directory.appending("engine.py"))"
        }
        let client = meeting.client
        let whole = expected.joined(separator: " ")
        #expect(whole.utf8.count > 600_000)
        let limits = try #require(client.greeting["data"]?["limits"])
        let maxTranscript = try #require(limits["maxTranscriptBytes"]?.numberValue?.int64)

        // Live: status and the session carry a bounded tail; the rest is paged.
        let complete = try waitFor(timeout: .seconds(60)) {
            try client.result("session.get")["transcriptBytes"] == .int(whole.utf8.count)
        }
        #expect(complete, "\(meeting.daemon.log.contents.suffix(3000))")
        let status = try client.result("status")
        let tail = try #require(status["session"]?["transcript"]?.stringValue)
        #expect(tail.utf8.count <= maxTranscript && whole.hasSuffix(tail))
        #expect(status["session"]?["transcriptOffset"] == .int(whole.utf8.count - tail.utf8.count))
        #expect(try Self.pageThrough(client, [:]) == whole)

        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended", timeout: .seconds(30))
        let saved = try #require(ended["data"]?["meeting"])
        #expect(saved["transcriptBytes"] == .int(whole.utf8.count))
        let ids: JSONValue = ["syncup": meeting.started["syncup"] ?? nil, "meeting": saved["id"] ?? nil]
        #expect(try Self.pageThrough(client, ids) == whole)

        // meetings.get pages the segments; syncupsctl puts the pages together.
        var segments: [String] = []
        var next: JSONValue = 0
        while case .number = next {
            let page = try client.result(
                "meetings.get",
                ["syncup": ids["syncup"] ?? nil, "meeting": ids["meeting"] ?? nil, "segmentsOffset": next])
            segments += (page["segments"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }
            next = page["segmentsNext"] ?? .null
        }
        #expect(segments == expected)
        // syncupsctl's 10 s for each reply is a person's wait; a debug daemon paging 600 KB on two loaded cores
        // took longer (exit 69), so these two wait as long as the test's other requests.
        let patience = "\(Int(RawClient.replyDeadline.seconds))"
        let exported = try meeting.daemon.ctl([
            "--timeout", patience, "export", ids["syncup"]?.stringValue ?? "", ids["meeting"]?.stringValue ?? "",
            "--format", "json",
        ])
        #expect(exported.exitCode == 0, "\(exported.standardError)")
        let document = try JSONParser().parse(exported.standardOutput)
        #expect(document["transcript"]?.stringValue == whole)
        #expect(document["segments"]?.arrayValue?.count == finals)
        let shown = try meeting.daemon.ctl([
            "--timeout", patience, "meeting", ids["syncup"]?.stringValue ?? "", ids["meeting"]?.stringValue ?? "",
        ])
        #expect(shown.standardOutput.hasSuffix("Ann: " + expected[finals - 1] + "\n"))
    }

    /// The whole transcript, from `transcript.get` pages.
    static func pageThrough(_ client: RawClient, _ ids: JSONValue) throws -> String {
        var text = ""
        var offset: JSONValue = 0
        while case .number = offset {
            var arguments = ids.objectValue ?? JSONObject()
            arguments.append("offset", offset)
            let page = try client.result("transcript.get", .object(arguments))
            #expect(page["offset"] == offset)
            text += page["text"]?.stringValue ?? ""
            offset = page["next"] ?? .null
        }
        return text
    }

    /// An engine that floods its stdout with lines that are not JSON is stopped after a documented number
    /// of them; the meeting goes on without it, the daemon answers, and its log does not flood.
    /// An engine's 900 KB partial or error message is cut down before it reaches the session: `status`,
    /// `session` and `end` all answer, and `end` reports the meeting it saved.
    @Test(arguments: [
        (#"{"type": "partial", "text": "x" * 900000, "start": 0, "end": 1}"#, "session.transcript"),
        (#"{"type": "error", "message": "E" * 900000}"#, "session.error"),
    ])
    func aHugePartialOrErrorFromTheEngineLeavesEveryReplyWhole(line: String, event: String) throws {
        let meeting = try ScriptedEngineMeeting(seconds: 300) { _ in
            """
            echo '{"type":"progress","time":0}'
            python3 -c 'import json; print(json.dumps(\(line)), flush=True)'
            cat > /dev/null

            """
        }
        // A real shell and python3 make the line and a debug daemon cuts it down: on two loaded cores the
        // event took over 10 s.
        _ = try meeting.client.nextEvent(event, timeout: .seconds(60))
        for command in [["status"], ["session"]] {
            let result = try meeting.daemon.ctl(command)
            #expect(result.exitCode == 0, "\(command): \(result.standardError)")
        }
        let ended = try meeting.daemon.ctl(["end"])
        #expect(ended.exitCode == 0, "\(ended.standardError)")
        #expect(ended.standardOutput.count == 37, "the saved meeting's id: \(ended.standardOutput)")
    }

    /// An engine that never reads its audio but keeps writing finals: those timed past the meeting's end do
    /// not hold its save open (it ends 20 s after the last word within the audio), and their times are the
    /// meeting's.
    @Test func anEngineWritingWordsPastTheMeetingDoesNotHoldItsSave() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 300) { _ in
            """
            i=0
            while [ $i -lt 600 ]; do
              echo '{"type":"progress","time":0}'
              printf '{"type":"final","text":"w%d","start":%d,"end":%d.5}\n' $((i + 100)) $((i + 100)) $((i + 100))
              i=$((i + 1)); sleep 0.5
            done

            """
        }
        let result = try meeting.daemon.ctl(["--timeout", "1", "end"])
        #expect(result.exitCode == 0, "\(result.standardError)")
        let ended = try meeting.client.nextEvent("session.ended", timeout: .seconds(30))
        let segments = try meeting.daemon.client().result(
            "meetings.get",
            ["syncup": meeting.started["syncup"] ?? nil, "meeting": ended["data"]?["meeting"]?["id"] ?? nil])
        for segment in segments["segments"]?.arrayValue ?? [] {
            #expect((segment["end"]?.numberValue?.double ?? 0) < 60, "\(segment)")
        }
    }

    /// A save the engine keeps busy with words within the meeting's audio outlasts `end`'s wait: `end` says
    /// the meeting is still being saved (status 75), not that the daemon is gone.
    @Test func endSaysAMeetingIsStillBeingSavedWhenTheDaemonAnswers() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 300) { _ in
            """
            i=1
            while [ $i -lt 600 ]; do
              printf '{"type":"final","text":"w%d","words":[{"word":"w%d","start":0.%03d,"end":0.%03d}]}\n' $i $i $i $i
              i=$((i + 1)); sleep 0.5
            done

            """
        }
        let result = try meeting.daemon.ctl(["--timeout", "1", "end"])
        #expect(result.exitCode == 75, "\(result.standardError)")
        #expect(result.standardError.contains("is still being saved"), "\(result.standardError)")
        #expect(!result.standardError.contains("start the daemon"), "\(result.standardError)")
    }

    @Test func anEngineWritingGarbageIsStoppedAndTheMeetingGoesOn() throws {
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in "yes 'this is not json' & cat > /dev/null\n" }
        let client = meeting.client
        let error = try client.nextEvent("session.error", timeout: .seconds(20))
        #expect(error["data"]?["message"]?.stringValue?.contains("lines that are not JSON objects") == true)
        #expect(try client.result("ping") == "pong")
        #expect(try client.result("session.get")["state"] == "running")
        _ = try client.result("session.end", ["action": "save"])
        #expect(try client.nextEvent("session.ended")["data"]?["outcome"] == "saved")
        let ignored = meeting.daemon.log.contents.components(separatedBy: "not a JSON object").count - 1
        #expect(ignored < 20, "the log counts ignored lines; it does not copy each one (\(ignored) lines)")
    }

    /// Whatever the engine starts ends with the meeting, however it detached; and an engine that closes its
    /// stdout at the end ends the save at once, without waiting for its exit.
    @Test func anEnginesDetachedChildrenEndWithTheMeetingAndItsClosedOutputEndsTheSave() throws {
        let marker = ProcessTable.uniqueSleep()
        defer { ProcessTable.kill(withArgument: marker) }
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in
            """
            setsid sleep \(marker) > /dev/null 2>&1 < /dev/null &
            cat > /dev/null
            exec 1>&-
            exec sleep 60

            """
        }
        let client = meeting.client
        #expect(try waitFor { !ProcessTable.processes(withArgument: marker).isEmpty })
        _ = try client.result("session.end", ["action": "save"])
        // Well inside the 20 s the save would wait for an engine that never ends its output.
        let ended = try client.nextEvent("session.ended", timeout: .seconds(15))
        #expect(ended["data"]?["outcome"] == "saved")
        #expect(!meeting.daemon.log.contents.contains("did not finish within"))
        #expect(
            try waitFor { ProcessTable.processes(withArgument: marker).isEmpty },
            "the detached child outlived its meeting")
    }

    /// An engine that exited at the end of its input has finished, though a helper it detached
    /// (`setsid helper & exec engine`) holds its stdout open: the save does not wait for the helper (it waited
    /// the 10 s silence limit and ended the transcript with ❌), and the helper ends with the meeting.
    @Test func anEngineThatExitedHasFinishedThoughADetachedHelperHoldsItsOutput() throws {
        let marker = ProcessTable.uniqueSleep()
        defer { ProcessTable.kill(withArgument: marker) }
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in
            """
            setsid sleep \(marker) &
            cat > /dev/null
            echo '{"type":"final","text":"finished","start":0,"end":1,"words":[]}'

            """
        }
        let client = meeting.client
        #expect(try waitFor { !ProcessTable.processes(withArgument: marker).isEmpty }, "the helper started")
        let saving = MonotonicInstant.now()
        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended", timeout: .seconds(20))
        #expect(MonotonicInstant.now() - saving < .seconds(5), "not the 10 s silence limit")
        #expect(ended["data"]?["outcome"] == "saved")
        #expect(ended["data"]?["meeting"]?["transcript"] == "finished")
        #expect(try waitFor { ProcessTable.processes(withArgument: marker).isEmpty }, "the helper outlived its meeting")
        #expect(
            try waitFor {
                ProcessTable.threadNames(of: meeting.daemon.pid).allSatisfy { !$0.hasPrefix("syncups-asr") }
            },
            "the recognizer's threads end: \(ProcessTable.threadNames(of: meeting.daemon.pid))")
    }

    /// Nothing the speech command started outlives a SIGKILLed daemon by more than a few seconds: neither the
    /// engine (the parent-death signal) nor, where user namespaces work, what it detached with `setsid` (the
    /// engine is init of its own PID namespace). Without them only a cgroup reaches the helper (protocol.md).
    @Test func nothingTheSpeechCommandStartedOutlivesAKilledDaemon() throws {
        let (engine, helper) = (ProcessTable.uniqueSleep(), ProcessTable.uniqueSleep())
        defer { for marker in [engine, helper] { ProcessTable.kill(withArgument: marker) } }
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in
            "setsid sleep \(helper) > /dev/null 2>&1 < /dev/null &\nexec sleep \(engine)\n"
        }
        #expect(
            try waitFor {
                !ProcessTable.processes(withArgument: engine).isEmpty
                    && !ProcessTable.processes(withArgument: helper).isEmpty
            }, "the engine and its helper run")
        #expect(meeting.daemon.stop(signal: SIGKILL) == .signaled(SIGKILL))
        let markers = ProcessTable.userNamespacesWork ? [engine, helper] : [engine]
        #expect(
            try waitFor(timeout: .seconds(5)) {
                markers.allSatisfy { ProcessTable.processes(withArgument: $0).isEmpty }
            }, "left running: \(markers.map(ProcessTable.processes(withArgument:)))")
    }

    /// Out of descriptors while a meeting runs (a hard limit of 60, and clients taking all the rest): the
    /// daemon does not spin, the meeting is saved with its transcript once the clients leave, and the
    /// engine and its helper end with it.
    @Test func aMeetingOutOfDescriptorsIsSavedWhole() throws {
        let helper = ProcessTable.uniqueSleep()
        defer { ProcessTable.kill(withArgument: helper) }
        let meeting = try ScriptedEngineMeeting(seconds: 600, wrapper: ["prlimit", "--nofile=60:60"]) { _ in
            """
            setsid sleep \(helper) &
            cat > /dev/null
            echo '{"type":"final","text":"finished","start":0,"end":1,"words":[]}'

            """
        }
        let client = meeting.client
        _ = try client.nextEvent("session.tick")
        var clients: [RawClient] = []
        for _ in 0..<80 { clients.append(try RawClient(path: meeting.daemon.socketPath, readGreeting: false)) }
        #expect(meeting.daemon.log.wait { $0.contains("Too many open files") })
        let saturated = TortureTests.cpuSeconds(meeting.daemon.pid)
        _ = try client.result("session.end", ["action": "save"])
        #expect(
            try !waitFor(timeout: .seconds(2)) { TortureTests.cpuSeconds(meeting.daemon.pid) - saturated > 0.5 },
            "no spinning")
        clients.removeAll()
        let ended = try client.nextEvent("session.ended", timeout: .seconds(20))
        #expect(ended["data"]?["outcome"] == "saved")
        #expect(ended["data"]?["meeting"]?["transcript"] == "finished")
        #expect(try waitFor { ProcessTable.processes(withArgument: helper).isEmpty })
        #expect(try waitFor { (try? meeting.daemon.client().result("ping")) == "pong" })
    }

    /// An engine that closes its stdout mid-meeting, detaches a helper and goes on reading: it has failed
    /// (it can give no more results), is killed with all it started, and the meeting goes on and is saved.
    @Test func anEngineThatClosesItsOutputMidMeetingIsEndedWithItsHelper() throws {
        let helper = ProcessTable.uniqueSleep()
        defer { ProcessTable.kill(withArgument: helper) }
        let meeting = try ScriptedEngineMeeting(seconds: 600) { _ in
            """
            head -c 32000 > /dev/null
            echo '{"type":"final","text":"before","start":0,"end":1,"words":[]}'
            exec 1>&-
            setsid sleep \(helper) > /dev/null 2>&1 < /dev/null &
            exec cat > /dev/null

            """
        }
        let client = meeting.client
        let error = try client.nextEvent("session.error")
        #expect(error["data"]?["message"]?.stringValue?.hasPrefix("speech recognition failed") == true)
        #expect(try waitFor { ProcessTable.processes(withArgument: helper).isEmpty }, "the helper ended with it")
        _ = try client.result("session.end", ["action": "save"])
        let ended = try client.nextEvent("session.ended")
        #expect(ended["data"]?["outcome"] == "saved")
        #expect(ended["data"]?["meeting"]?["transcript"] == "before ❌")
    }

    /// `--speech-engine none` is a choice: a plain `start` records without a transcript and says so once;
    /// only a start that asks for a transcript is refused.
    @Test func recordsWithoutATranscriptWhenTheConfigurationTurnedSpeechOff() throws {
        let daemon = try DaemonProcess(arguments: ["--speech-engine", "none", "--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "x", "attendees": ["A"]])
        let first = try daemon.ctl(["start", "x"])
        #expect(first.exitCode == 0, "\(first.standardError)")
        #expect(
            first.standardError.contains("warning: recording without a transcript: speech recognition is off"),
            "\(first.standardError)")
        #expect(try client.result("session.get")["transcription"]?["engine"] == .null)
        #expect(try daemon.ctl(["end"]).exitCode == 0)
        let second = try daemon.ctl(["start", "x"])
        #expect(second.exitCode == 0)
        #expect(second.standardError.isEmpty, "said once: \(second.standardError)")
        #expect(try daemon.ctl(["end"]).exitCode == 0)
        let asked = try client.request("session.start", ["syncup": created["id"]!, "transcribe": true])
        #expect(asked["error"]?["code"] == "speech_unavailable")
        #expect(try client.result("status")["speechEngine"] == .null)
    }

    /// An engine that cannot be had (`command` without a command) is not a choice: a start that would
    /// transcribe is refused and the error says how to go on.
    @Test func refusesToTranscribeWithoutAnEngineAndSaysHowToGoOn() throws {
        let daemon = try DaemonProcess(arguments: ["--speech-engine", "command", "--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let created = try client.result("syncups.create", ["title": "x", "attendees": ["A"]])
        let reply = try client.request("session.start", ["syncup": created["id"]!])
        #expect(reply["error"]?["code"] == "speech_unavailable")
        #expect(reply["error"]?["message"]?.stringValue?.contains("\"transcribe\": false") == true)
        #expect(
            try client.result("session.start", ["syncup": created["id"]!, "transcribe": false])["state"] == "running")
    }
}

/// A meeting of a one-attendee sync-up of `seconds`, recorded from a silent microphone and transcribed by
/// a shell script standing in for the speech command (it gets the ALSA fixture's directory for its files),
/// with a client subscribed to the session.
struct ScriptedEngineMeeting {
    let alsa: ALSAFixture
    /// The engine's script: the shell that runs it has it in its arguments.
    let script: String
    let daemon: DaemonProcess
    let client: RawClient
    let started: JSONValue

    init(
        seconds: Int, attendees: [String] = ["Ann"], wrapper: [String] = [], spareArguments: [String] = [],
        script: (TemporaryDirectory) -> String
    ) throws {
        alsa = try ALSAFixture(microphone: SpeechFixture.silence(seconds: 20))
        let path = alsa.directory.appending("engine.sh")
        self.script = path
        Files.write(path, script(alsa.directory))
        daemon = try DaemonProcess(
            // The engine started ahead for the next meeting is `SpareEngineTests`' subject; here it is off unless
            // asked for, so that only the meeting's engine runs.
            arguments: ["--audio-device", "virtmic", "--no-cue", "--speech-command", "exec sh \(path)"]
                + (spareArguments.isEmpty ? ["--speech-spare-idle", "0"] : spareArguments),
            environment: alsa.environment, wrapper: wrapper
        )
        client = try daemon.client()
        let created = try client.result(
            "syncups.create",
            ["title": "Solo", "duration": .int(seconds), "attendees": .array(attendees.map(JSONValue.string))])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        started = try client.result("session.start", ["syncup": created["id"]!])
    }
}
