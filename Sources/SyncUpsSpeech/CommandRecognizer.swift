import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import Synchronization

/// An external recognizer process, started per meeting with `/bin/sh -c COMMAND`, speaking the protocol in
/// protocol.md ("The speech command"): raw PCM on stdin, speaker turns as JSON lines on descriptor 3,
/// results as JSON lines on stdout, its log on stderr.
///
/// It must write a line at least every 5 s (`progress` will do); 10 s of silence means it hung, and it is
/// killed. One that floods its output, writes lines over 1 MiB, crashes or exits with an error is reported
/// as failed; the meeting goes on without transcription.
public enum CommandRecognizer {
    public static let silenceLimit = Duration.seconds(10)
    public static let maxLineBytes = 1 << 20
    public static let maxBytesPerSecond = 4 << 20
    /// Lines that are not JSON objects are ignored (and counted in the log once a second); this many within
    /// `badLineWindow` means the engine is broken, and it is stopped.
    public static let maxBadLines = 100
    /// The most settled text a second that goes on to the transcript; the results past it are dropped.
    public static let maxTextPerSecond = 64 << 10
    /// The most of a partial's text that is kept: its tail, where the words are still changing. A partial
    /// is shown in `status` and events, whose replies are bounded.
    public static let maxPartialBytes = 4 << 10
    /// The most of an engine's `error` message that is reported (its start).
    public static let maxErrorMessageBytes = 1 << 10
    /// How many words a result may have beyond its text's own word count; the rest are dropped.
    public static let wordSlack = 16
    /// The most words one result keeps, whatever its text.
    public static let maxWordsPerResult = 2_000
    public static let badLineWindow = Duration.seconds(10)
    /// The most lines a second an engine started ahead may write before its meeting: with no audio it has
    /// nothing to say but that it is up (and `progress`, every few seconds); more is a flood, and it is killed.
    public static let maxLinesPerSecondWhileWaiting = 20
    /// After the engine closes its stdout, how long it has to exit before its process group is killed; and
    /// after it exited, how long its stdout is read on while something it started still holds it open.
    public static let exitGrace = Duration.seconds(1)
    /// How often reading its stdout looks whether the engine has exited.
    static let exitPoll = Duration.milliseconds(250)

    /// `clock` times the engine's output: the windows of `maxTextPerSecond` and of `maxBytesPerSecond` (a test
    /// holds it still, so a loaded machine reading a burst slowly cannot spread it over two windows) and the
    /// `silenceLimit` since its last line, counted from the start (a test moves it past the limit instead of
    /// waiting 10 s). How often its stdout is polled, and the exit grace, are the real process's time.
    ///
    /// `prepare` starts the command before its meeting (a spare): it gets no audio until a meeting takes it, and
    /// its timestamps count from the audio it is then given (the meeting's start), as protocol.md says. Its
    /// first JSON line (`ready`) is remembered for the meeting; its log lines and its death go to `idle`. It is
    /// bound as a meeting's engine is: silent 10 s, flooding, or too many bad lines, it is killed (its group).
    public static func recognizer(
        command: String, environment: [String: String] = Subprocess.currentEnvironment(),
        clock: @escaping @Sendable () -> MonotonicInstant = { .now() }
    ) -> SpeechRecognizer {
        SpeechRecognizer(name: "command") { (events) throws(SpeechError) in
            try launch(command: command, environment: environment, clock: clock, sink: EventSink(attachedTo: events))
        } prepare: { (idle) throws(SpeechError) in
            let sink = EventSink(idle: idle)
            let stream = try launch(command: command, environment: environment, clock: clock, sink: sink)
            return PreparedRecognition(
                attach: { events in sink.attach(events) ? stream : nil },
                discard: {
                    sink.discard()
                    stream.finish()
                    stream.cancel()
                })
        }
    }

