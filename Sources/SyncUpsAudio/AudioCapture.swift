import CSyncUpsShims
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import Synchronization

/// Captures from a device on its own thread, keeping audio time equal to meeting time.
///
/// Overruns are recovered with `snd_pcm_recover` and counted. A device that disappears (USB microphone
/// unplugged), or a sound server that delivers nothing within its stream's bound (`ETIMEDOUT`: stopped, hung),
/// is reported once and reopened every second, and the time it was missing is filled with silence; it is back
/// (`reconnected`) once a read delivers audio again, not when a sound server's stream merely opens. A device that
/// delivers faster than real time (ALSA's `null` and `file` test plugins) is paced to real time.
public final class AudioCapture: Sendable {
    /// Something the session should hear about; sent from the capture thread.
    public enum Report: Sendable, Equatable {
        case overrun(count: Int)
        case disconnected(AudioError)
        case reconnected(missingSeconds: Double)
        case dropped(frames: Int)
        /// The name stands for another device now (a new default sink), which the capture records instead.
        case switched(device: String)
    }

    public struct Statistics: Sendable, Equatable {
        public var capturedFrames: Int64 = 0
        public var fillerFrames: Int64 = 0
        public var overruns = 0
        public var reconnects = 0
        public var droppedFrames = 0
        public var isDeviceOpen = true
        /// Why the device is not being recorded (the read or reopen that failed), nil while it is.
        public var error: String?
        /// The device being recorded, when its name only chose it (`@call` → `call.monitor`).
        public var device: String?
        /// The loudest 100 ms of the last second, RMS in dBFS (nil before any audio or after pure silence).
        public var level: Double?
        /// The frame (meeting time) after the last 100 ms that carried sound, nil if none did yet.
        public var lastSoundFrame: Int64?
        /// Frames delivered, captured and filler: meeting time.
        public var deliveredFrames: Int64 { capturedFrames + fillerFrames }

        /// Seconds since the source last carried sound (all of the meeting if it never did).
        public var silentSeconds: Double {
            Double(deliveredFrames - (lastSoundFrame ?? 0)) / Double(AudioFormat.sampleRate)
        }

        /// RMS below this (about -60 dBFS) is silence: a device that delivers it is probably the wrong one.
        public static let silenceRMS = 32.0
    }

    /// A read of a sound server's stream that waits this long (five periods) met a server that delivered
    /// nothing meanwhile.
    static let stallDuration = Duration.milliseconds(500)

    private let device: CaptureDevice
    private let deviceName: String
    private let start: MonotonicInstant
    private let output: BlockingQueue<AudioChunk>
    private let report: @Sendable (Report) -> Void
    /// Makes, on the capture thread, what tells its time spent waiting for a core so far (`SchedulingDelay`,
    /// opened once for the thread; a test's own count).
    private let schedulingDelay: @Sendable () -> () -> Duration?
    private let isStopping = Atomic(false)
    /// When `stop` was called (nanoseconds of `MonotonicInstant`), 0 before: the recording ends there, even if
    /// the thread, in a read that waits for a stalled server, ends a little later.
    private let stoppedAt = Atomic<Int64>(0)
    private let wake: WakeSignal
    private let exited: WakeSignal
    private let statistics = Mutex(Statistics())
    private let thread = Mutex<DedicatedThread?>(nil)
    /// Why the device was not there at the start and is waited for (its open's `EAGAIN`); nil if it opened.
    public let waitedFor: AudioError?

    /// Opens `deviceName` now, so a device that cannot be opened is known before the session starts; one
    /// whose open fails with `EAGAIN` (a default to wait for) is tried every second, as one gone. Frame 0
    /// is `start`: two captures given the same start stay in step (silence fills what either misses).
    /// `schedulingDelay` is called once, on the capture thread, and what it returns at each read.
    public init(
        device: CaptureDevice,
        deviceName: String,
        output: BlockingQueue<AudioChunk>,
        start: MonotonicInstant = .now(),
        schedulingDelay: @escaping @Sendable () -> () -> Duration? = { SchedulingDelay().read },
        report: @escaping @Sendable (Report) -> Void
    ) throws(AudioError) {
        self.device = device
        self.deviceName = deviceName
        self.start = start
        self.output = output
        self.schedulingDelay = schedulingDelay
        self.report = report
        do {
            wake = try WakeSignal()
            exited = try WakeSignal()
        } catch {
            throw AudioError(.system, operation: "eventfd", code: -error.errno.rawValue)
        }
        let stream: CaptureStream?
        do {
            stream = try device.open(deviceName)
            waitedFor = nil
            statistics.withLock { $0.device = stream?.device }
        } catch  where error.code == -EAGAIN {
            // A device to wait for (a sound server with no input yet): the thread tries it every second, as one
            // gone, and records from when it comes.
            stream = nil
            waitedFor = error
            statistics.withLock {
                $0.isDeviceOpen = false
                $0.error = error.description
            }
        }
        do {
            let thread = try DedicatedThread(name: "syncups-capture") { [self] in
                run(stream: stream)
                exited.signal()
            }
            self.thread.withLock { $0 = thread }
        } catch {
            stream?.close()
            throw AudioError(.system, operation: "starting the capture thread", code: -error.errno.rawValue)
        }
    }

