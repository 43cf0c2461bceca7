import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// What flows from the meeting to a recognizer's thread, in order.
enum RecognizerInput: Sendable {
    case audio([UInt8], startFrame: Int64)
    case turn(frame: Int64, speaker: Attendee)
    case finish
}

/// The bounded queue in front of a recognizer: the capture side never waits for it. When the recognizer
/// falls behind, that is reported; when the queue is full, the audio is dropped and that is reported too.
final class RecognizerQueue: Sendable {
    /// 30 s of audio in 100 ms chunks.
    static let capacity = 300
    let items: BlockingQueue<RecognizerInput>
    private let events: @Sendable (RecognizerEvent) -> Void
    private let lastReport = Mutex<MonotonicInstant?>(nil)

    init(events: @escaping @Sendable (RecognizerEvent) -> Void) throws(SpeechError) {
        do {
            items = try BlockingQueue(capacity: Self.capacity)
        } catch {
            throw SpeechError("cannot create the recognizer queue: \(error)")
        }
        self.events = events
    }

    /// The `RecognitionStream` the session uses; `finish` pushes the end marker and returns at once.
    func stream(cancel: @escaping @Sendable () -> Void = {}) -> RecognitionStream {
        RecognitionStream(
            feed: { [self] bytes, startFrame in
                guard items.push(.audio(bytes, startFrame: startFrame)) else {
                    report(
                        .dropped(
                            seconds: Double(bytes.count / AudioFormat.bytesPerFrame) / Double(AudioFormat.sampleRate)))
                    return
                }
                // More than 5 s of audio waiting means the recognizer runs slower than real time.
                let queued = items.count
                if queued > 50 { report(.fallingBehind(seconds: Double(queued) / 10)) }
            },
            turn: { [self] frame, speaker in
                // A turn must not be lost even when the queue is full of audio.
                while !items.push(.turn(frame: frame, speaker: speaker)) && items.count > 0 {
                    _ = items.pop()
                }
            },
            finish: { [self] in
                while !items.push(.finish) && items.count > 0 { _ = items.pop() }
            },
            cancel: cancel
        )
    }

    /// Reports trouble at most once every 10 s, so a slow recognizer does not flood the session.
    private func report(_ event: RecognizerEvent) {
        let now = MonotonicInstant.now()
        let shouldReport = lastReport.withLock { last -> Bool in
            if let previous = last, now - previous < .seconds(10) { return false }
            last = now
            return true
        }
        if shouldReport { events(event) }
    }
}
