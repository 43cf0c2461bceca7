import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsVoice
import Synchronization

/// One meeting's speaker encoder: its own thread (`syncups-voice`) behind a bounded queue, fed the audio the
/// recognizer hears from the recorder's writer thread. The feeder never waits: when the encoder falls behind,
/// the queue drops the audio and says so (`dropped`), and the stream starts again after the gap. Each
/// window's embedding goes back to the loop through `onWindow`.
final class VoiceListener: Sendable {
    /// 64 chunks of 0.1 s: the encoder may be 6 s behind before audio is dropped.
    static let capacity = 64

    private let queue: BlockingQueue<(bytes: [UInt8], startFrame: Int64)>
    private let thread: DedicatedThread
    /// Chunks of audio dropped because the encoder was behind.
    let dropped = Atomic<Int>(0)

    init(model: VoiceModel, onWindow: @escaping @Sendable (VoiceWindow) -> Void) throws(SystemError) {
        let queue = try BlockingQueue<(bytes: [UInt8], startFrame: Int64)>(capacity: Self.capacity)
        self.queue = queue
        thread = try DedicatedThread(name: "syncups-voice") {
            let encoder = VoiceEncoder(model: model)
            var stream: VoiceStream?
            while let (bytes, startFrame) = queue.pop() {
                // After a gap (dropped audio), a new stream from where the audio resumes.
                if stream?.end != Int(startFrame) { stream = VoiceStream(encoder: encoder, start: Int(startFrame)) }
                let samples = (0..<bytes.count / 2).map {
                    Float(Int16(bitPattern: UInt16(bytes[2 * $0]) | UInt16(bytes[2 * $0 + 1]) << 8)) / 32767
                }
                for window in stream!.append(samples[...]) { onWindow(window) }
            }
        }
    }

    /// From the recorder's writer thread: never blocks.
    func feed(_ bytes: [UInt8], startFrame: Int64) {
        if !queue.push((bytes, startFrame)) { dropped.wrappingAdd(1, ordering: .relaxed) }
    }

    /// No more audio: the thread embeds what is queued and ends. Blocking: for the clean-up thread.
    func finishAndJoin() {
        queue.close()
        thread.join()
    }
}