    /// Starts the command, its events to `sink`.
    static func launch(
        command: String, environment: [String: String], clock: @escaping @Sendable () -> MonotonicInstant,
        sink: EventSink
    ) throws(SpeechError) -> RecognitionStream {
        BlockingWork.check("starting the speech command")
        let events: @Sendable (RecognizerEvent) -> Void = { sink.send($0) }
        let queue = try RecognizerQueue(events: events)
        let controlRead: FileDescriptor
        let controlWrite: FileDescriptor
        do {
            (controlRead, controlWrite) = try FileDescriptor.pipe()
        } catch {
            throw SpeechError("cannot create the control pipe: \(error)")
        }
        var childEnvironment = environment
        childEnvironment["SYNCUPS_CONTROL_FD"] = "3"
        childEnvironment["SYNCUPS_SAMPLE_RATE"] = String(AudioFormat.sampleRate)
        let process: Subprocess
        do {
            // Supervised from its start: a sweep for orphans (`Descendants.endOrphans`) never takes it.
            process = try Descendants.supervised.withLock { (supervised) throws(SystemError) in
                let process = try Subprocess(
                    executable: "/bin/sh",
                    arguments: ["-c", command],
                    environment: childEnvironment,
                    standardInput: .pipe,
                    standardOutput: .pipe,
                    standardError: .pipe,
                    extraDescriptors: [(controlRead, 3)],
                    containment: .supervised
                )
                supervised.insert(process.pid)
                return process
            }
        } catch {
            controlRead.close()
            controlWrite.close()
            throw SpeechError("cannot start the speech command: \(error)")
        }
        controlRead.close()
        if !process.isContained {
            events(
                .log(
                    "no PID namespace for the speech command (user namespaces are unavailable): should syncupsd be killed, what the engine detached from its process group ends only with a cgroup that holds syncupsd (a systemd unit's)"
                ))
        }
        let shared = Shared(process: process, events: events, clock: clock, isWaiting: { sink.isWaiting })
        do {
            _ = try DedicatedThread(name: "syncups-asr-in") {
                writeInput(queue.items, to: process.standardInput!, control: controlWrite, shared: shared)
            }
            _ = try DedicatedThread(name: "syncups-asr-log") {
                forwardLog(process.standardError!, shared: shared)
            }
            _ = try DedicatedThread(name: "syncups-asr-out") {
                readResults(process.standardOutput!, shared: shared)
            }
        } catch {
            process.send(SIGKILL, toGroup: true)
            throw SpeechError("cannot start the recognizer threads: \(error)")
        }
        return queue.stream { shared.killGroup() }
    }

    /// Where an engine's events go: the meeting's handler, or, for a spare not taken yet, `idle` (its `ready`,
    /// also kept for the meeting, its log and its death; anything else is dropped: it has heard no audio).
    final class EventSink: Sendable {
        private enum Target {
            case waiting(isReady: Bool)
            case attached(@Sendable (RecognizerEvent) -> Void)
            /// Died before a meeting took it, or discarded: nothing more is reported.
            case gone
        }
        private let target: Mutex<Target>
        private let idle: @Sendable (RecognizerEvent) -> Void

        init(attachedTo events: @escaping @Sendable (RecognizerEvent) -> Void) {
            target = Mutex(.attached(events))
            idle = { _ in }
        }

        init(idle: @escaping @Sendable (RecognizerEvent) -> Void) {
            target = Mutex(.waiting(isReady: false))
            self.idle = idle
        }

        func send(_ event: RecognizerEvent) {
            // Under the lock: a meeting's events stay in order with the `ready` its attach replays.
            let idleEvent: RecognizerEvent? = target.withLock { target in
                switch target {
                case .attached(let events):
                    events(event)
                    return nil
                case .gone:
                    return nil
                case .waiting:
                    switch event {
                    case .ready:
                        target = .waiting(isReady: true)
                        return event
                    case .failed:
                        target = .gone
                        return event
                    case .log:
                        return event
                    case .result, .fallingBehind, .dropped, .finished:
                        return nil
                    }
                }
            }
            if let idleEvent { idle(idleEvent) }
        }

        /// Whether the engine was waiting, up (it wrote its first line), and is now the meeting's. One not up
        /// yet may be loading or may have hung: the meeting starts a fresh one rather than find out.
        func attach(_ events: @escaping @Sendable (RecognizerEvent) -> Void) -> Bool {
            target.withLock { target in
                guard case .waiting(isReady: true) = target else { return false }
                target = .attached(events)
                events(.ready)
                return true
            }
        }