    public var currentStatistics: Statistics { statistics.withLock { $0 } }

    /// The frames of meeting time up to the stop's instant that the thread has not delivered: what a capture
    /// stuck in a read (a hung sound server) owes its file when `stop` gives up on it.
    public func undeliveredFrames() -> Int {
        Int(max(0, expectedFrames(at: end) - currentStatistics.deliveredFrames))
    }

    /// Where the recording ends: the stop's instant, or now before a stop.
    private var end: MonotonicInstant {
        let stopped = stoppedAt.load(ordering: .relaxed)
        return stopped > 0 ? MonotonicInstant(nanoseconds: stopped) : .now()
    }

    /// The frames of meeting time from `start` to `instant`.
    private func expectedFrames(at instant: MonotonicInstant = .now()) -> Int64 {
        (instant - start).nanoseconds * Int64(AudioFormat.sampleRate) / 1_000_000_000
    }

    /// Asks the thread to stop, without waiting for it: the recording ends now (at the first ask), and nothing
    /// the thread reads after, such as a hung server's audio once it answers again, goes past it. Two captures
    /// asked one after the other end together, and their waits overlap.
    public func requestStop() {
        _ = stoppedAt.compareExchange(expected: 0, desired: MonotonicInstant.now().nanoseconds, ordering: .relaxed)
        isStopping.store(true, ordering: .relaxed)
        wake.signal()
    }

    /// Asks the thread to stop (`requestStop`) and waits up to `timeout` for it; returns whether it ended. (A
    /// read blocked on a stalled test FIFO can outlive the wait; the thread then ends on its own.)
    @discardableResult
    public func stop(timeout: Duration = .seconds(2)) -> Bool {
        requestStop()
        let ended = exited.wait(timeout: timeout)
        if ended { thread.withLock { $0 }?.join() }
        return ended
    }

    // MARK: - The capture thread

