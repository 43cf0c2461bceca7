import SyncUpsCore

/// 100 ms (or less) of captured audio and where it sits on the meeting's timeline.
public struct AudioChunk: Sendable, Equatable {
    /// S16_LE mono samples at 16 kHz.
    public var bytes: [UInt8]
    /// The frame number of the first sample since the meeting started: audio time is meeting time.
    public var startFrame: Int64

    public init(bytes: [UInt8], startFrame: Int64) {
        self.bytes = bytes
        self.startFrame = startFrame
    }

    public var frames: Int { bytes.count / AudioFormat.bytesPerFrame }
}
