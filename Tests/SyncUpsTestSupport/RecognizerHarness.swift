import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsSpeech
import Synchronization

/// Runs a `SpeechRecognizer` the way a session does, and collects what it reports.
public final class RecognizerHarness: Sendable {
    public let stream: RecognitionStream
    private let box: Box

    public init(_ recognizer: SpeechRecognizer) throws {
        let box = try Box()
        self.box = box
        stream = try recognizer.start { event in box.add(event) }
    }

    private final class Box: Sendable {
        let events = Mutex<[RecognizerEvent]>([])
        let changed: WakeSignal

        init() throws {
            changed = try WakeSignal()
        }

        func add(_ event: RecognizerEvent) {
            events.withLock { $0.append(event) }
            changed.signal()
        }
    }

    public var events: [RecognizerEvent] { box.events.withLock { $0 } }

    /// The results reported, in order.
    public var results: [RecognitionResult] {
        events.compactMap { if case .result(let result) = $0 { result } else { nil } }
    }

    public var finals: [RecognitionResult] { results.filter { $0.kind == .final } }

    /// Feeds `audio` in 100 ms chunks starting at `frame`, as the recorder does; returns the next frame.
    @discardableResult
    public func feed(_ audio: [UInt8], from frame: Int64 = 0) -> Int64 {
        var offset = 0
        var position = frame
        while offset < audio.count {
            let end = min(audio.count, offset + 3200)
            stream.feed(Array(audio[offset..<end]), position)
            position += Int64((end - offset) / 2)
            offset = end
        }
        return position
    }

    /// How long a test waits for a recognizer's event: the engine is a real process (python3, or PocketSphinx on
    /// its own thread) and on two loaded cores one got under 1/20 of a core, so a flood's 4 MiB took over 30 s
    /// to read and a sentence over 30 s to decode. Only a hang waits this long.
    public static let deadline = Duration.seconds(120)

    /// Waits for an event matching `condition`, up to `timeout`.
    @discardableResult
    public func wait(timeout: Duration = RecognizerHarness.deadline, for condition: (RecognizerEvent) -> Bool) -> Bool {
        let deadline = MonotonicInstant.now() + timeout
        while true {
            if events.contains(where: condition) { return true }
            let remaining = deadline - .now()
            guard remaining > .zero else { return false }
            _ = box.changed.wait(timeout: remaining)
        }
    }

    /// `finish`, then waits for `.finished`.
    @discardableResult
    public func finish(timeout: Duration = RecognizerHarness.deadline) -> Bool {
        stream.finish()
        return wait(timeout: timeout) { $0 == .finished }
    }
}
