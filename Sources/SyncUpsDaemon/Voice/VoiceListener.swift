import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsVoice
import Synchronization

/// One meeting's speaker encoder: its own thread (`syncups-voice`) behind a bounded queue, fed the audio the
/// recognizer hears from the recorder's writer thread. The feeder never waits: when the encoder falls behind,
/// the queue drops the audio and says so (`dropped`), and the stream starts again after the gap. Each
/// window's embedding goes back to the loop through `onWindow`, with its channel (nil for the microphone of a
/// meeting without the call). A call meeting's two channels come unmixed
/// and are heard each on its own (`CallStreams`: the microphone's echo of the call is not embedded).
final class VoiceListener: Sendable {
    /// 64 chunks of 0.1 s: the encoder may be 6 s behind before audio is dropped.
    static let capacity = 64

    /// A chunk of the microphone alone, or of a call meeting's two channels in step.
    enum Chunk {
        case microphone([Float], startFrame: Int64)
        case call(microphone: [Float], call: [Float], startFrame: Int64)
    }

    private let queue: BlockingQueue<Chunk>
    private let thread: DedicatedThread
    /// Chunks of audio dropped because the encoder was behind.
    let dropped = Atomic<Int>(0)
    /// The frame the audio handed to it so far reaches (from the recorder's writer thread): a window starting
    /// before it was heard before now, however late the encoder embeds it.
    let heardUpTo = Atomic<Int>(0)

    init(
        model: VoiceModel, onWindow: @escaping @Sendable (VoiceWindow, VoiceChannel?) -> Void
    ) throws(SystemError) {
        let queue = try BlockingQueue<Chunk>(capacity: Self.capacity)
        self.queue = queue
        thread = try DedicatedThread(name: "syncups-voice") {
            let encoder = VoiceEncoder(model: model)
            var stream: VoiceStream?
            var streams: CallStreams?
            while let chunk = queue.pop() {
                // After a gap (dropped audio), a new stream from where the audio resumes.
                switch chunk {
                case .microphone(let samples, let startFrame):
                    if stream?.end != Int(startFrame) {
                        stream = VoiceStream(encoder: encoder, start: Int(startFrame))
                    }
                    for window in stream!.append(samples[...]) { onWindow(window, nil) }
                case .call(let microphone, let call, let startFrame):
                    if streams?.end != Int(startFrame) {
                        streams = CallStreams(encoder: encoder, start: Int(startFrame))
                    }
                    for (window, channel) in streams!.append(microphone: microphone[...], call: call[...]) {
                        onWindow(window, channel)
                    }
                }
            }
        }
    }

    /// From the recorder's writer thread: never blocks.
    func feed(_ bytes: [UInt8], startFrame: Int64) {
        let samples = VoiceStream.samples(pcm: bytes)
        heardUpTo.store(Int(startFrame) + samples.count, ordering: .relaxed)
        push(.microphone(samples, startFrame: startFrame))
    }

    /// A call meeting's channels, from the mixer (on either recorder's writer thread): never blocks.
    func feed(microphone: [Int16], call: [Int16], startFrame: Int64) {
        heardUpTo.store(Int(startFrame) + max(microphone.count, call.count), ordering: .relaxed)
        push(
            .call(
                microphone: VoiceStream.samples(microphone), call: VoiceStream.samples(call),
                startFrame: startFrame))
    }

    private func push(_ chunk: Chunk) {
        if !queue.push(chunk) { dropped.wrappingAdd(1, ordering: .relaxed) }
    }

    /// No more audio: the thread embeds what is queued and ends. Blocking: for the clean-up thread.
    func finishAndJoin() {
        queue.close()
        thread.join()
    }
}
