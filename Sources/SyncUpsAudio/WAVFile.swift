import Glibc
import SyncUpsCore
import SyncUpsPOSIX

/// A 16 kHz mono 16-bit WAV file written as it is recorded, whose header is kept true so the file plays
/// even after a crash.
///
/// The 44-byte canonical header is written first with a zero data size; `updateHeader` patches the RIFF and
/// data sizes in place (`pwrite` at offsets 4 and 40). The recorder calls it at least once a second, so a
/// crash leaves a file that plays and lacks at most the last second; `repair` fixes the header of a file
/// left behind from its length.
public final class WAVFile {
    public static let headerSize = 44
    public let path: String
    private let fd: FileDescriptor
    public private(set) var dataBytes: Int64 = 0
    private var headerBytes: Int64 = 0

    /// Creates the file (it must not exist) with mode 0600.
    public init(creating path: String) throws(SystemError) {
        self.path = path
        fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
        do {
            try fd.writeAll(Self.header(dataBytes: 0))
        } catch {
            fd.close()
            unlink(path)
            throw error
        }
    }

    deinit {
        fd.close()
    }

    /// Appends samples (S16_LE bytes).
    /// A failed write (a full disk) leaves nothing: the part the disk took is cut off again, so the file stays
    /// as long as `dataBytes` says and what is appended later starts on a whole frame, where its time is.
    public func append(_ bytes: [UInt8]) throws(SystemError) {
        do {
            try fd.writeAll(bytes)
        } catch {
            let end = off_t(Int64(Self.headerSize) + dataBytes)
            _ = ftruncate(fd.rawValue, end)
            _ = lseek(fd.rawValue, end, SEEK_SET)
            throw error
        }
        dataBytes += Int64(bytes.count)
    }

    /// Appends `frames` frames of silence.
    public func appendSilence(frames: Int) throws(SystemError) {
        var remaining = frames * AudioFormat.bytesPerFrame
        let zeros = [UInt8](repeating: 0, count: min(remaining, 32_000))
        while remaining > 0 {
            let chunk = min(remaining, zeros.count)
            try append(Array(zeros[0..<chunk]))
            remaining -= chunk
        }
    }

    /// Writes the current sizes into the header, if they changed.
    public func updateHeader() throws(SystemError) {
        guard headerBytes != dataBytes else { return }
        try Self.patchSizes(fd, dataBytes: dataBytes)
        headerBytes = dataBytes
    }

    /// Flushes the samples and header to the disk (for power loss; a process crash loses nothing written).
    public func sync() throws(SystemError) {
        try fd.dataSync()
    }

    /// The last header update and sync; the file is complete.
    public func finish() throws(SystemError) {
        try updateHeader()
        try sync()
    }

    public var seconds: Double { Double(dataBytes) / Double(AudioFormat.sampleRate * AudioFormat.bytesPerFrame) }

    // MARK: - Header

    public static func header(dataBytes: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize)
        func append32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        func append16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        let data = UInt32(clamping: dataBytes)
        bytes += Array("RIFF".utf8)
        append32(36 &+ data)
        bytes += Array("WAVEfmt ".utf8)
        append32(16)
        append16(1)  // PCM
        append16(UInt16(AudioFormat.channels))
        append32(UInt32(AudioFormat.sampleRate))
        append32(UInt32(AudioFormat.sampleRate * AudioFormat.channels * AudioFormat.bytesPerFrame))
        append16(UInt16(AudioFormat.channels * AudioFormat.bytesPerFrame))
        append16(16)
        bytes += Array("data".utf8)
        append32(data)
        return bytes
    }

    static func patchSizes(_ fd: FileDescriptor, dataBytes: Int64) throws(SystemError) {
        let data = UInt32(clamping: dataBytes)
        var riff = (36 &+ data).littleEndian
        var size = data.littleEndian
        try fd.pwriteAll(withUnsafeBytes(of: &riff) { Array($0) }, at: 4)
        try fd.pwriteAll(withUnsafeBytes(of: &size) { Array($0) }, at: 40)
    }

    /// The seconds of audio in the WAV file at `path`, from its length; nil if there is no file.
    public static func seconds(at path: String) -> Double? {
        guard let size = FilePath.size(at: path) else { return nil }
        guard size > headerSize else { return 0 }
        return Double((size - Int64(headerSize)) / 2) / Double(AudioFormat.sampleRate)
    }

    /// Makes the header of a file left by a crash agree with its length (whole frames); returns its seconds.
    @discardableResult
    public static func repair(_ path: String) throws(SystemError) -> Double {
        let fd = try FileDescriptor.open(path, O_RDWR | O_NOFOLLOW)
        defer { fd.close() }
        let size = try fd.size()
        guard size >= Int64(headerSize) else {
            try syscall("ftruncate") { ftruncate(fd.rawValue, 0) }
            try fd.writeAll(header(dataBytes: 0))
            return 0
        }
        var dataBytes = size - Int64(headerSize)
        dataBytes -= dataBytes % Int64(AudioFormat.bytesPerFrame)
        try patchSizes(fd, dataBytes: dataBytes)
        try fd.dataSync()
        return Double(dataBytes) / Double(AudioFormat.sampleRate * AudioFormat.bytesPerFrame)
    }
}