        func discard() { target.withLock { $0 = .gone } }

        var isWaiting: Bool {
            target.withLock {
                if case .waiting = $0 { true } else { false }
            }
        }
    }

    /// What the three threads share about the process.
    final class Shared: Sendable {
        let process: Subprocess
        let events: @Sendable (RecognizerEvent) -> Void
        let clock: @Sendable () -> MonotonicInstant
        /// When the engine started, on `clock`: the first line is due within `silenceLimit` of it.
        let started: MonotonicInstant
        private let state = Mutex((isFinishing: false, hasFailed: false))

        /// Whether the engine is a spare no meeting has taken yet (`EventSink`).
        let isWaiting: @Sendable () -> Bool

        init(
            process: Subprocess, events: @escaping @Sendable (RecognizerEvent) -> Void,
            clock: @escaping @Sendable () -> MonotonicInstant, isWaiting: @escaping @Sendable () -> Bool = { false }
        ) {
            self.process = process
            self.events = events
            self.clock = clock
            self.isWaiting = isWaiting
            started = clock()
        }

        /// Held while the engine's process group is signalled or the engine reaped: once reaped, its pid (and
        /// so its group id) may be anybody's, and nothing signals it any more.
        private let reaping = Mutex(false)

        /// SIGKILLs the engine and its whole process group, unless the engine has been reaped.
        func killGroup() {
            reaping.withLock { isReaped in
                if !isReaped { killEngineAndGroup() }
            }
        }

        /// Kills what is left of the group, then reaps the engine.
        func reap() -> Subprocess.Termination {
            reaping.withLock { isReaped in
                killEngineAndGroup()
                isReaped = true
                return process.wait()
            }
        }

        /// The engine's process group, and the engine itself: one that left its group (`setpgid` into another
        /// of the daemon's session) is not in it any more (attack 93: without a PID namespace it ran on after
        /// its spare ended, one more each time). Not reaped yet, so its pid is still its own.
        private func killEngineAndGroup() {
            process.send(SIGKILL, toGroup: true)
            process.send(SIGKILL)
        }

        var isFinishing: Bool { state.withLock { $0.isFinishing } }
        func markFinishing() { state.withLock { $0.isFinishing = true } }

        /// Reports the first failure only, and kills the engine's whole process group.
        func fail(_ message: String) {
            let isFirst = state.withLock { state -> Bool in
                defer { state.hasFailed = true }
                return !state.hasFailed
            }
            guard isFirst else { return }
            events(.failed(message))
            killGroup()
        }

        var hasFailed: Bool { state.withLock { $0.hasFailed } }
    }

    // MARK: - Threads

    private static func writeInput(
        _ items: BlockingQueue<RecognizerInput>, to stdin: FileDescriptor, control: FileDescriptor, shared: Shared
    ) {
        var isStdinOpen = true
        var isControlOpen = true
        // Frames written to stdin: the stream stays continuous from the meeting's start (protocol.md), so
        // audio the queue dropped becomes silence of the same length.
        var writtenFrames: Int64 = 0
        while let item = items.pop() {
            switch item {
            case .audio(let bytes, let startFrame):
                let gap = max(0, startFrame - writtenFrames)
                let audio = gap == 0 ? bytes : [UInt8](repeating: 0, count: Int(gap) * 2) + bytes
                writtenFrames = startFrame + Int64(bytes.count / 2)
                // A dead engine makes this fail with EPIPE; keep draining the queue until `finish`.
                if isStdinOpen && (try? stdin.writeAll(audio)) == nil { isStdinOpen = false }
            case .turn(let frame, let speaker):
                guard isControlOpen else { continue }
                let line: JSONValue = [
                    "type": "turn",
                    "frame": .number(.int(frame)),
                    "time": .double(Double(frame) / Double(AudioFormat.sampleRate)),
                    "speaker": speaker.json,
                ]
                if (try? control.writeAll(JSONWriter().encode(line) + [0x0A])) == nil { isControlOpen = false }
            case .finish:
                shared.markFinishing()
                stdin.close()
                control.close()
                return
            }
        }
    }

