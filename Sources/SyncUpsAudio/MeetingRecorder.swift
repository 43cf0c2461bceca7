import Glibc
import SyncUpsPOSIX
import Synchronization

/// Records a meeting's audio: a capture thread reads the device, a writer thread appends to the WAV (header
/// updated every second, data synced every five) and hands each chunk on to the speech pipeline.
///
/// The file is written as it is recorded, so the daemon never holds a meeting in memory. A failing disk is
/// reported once; the time it missed becomes silence when writing works again, so the audio stays aligned
/// with the meeting.
public final class MeetingRecorder: Sendable {
    /// What the session hears about, from the recorder's threads.
    public enum Trouble: Sendable, Equatable {
        case capture(AudioCapture.Report)
        case writeFailed(SystemError)
        case writeRecovered
    }

    public struct Statistics: Sendable, Equatable {
        public var capture: AudioCapture.Statistics
        public var writtenSeconds: Double
        public var writeError: String?
        /// What is wrong with this recording now: the file's write error, else the capture's.
        public var error: String? { writeError ?? capture.error }
    }

    public let wavPath: String
    private let capture: AudioCapture
    /// Why the device was not there at the start (`AudioCapture.waitedFor`).
    public var waitedFor: AudioError? { capture.waitedFor }
    private let chunks: BlockingQueue<AudioChunk>
    private let writer: DedicatedThread
    private let progress = WriteProgress()
    private let isStopped = Mutex(false)

    /// What the writer thread has written so far, read by the loop for the session's statistics.
    private final class WriteProgress: Sendable {
        let state = Mutex<(seconds: Double, error: String?)>((0, nil))
        /// Silence to append at the end: the time a capture that never came back from its read missed.
        let tailFrames = Mutex(0)
    }

    /// Opens the device and creates the WAV; throws if either fails (the session then runs without audio).
    /// Recorders given the same `start` write files that stay in step, frame for frame. `isWanted`, asked once
    /// the device is open, false makes no file and throws (an open that answered after its meeting gave it up).
    public init(
        device: CaptureDevice,
        deviceName: String,
        wavPath: String,
        start: MonotonicInstant = .now(),
        isWanted: () -> Bool = { true },
        onTrouble: @escaping @Sendable (Trouble) -> Void,
        onAudio: @escaping @Sendable (AudioChunk) -> Void
    ) throws(RecorderError) {
        BlockingWork.check("opening the capture device \(deviceName)")
        self.wavPath = wavPath
        do throws(SystemError) {
            // 60 s of audio may queue up before chunks are dropped (and that reported).
            chunks = try BlockingQueue(capacity: 600)
        } catch {
            throw .file(error)
        }
        do throws(AudioError) {
            capture = try AudioCapture(device: device, deviceName: deviceName, output: chunks, start: start) { report in
                onTrouble(.capture(report))
            }
        } catch {
            throw .device(error)
        }
        // The file once the device is open (its first chunks wait in the queue): an open that hangs, or a daemon
        // that stops while it does, leaves no file of a meeting that has no audio (attack 37b's E3); nor does
        // one that answers after that, while the daemon may be exiting.
        guard isWanted() else {
            capture.stop()
            throw .file(SystemError("the recording was given up while its device opened", Errno(rawValue: ECANCELED)))
        }
        let wav: WAVFile
        do throws(SystemError) {
            wav = try WAVFile(creating: wavPath)
        } catch {
            capture.stop()
            throw .file(error)
        }
        let chunks = self.chunks
        let progress = self.progress
        do throws(SystemError) {
            writer = try DedicatedThread(name: "syncups-audio") {
                Self.write(chunks, to: wav, progress: progress, onTrouble: onTrouble, onAudio: onAudio)
            }
        } catch {
            capture.stop()
            unlink(wavPath)
            throw .file(error)
        }
    }

    public var statistics: Statistics {
        let written = progress.state.withLock { $0 }
        return Statistics(
            capture: capture.currentStatistics, writtenSeconds: written.seconds, writeError: written.error)
    }

    /// The recording ends now (at the first ask): said without waiting, so that two recorders stopped one after
    /// the other end together (`AudioCapture.requestStop`).
    public func requestStop() {
        capture.requestStop()
    }

    /// Stops capturing, writes what is queued, and completes the WAV, as long as the meeting up to the stop
    /// (`requestStop`'s, else now); `keepsFile` false deletes it (discard). A meeting that is saved
    /// stops its recorder twice (to settle, then to finish): only the first call stops, and a concurrent second
    /// one waits for it.
    public func stop(keepsFile: Bool) {
        isStopped.withLock { isStopped in
            guard !isStopped else { return }
            isStopped = true
            // Still blocked in a read (a sound server that stopped answering): the file is as long as the
            // meeting all the same, silence for the rest, in step with the other source's. Set before the
            // queue closes, which is when the writer reads it.
            if !capture.stop() {
                progress.tailFrames.withLock { $0 = capture.undeliveredFrames() }
            }
            chunks.close()
            writer.join()
        }
        if !keepsFile { unlink(wavPath) }
    }

    private static func write(
        _ chunks: BlockingQueue<AudioChunk>,
        to wav: WAVFile,
        progress: WriteProgress,
        onTrouble: @Sendable (Trouble) -> Void,
        onAudio: @Sendable (AudioChunk) -> Void
    ) {
        var unwrittenFrames = 0
        var lastHeaderUpdate = MonotonicInstant.now()
        var lastSync = lastHeaderUpdate
        var failure: SystemError?
        while let chunk = chunks.pop() {
            onAudio(chunk)
            do {
                if unwrittenFrames > 0 {
                    try wav.appendSilence(frames: unwrittenFrames)
                    unwrittenFrames = 0
                }
                try wav.append(chunk.bytes)
                let now = MonotonicInstant.now()
                if now - lastHeaderUpdate >= .seconds(1) {
                    try wav.updateHeader()
                    lastHeaderUpdate = now
                }
                if now - lastSync >= .seconds(5) {
                    try wav.sync()
                    lastSync = now
                }
                if failure != nil {
                    failure = nil
                    onTrouble(.writeRecovered)
                }
            } catch {
                unwrittenFrames += chunk.frames
                if failure == nil { onTrouble(.writeFailed(error)) }
                failure = error
            }
            progress.state.withLock { $0 = (wav.seconds, failure?.description) }
        }
        unwrittenFrames += progress.tailFrames.withLock { $0 }
        do {
            if unwrittenFrames > 0 { try wav.appendSilence(frames: unwrittenFrames) }
            try wav.finish()
        } catch {
            onTrouble(.writeFailed(error))
        }
        progress.state.withLock { $0 = (wav.seconds, failure?.description) }
    }
}

/// Why recording could not start.
public enum RecorderError: Error, Sendable, Equatable, CustomStringConvertible {
    case device(AudioError)
    case file(SystemError)

    public var description: String {
        switch self {
        case .device(let error): "cannot open the microphone: \(error)"
        case .file(let error): "cannot create the audio file: \(error)"
        }
    }
}
