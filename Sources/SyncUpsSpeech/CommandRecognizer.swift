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

    public static func recognizer(command: String, environment: [String: String] = Subprocess.currentEnvironment())
        -> SpeechRecognizer
    {
        SpeechRecognizer(name: "command") { (events) throws(SpeechError) in
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
            childEnvironment["SYNCUPS_SAMPLE_RATE"] = "16000"
            let process: Subprocess
            do {
                process = try Subprocess(
                    executable: "/bin/sh",
                    arguments: ["-c", command],
                    environment: childEnvironment,
                    standardInput: .pipe,
                    standardOutput: .pipe,
                    standardError: .pipe,
                    extraDescriptors: [(controlRead, 3)],
                    newProcessGroup: true
                )
            } catch {
                controlRead.close()
                controlWrite.close()
                throw SpeechError("cannot start the speech command: \(error)")
            }
            controlRead.close()
            let shared = Shared(process: process, events: events)
            do {
                _ = try DedicatedThread(name: "syncups-asr-in") {
                    writeInput(queue.items, to: process.standardInput!, control: controlWrite, shared: shared)
                }
                _ = try DedicatedThread(name: "syncups-asr-log") {
                    forwardLog(process.standardError!, events: events)
                }
                _ = try DedicatedThread(name: "syncups-asr-out") {
                    readResults(process.standardOutput!, shared: shared)
                }
            } catch {
                process.send(SIGKILL, toGroup: true)
                throw SpeechError("cannot start the recognizer threads: \(error)")
            }
            return queue.stream { process.send(SIGKILL, toGroup: true) }
        }
    }

    /// What the three threads share about the process.
    final class Shared: Sendable {
        let process: Subprocess
        let events: @Sendable (RecognizerEvent) -> Void
        private let state = Mutex((isFinishing: false, hasFailed: false))

        init(process: Subprocess, events: @escaping @Sendable (RecognizerEvent) -> Void) {
            self.process = process
            self.events = events
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
            process.send(SIGKILL, toGroup: true)
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
                    "time": .double(Double(frame) / 16_000),
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

    private static func forwardLog(_ stderr: FileDescriptor, events: @Sendable (RecognizerEvent) -> Void) {
        var reader = LineReader(fd: stderr, maxLineBytes: 4096, keepsUnterminatedLastLine: true)
        var lines = 0
        var windowStart = MonotonicInstant.now()
        while true {
            let line: ArraySlice<UInt8>
            do {
                line = try reader.nextLine(timeout: nil)
            } catch .tooLong {
                continue
            } catch {
                break
            }
            let now = MonotonicInstant.now()
            if now - windowStart > .seconds(1) {
                windowStart = now
                lines = 0
            }
            lines += 1
            if lines <= 20 { events(.log(String(decoding: line, as: UTF8.self))) }  // at most 20 log lines a second
        }
        stderr.close()
    }

    private static func readResults(_ stdout: FileDescriptor, shared: Shared) {
        var reader = LineReader(fd: stdout, maxLineBytes: maxLineBytes, keepsUnterminatedLastLine: true)
        var windowStart = MonotonicInstant.now()
        var bytesInWindow = 0
        var lastLine = MonotonicInstant.now()
        // Partials are provisional: at most ten a second go on, always the latest.
        var pendingPartial: RecognitionResult?
        var lastPartialSent = MonotonicInstant.now()
        while true {
            let wait = pendingPartial == nil ? silenceLimit : .milliseconds(100)
            let read: Result<ArraySlice<UInt8>, LineReader.Failure>
            do {
                read = .success(try reader.nextLine(timeout: wait))
            } catch .closed, .system {
                break
            } catch {
                read = .failure(error)
            }
            let now = MonotonicInstant.now()
            if let partial = pendingPartial, now - lastPartialSent >= .milliseconds(100) {
                shared.events(.result(partial))
                pendingPartial = nil
                lastPartialSent = now
            }
            switch read {
            case .failure(.timedOut):
                if now - lastLine >= silenceLimit && !shared.hasFailed {
                    shared.fail("the speech command wrote nothing for \(Int(silenceLimit.seconds)) s; killed it")
                }
            case .failure:
                shared.fail("the speech command wrote a line over \(maxLineBytes) bytes; killed it")
            case .success(let line):
                lastLine = now
                if now - windowStart >= .seconds(1) {
                    windowStart = now
                    bytesInWindow = 0
                }
                bytesInWindow += line.count + 1
                if bytesInWindow > maxBytesPerSecond {
                    shared.fail(
                        "the speech command flooded its output (over \(maxBytesPerSecond >> 20) MiB in a second); killed it"
                    )
                    continue
                }
                guard !shared.hasFailed, let result = parse(line, shared: shared) else { continue }
                if result.kind == .partial {
                    pendingPartial = result
                } else {
                    pendingPartial = nil
                    shared.events(.result(result))
                }
            }
        }
        stdout.close()
        let termination = shared.process.wait()
        if !shared.hasFailed {
            if termination != .exited(0) {
                shared.fail("the speech command \(termination)")
            } else if !shared.isFinishing {
                shared.fail("the speech command exited before the meeting ended")
            }
        }
        shared.events(.finished)
    }

    /// A result from one stdout line; other kinds of lines (progress, unknown types) give nil.
    private static func parse(_ line: ArraySlice<UInt8>, shared: Shared) -> RecognitionResult? {
        guard let value = try? JSONParser().parse(line), case .object = value else {
            shared.events(
                .log("ignored a line that is not a JSON object: \(String(decoding: line.prefix(200), as: UTF8.self))"))
            return nil
        }
        switch value["type"]?.stringValue {
        case "partial", "final":
            let words = (value["words"]?.arrayValue ?? []).compactMap(TranscriptWord.init(json:))
            let start = value["start"]?.numberValue?.double ?? words.first?.start ?? 0
            return RecognitionResult(
                kind: value["type"] == "final" ? .final : .partial,
                text: value["text"]?.stringValue ?? words.map(\.word).joined(separator: " "),
                start: start,
                end: value["end"]?.numberValue?.double ?? words.last?.end ?? start,
                words: words
            )
        case "error":
            shared.fail("the speech command reported: \(value["message"]?.stringValue ?? "an error")")
            return nil
        default:
            return nil
        }
    }
}