    /// The engine's stderr, to the daemon's log. It is held to its output's budget (`maxBytesPerSecond`): a
    /// flood is the engine's failure, and its log is then no longer read (a writer still holding the pipe
    /// blocks, or gets EPIPE), rather than read at a core's cost for as long as it goes on.
    private static func forwardLog(_ stderr: FileDescriptor, shared: Shared) {
        let events = shared.events
        var reader = LineReader(fd: stderr, maxLineBytes: 4096, keepsUnterminatedLastLine: true)
        // At most 20 lines a second reach the daemon's loop and log; the rest are summed up.
        let throttle = LogThrottle()
        func forward(_ decision: LogThrottle.Decision, _ line: String) {
            for summary in decision.summaries { events(.log(summary.line)) }
            if decision.logsMessage { events(.log(line)) }
        }
        var windowStart = shared.clock()
        var bytesInWindow = 0
        while true {
            let line: ArraySlice<UInt8>
            do {
                line = try reader.nextLine(timeout: nil)
            } catch .tooLong {
                bytesInWindow += 4096
                continue
            } catch {
                break
            }
            let now = shared.clock()
            if now - windowStart >= .seconds(1) {
                windowStart = now
                bytesInWindow = 0
            }
            bytesInWindow += line.count + 1
            if bytesInWindow > maxBytesPerSecond {
                shared.fail(
                    "the speech command flooded its log (over \(maxBytesPerSecond >> 20) MiB of stderr in a second); killed it"
                )
                break
            }
            let text = String(decoding: line, as: UTF8.self)
            forward(throttle.admit("stderr", text, level: .info, burst: 20), text)
        }
        for summary in throttle.takeAllSummaries() { events(.log(summary.line)) }
        stderr.close()
    }