    private func run(stream initial: CaptureStream?) {
        var stream: CaptureStream? = initial
        var delivered: Int64 = 0
        var samples = [Int16](repeating: 0, count: AudioFormat.framesPerChunk)
        var recentRMS = [Double](repeating: 0, count: 10)
        var recentIndex = 0
        let period = Int64(AudioFormat.framesPerChunk)
        func deliver(_ bytes: [UInt8], isFiller: Bool) {
            var bytes = bytes
            // Stopping: nothing past the stop's instant (audio read after it, a device paced ahead).
            let stop = stoppedAt.load(ordering: .relaxed)
            if stop > 0 {
                let room = expectedFrames(at: MonotonicInstant(nanoseconds: stop)) - delivered
                guard room > 0 else { return }
                if bytes.count > Int(room) * AudioFormat.bytesPerFrame {
                    bytes.removeLast(bytes.count - Int(room) * AudioFormat.bytesPerFrame)
                }
            }
            let chunk = AudioChunk(bytes: bytes, startFrame: delivered)
            delivered += Int64(chunk.frames)
            statistics.withLock {
                if isFiller { $0.fillerFrames += Int64(chunk.frames) } else { $0.capturedFrames += Int64(chunk.frames) }
            }
            if !output.push(chunk) {
                statistics.withLock { $0.droppedFrames += chunk.frames }
                report(.dropped(frames: chunk.frames))
            }
        }
        /// Silence for time the device could not deliver, keeping `tolerance` frames of ordinary lag.
        func fillGap(tolerance: Int64, until instant: MonotonicInstant = .now()) {
            var missing = expectedFrames(at: instant) - delivered - tolerance
            while missing > 0 {
                let frames = min(missing, period)
                deliver([UInt8](repeating: 0, count: Int(frames) * AudioFormat.bytesPerFrame), isFiller: true)
                missing -= frames
            }
        }
        /// The device is gone (the loop tries to reopen it every second): said once, not at each retry.
        func disconnected(_ error: AudioError) {
            let wasOpen = statistics.withLock {
                let wasOpen = $0.isDeviceOpen
                $0.isDeviceOpen = false
                $0.error = error.description
                return wasOpen
            }
            if wasOpen { report(.disconnected(error)) }
        }
        /// Reopened, but not yet read from: back only once audio comes.
        var isReopened = false
        let schedulingDelay = schedulingDelay()

        while !isStopping.load(ordering: .relaxed) {
            guard let current = stream else {
                // The device is gone: try again every second, and account for the time with silence.
                _ = wake.wait(timeout: .seconds(1))
                if isStopping.load(ordering: .relaxed) { break }
                fillGap(tolerance: 0)
                do {
                    let reopened = try device.open(deviceName)
                    stream = reopened
                    statistics.withLock { $0.device = reopened.device }
                    isReopened = true
                } catch {
                    // Why it is still not recorded, as of this try (said once, at the loss, not each time).
                    statistics.withLock { $0.error = error.description }
                }
                continue
            }
            // Never run ahead of real time by more than a period.
            let ahead = delivered - expectedFrames()
            if ahead > period {
                let wakeAt = start + .nanoseconds((delivered - period) * 1_000_000_000 / Int64(AudioFormat.sampleRate))
                var spec = timespec(
                    tv_sec: Int(wakeAt.nanoseconds / 1_000_000_000), tv_nsec: Int(wakeAt.nanoseconds % 1_000_000_000))
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil)
                continue
            }
            let readStarted = MonotonicInstant.now()
            let delayBefore = current.bufferedFrames == nil ? nil : schedulingDelay()
            let count = samples.withUnsafeMutableBufferPointer { current.read($0.baseAddress!, Int(period)) }
            if count > 0 {
                let bytes = samples.withUnsafeBytes { Array($0.prefix(count * AudioFormat.bytesPerFrame)) }
                let rms = Self.rms(samples.prefix(count))
                recentRMS[recentIndex] = rms
                recentIndex = (recentIndex + 1) % recentRMS.count
                let loudest = recentRMS.max() ?? 0
                if let buffered = current.bufferedFrames {
                    // A sound server that stalled (stopped, hung) captured nothing meanwhile and carries on from
                    // now: the time it missed becomes silence before this chunk, or the file would fall behind
                    // the meeting (and the other source's file) for good. A read that waited this long found the
                    // server's buffer empty, so this chunk is the newest audio; the server's own count of what
                    // it holds is stale for seconds after a stall (libpulse interpolates through it), so it
                    // only serves the other reads. The time the thread waited for a core is not the server's:
                    // starved on a busy machine, the read found the server holding all it captured meanwhile,
                    // and filling that time too put the words after it late (a second and more: into the next
                    // speaker's turn) and left the meeting's last ones unread at the stop.
                    let starved = schedulingDelay().map { $0 - (delayBefore ?? $0) } ?? .zero
                    let waited = MonotonicInstant.now() - readStarted - starved >= Self.stallDuration
                    fillGap(tolerance: Int64(count) + 2 * period + (waited ? 0 : Int64(buffered() ?? 0)))
                }
                deliver(bytes, isFiller: false)
                if isReopened {
                    isReopened = false
                    statistics.withLock {
                        $0.reconnects += 1
                        $0.isDeviceOpen = true
                        $0.error = nil
                    }
                    report(
                        .reconnected(
                            missingSeconds: Double(currentStatistics.fillerFrames) / Double(AudioFormat.sampleRate)))
                }
                statistics.withLock {
                    $0.level = loudest > 0 ? ((20 * log10(loudest / 32_768)) * 10).rounded() / 10 : nil
                    if rms >= Statistics.silenceRMS { $0.lastSoundFrame = $0.deliveredFrames }
                }
                continue
            }
            if count == CaptureStream.deviceChanged {
                // Another device is the default now: record that one from here on, without a gap.
                current.close()
                do {
                    let opened = try device.open(deviceName)
                    stream = opened
                    statistics.withLock { $0.device = opened.device }
                    report(.switched(device: opened.device ?? deviceName))
                } catch {
                    // Gone as it changed, or no device to follow (a default that is no microphone): its words.
                    stream = nil
                    disconnected(error)
                }
                continue
            }
            let error = Int32(count)
            if error == -EAGAIN || error == 0 { continue }
            if error == -EPIPE || error == -ESTRPIPE || error == -EINTR, current.recover(error) == 0 {
                if error == -EPIPE {
                    let overruns = statistics.withLock {
                        $0.overruns += 1
                        return $0.overruns
                    }
                    report(.overrun(count: overruns))
                    fillGap(tolerance: 2 * period)
                }
                continue
            }
            current.close()
            stream = nil
            disconnected(
                AudioError(
                    .system, operation: "reading \(deviceName)", code: error,
                    message: error == -ETIMEDOUT ? "no audio came: the sound server does not answer" : nil))
        }
        stream?.close()
        if stream == nil {
            // Up to the stop, not to the end of a read that waited past it for a stalled server.
            fillGap(tolerance: 0, until: end)
        }
    }
}

extension AudioCapture {
    /// The root mean square of `samples`, 0 for none.
    static func rms(_ samples: ArraySlice<Int16>) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(samples.count)).squareRoot()
    }
}
