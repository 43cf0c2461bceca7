/// 100 ms (or less) of captured audio and where it sits on the meeting's timeline.
public struct AudioChunk: Sendable, Equatable {
    /// S16_LE mono samples at 16 kHz.
    public var bytes: [UInt8]
    /// The frame number of the first sample since the meeting started: audio time is meeting time.
    public var startFrame: Int64
    /// True for silence filled in for time the device was missing.
    public var isFiller: Bool

    public init(bytes: [UInt8], startFrame: Int64, isFiller: Bool = false) {
        self.bytes = bytes
        self.startFrame = startFrame
        self.isFiller = isFiller
    }

    public var frames: Int { bytes.count / AudioFormat.bytesPerFrame }
}