    private static func readResults(_ stdout: FileDescriptor, shared: Shared) {
        var reader = LineReader(fd: stdout, maxLineBytes: maxLineBytes, keepsUnterminatedLastLine: true)
        var windowStart = shared.clock()
        var bytesInWindow = 0
        var textWindowStart = shared.clock()
        var textInWindow = 0
        var droppedFinals = 0
        var hasReportedDroppedWords = false
        func reportDropped() {
            shared.events(
                .log(
                    "dropped \(droppedFinals) results over the \(maxTextPerSecond >> 10) KiB of text a second a transcript takes"
                ))
        }
        var lastLine = shared.started
        // Partials are provisional: at most ten a second go on, always the latest.
        var pendingPartial: RecognitionResult?
        var lastPartialSent = MonotonicInstant.now()
        var badLines = BadLines()
        // Lines in the window of `bytesInWindow`: a spare before its meeting may write few.
        var linesInWindow = 0
        var isReady = false
        // When the engine was first seen to have exited: a process it started (`setsid helper &`) may hold
        // its stdout open for ever, and the engine's end is the end of its output after `exitGrace`.
        var lastExitCheck = MonotonicInstant.now()
        var exitedAt: MonotonicInstant?
        reading: while true {
            let wait = pendingPartial == nil ? exitPoll : .milliseconds(100)
            let read: Result<ArraySlice<UInt8>, LineReader.Failure>
            do {
                read = .success(try reader.nextLine(timeout: wait))
            } catch .closed, .system {
                break
            } catch {
                read = .failure(error)
            }
            let now = MonotonicInstant.now()
            if now - lastExitCheck >= exitPoll {
                lastExitCheck = now
                if let exitedAt, now - exitedAt >= exitGrace {
                    shared.events(.log("the speech command exited but something it started holds its output open"))
                    break reading
                }
                if exitedAt == nil && shared.process.hasEnded { exitedAt = now }
            }
            if let partial = pendingPartial, now - lastPartialSent >= .milliseconds(100) {
                shared.events(.result(partial))
                pendingPartial = nil
                lastPartialSent = now
            }
            switch read {
            case .failure(.timedOut):
                if shared.clock() - lastLine >= silenceLimit && !shared.hasFailed {
                    shared.fail("the speech command wrote nothing for \(Int(silenceLimit.seconds)) s; killed it")
                }
            case .failure:
                shared.fail("the speech command wrote a line over \(maxLineBytes) bytes; killed it")
            case .success(let line):
                let budgetNow = shared.clock()
                lastLine = budgetNow
                if budgetNow - windowStart >= .seconds(1) {
                    windowStart = budgetNow
                    bytesInWindow = 0
                    linesInWindow = 0
                }
                bytesInWindow += line.count + 1
                linesInWindow += 1
                // Whether it still waits is asked (a lock) only past the count, not at every line of a meeting.
                if linesInWindow > maxLinesPerSecondWhileWaiting && shared.isWaiting() {
                    shared.fail(
                        "the speech command wrote over \(maxLinesPerSecondWhileWaiting) lines in a second before its meeting; killed it"
                    )
                    continue
                }
                if bytesInWindow > maxBytesPerSecond {
                    shared.fail(
                        "the speech command flooded its output (over \(maxBytesPerSecond >> 20) MiB in a second); killed it"
                    )
                    continue
                }
                guard !shared.hasFailed else { continue }
                guard let value = try? JSONParser().parse(line), case .object = value else {
                    badLines.count(line, at: now, shared: shared)
                    continue
                }
                badLines.report(at: now, shared: shared)
                if !isReady {
                    isReady = true
                    shared.events(.ready)
                }
                guard let parsed = parse(value, shared: shared) else { continue }
                let result = parsed.result
                if parsed.droppedWords > 0 && !hasReportedDroppedWords {
                    // Once a meeting: an engine that does it once does it on every line.
                    hasReportedDroppedWords = true
                    shared.events(
                        .log(
                            "dropped \(parsed.droppedWords) words of a result beyond its text's (at most \(wordSlack) more than its text has, \(maxWordsPerResult) in all); later results are trimmed alike"
                        ))
                }
                if result.kind == .partial {
                    pendingPartial = result
                } else {
                    pendingPartial = nil
                    // Speech is a few dozen bytes a second: more than `maxTextPerSecond` is not speech, and
                    // is dropped (and counted) rather than grow the transcript and the journal without end.
                    let textNow = shared.clock()
                    if textNow - textWindowStart >= .seconds(1) {
                        if droppedFinals > 0 { reportDropped() }
                        textWindowStart = textNow
                        textInWindow = 0
                        droppedFinals = 0
                    }
                    // Words take memory, journal and details as text does: they count against the same budget.
                    // A result's words normally repeat its text, so the larger of the two counts, not both.
                    let wordBytes = result.words.reduce(0) { $0 + $1.word.utf8.count + 1 }
                    textInWindow += max(result.text.utf8.count, wordBytes)
                    if textInWindow > maxTextPerSecond {
                        droppedFinals += 1
                        continue
                    }
                    shared.events(.result(result))
                }
            }
        }
        stdout.close()
        // The latest partial still held back by the ten a second: the engine's last words as it left them
        // (attack 101: "one two three", written 20 ms after "one two" just before the engine exited, was lost).
        if let partial = pendingPartial, !shared.hasFailed { shared.events(.result(partial)) }
        badLines.report(at: .now(), force: true, shared: shared)
        if droppedFinals > 0 { reportDropped() }
        if shared.isFinishing && !shared.hasFailed {
            // Its stdout is closed: no result can come any more, so the save need not wait for the exit.
            shared.events(.finished)
            let termination = endProcess(shared)
            if termination != .exited(0) { shared.events(.log("the speech command ended: \(termination)")) }
            return
        }
        let termination = endProcess(shared)
        if !shared.hasFailed {
            if termination != .exited(0) {
                shared.fail("the speech command \(termination)")
            } else if !shared.isFinishing {
                shared.fail("the speech command exited before the meeting ended")
            }
        }
        shared.events(.finished)
    }

    /// Waits `exitGrace` for the engine to exit after closing its stdout, then kills its process group;
    /// either way ends whatever it left running elsewhere (`Descendants`), and returns how it ended.
    private static func endProcess(_ shared: Shared) -> Subprocess.Termination {
        let process = shared.process
        _ = MonotonicInstant.poll(until: .now() + exitGrace) { process.hasEnded }
        // Before reaping it, while its process group cannot be anybody else's: whatever it left in its group.
        let termination = shared.reap()
        Descendants.supervised.withLock { _ = $0.remove(process.pid) }
        // Anything it detached into another group (setsid, a double fork) came to us as the subreaper.
        Descendants.endOrphans()
        return termination
    }

    /// Lines that are not JSON objects: counted, logged at most once a second with the count, and too many
    /// within `badLineWindow` stop the engine.
    struct BadLines {
        private var sinceReport = 0
        private var example = ""
        private var lastReport = MonotonicInstant.now()
        private var windowStart = MonotonicInstant.now()
        private var inWindow = 0

        mutating func count(_ line: ArraySlice<UInt8>, at now: MonotonicInstant, shared: Shared) {
            if now - windowStart >= badLineWindow {
                windowStart = now
                inWindow = 0
            }
            inWindow += 1
            sinceReport += 1
            if example.isEmpty { example = String(decoding: line.prefix(200), as: UTF8.self) }
            if inWindow > maxBadLines {
                report(at: now, force: true, shared: shared)
                shared.fail(
                    "the speech command wrote over \(maxBadLines) lines that are not JSON objects within \(Int(badLineWindow.seconds)) s; stopped it"
                )
                return
            }
            report(at: now, shared: shared)
        }

        /// Logs what was ignored since the last report, at most once a second (or now, if `force`).
        mutating func report(at now: MonotonicInstant, force: Bool = false, shared: Shared) {
            guard sinceReport > 0, force || now - lastReport >= .seconds(1) else { return }
            let lines = sinceReport == 1 ? "a line" : "\(sinceReport) lines"
            shared.events(
                .log("ignored \(lines) that \(sinceReport == 1 ? "is" : "are") not a JSON object, e.g.: \(example)"))
            sinceReport = 0
            example = ""
            lastReport = now
        }
    }

    /// A result from one stdout line's object, with how many of its words were dropped; other kinds of lines
    /// (progress, unknown types) give nil.
    private static func parse(_ value: JSONValue, shared: Shared) -> (result: RecognitionResult, droppedWords: Int)? {
        switch value["type"]?.stringValue {
        case "partial", "final":
            let kind: RecognitionResult.Kind = value["type"] == "final" ? .final : .partial
            let givenText = value["text"]?.stringValue
            let allWords = value["words"]?.arrayValue ?? []
            var wordLimit = maxWordsPerResult
            if let givenText {
                wordLimit = min(wordLimit, givenText.split(whereSeparator: \.isWhitespace).count + wordSlack)
            }
            let words = allWords.prefix(wordLimit).compactMap(TranscriptWord.init(json:))
            var text = givenText ?? words.map(\.word).joined(separator: " ")
            if kind == .partial { text = tail(of: text, maxBytes: maxPartialBytes) }
            let start = TranscriptWord.clamped(value["start"]?.numberValue?.double ?? words.first?.start ?? 0)
            let result = RecognitionResult(
                kind: kind,
                text: text,
                start: start,
                end: TranscriptWord.clamped(value["end"]?.numberValue?.double ?? words.last?.end ?? start),
                words: words
            )
            return (result, max(0, allWords.count - wordLimit))
        case "error":
            let message = value["message"]?.stringValue ?? "an error"
            shared.fail("the speech command reported: \(excerpt(of: message, maxBytes: maxErrorMessageBytes))")
            return nil
        default:
            return nil
        }
    }

    /// The last `maxBytes` of `text` at most, whole characters.
    static func tail(of text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var start = text.endIndex
        var bytes = 0
        while start > text.startIndex {
            let previous = text.index(before: start)
            bytes += text.utf8.distance(from: previous, to: start)
            if bytes > maxBytes { break }
            start = previous
        }
        return String(text[start...])
    }

    /// The first `maxBytes` of `text` at most, whole characters, and how long it was.
    static func excerpt(of text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var end = text.startIndex
        var bytes = 0
        while end < text.endIndex {
            let next = text.index(after: end)
            bytes += text.utf8.distance(from: end, to: next)
            if bytes > maxBytes { break }
            end = next
        }
        return "\(text[..<end])… (\(text.utf8.count) bytes in all)"
    }
}
