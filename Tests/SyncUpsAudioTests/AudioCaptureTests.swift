import Glibc
import SyncUpsAudio
import SyncUpsPOSIX
import SyncUpsTestSupport
import Synchronization
import Testing

/// A sound server's stream whose third read takes 0.7 s: either the server delivered nothing meanwhile (it
/// stalled: that time is silence in the file, the meeting's time kept), or the capture thread waited for a
/// core all that time while the server kept capturing (a loaded machine: nothing is missing, and silence
/// there would put every later word 0.7 s late). Under two `yes` and the suite, a starved microphone's
/// capture filled 0.8 s at Ann's first word, pushing her into Bob's turn in `CallAudioTests`.
@Suite struct AudioCaptureTests {
    final class SlowServer: Sendable {
        let isStarved: Bool
        private let served = Mutex(0)
        private let reads = Mutex(0)
        /// The run-queue delay the fake adds to the thread's own: the slow read's, when it was starved.
        private let addedDelay = Mutex(Duration.zero)
        /// Never signalled: the slow read waits out its timeout, as a read of a stalled server would.
        private let stall = try! WakeSignal()
        static let slowRead = Duration.milliseconds(700)

        init(isStarved: Bool) { self.isStarved = isStarved }

        var schedulingDelay: @Sendable () -> () -> Duration? {
            {
                let own = SchedulingDelay()
                return { (own.read() ?? .zero) + self.addedDelay.withLock { $0 } }
            }
        }

        var device: CaptureDevice {
            CaptureDevice { _ in
                CaptureStream(
                    read: { buffer, frames in
                        if self.reads.withLock({
                            $0 += 1
                            return $0
                        }) == 3 {
                            _ = self.stall.wait(timeout: Self.slowRead)
                            if self.isStarved { self.addedDelay.withLock { $0 += Self.slowRead } }
                        }
                        return self.served.withLock { served in
                            for index in 0..<frames { buffer[index] = FakeMicrophone.sample(served + index) }
                            served += frames
                            return frames
                        }
                    },
                    recover: { $0 }, close: {},
                    // What the server holds: accurate when the thread was starved, stale after a stall.
                    bufferedFrames: { 11_200 })
            }
        }
    }

    @Test(arguments: [true, false])
    func aReadThatWaitedForACoreFillsNoSilenceAndOneThatWaitedForTheServerDoes(isStarved: Bool) throws {
        let server = SlowServer(isStarved: isStarved)
        let output = try BlockingQueue<AudioChunk>(capacity: 600)
        let capture = try AudioCapture(
            device: server.device, deviceName: "@microphone", output: output,
            schedulingDelay: server.schedulingDelay
        ) { _ in }
        var samples: [Int16] = []
        let deadline = MonotonicInstant.now() + .seconds(20)
        while samples.count < 24_000 && MonotonicInstant.now() < deadline, let chunk = output.pop() {
            samples += chunk.bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
        capture.stop()
        try #require(samples.count >= 24_000, "1.5 s of audio came")
        let silence = samples.count { $0 == 0 }
        if isStarved {
            #expect(capture.currentStatistics.fillerFrames == 0)
            #expect(silence == 0, "the audio runs on without a gap")
            #expect(samples.prefix(24_000).enumerated().allSatisfy { $0.element == FakeMicrophone.sample($0.offset) })
        } else {
            #expect(capture.currentStatistics.fillerFrames > 0, "the stall's time is kept")
            #expect(silence > 0)
        }
    }

    /// Attack 102: a hung server that answers again while the stop waits for its read. The read comes back
    /// after the stop's instant, having waited (so the time is filled as a stall's), and what it brought went
    /// past the meeting's end: both files up to 1.2 s longer than the meeting, with sound from after it. Nothing
    /// is delivered past the stop's instant.
    @Test func aReadThatReturnsAfterTheStopAddsNothingPastIt() throws {
        let entered = try WakeSignal()
        let never = try WakeSignal()
        let reads = Mutex(0)
        let device = CaptureDevice { _ in
            CaptureStream(
                read: { buffer, frames in
                    // The fifth read hangs 0.7 s, as a read of a stalled server does, then brings audio.
                    if reads.withLock({
                        $0 += 1
                        return $0
                    }) == 5 {
                        entered.signal()
                        _ = never.wait(timeout: .milliseconds(700))
                    }
                    for index in 0..<frames { buffer[index] = 1_000 }
                    return frames
                },
                recover: { $0 }, close: {}, bufferedFrames: { 0 })
        }
        let output = try BlockingQueue<AudioChunk>(capacity: 600)
        let start = MonotonicInstant.now()
        let capture = try AudioCapture(device: device, deviceName: "@microphone", output: output, start: start) { _ in }
        entered.wait()
        let stoppedAt = MonotonicInstant.now()
        #expect(capture.stop())
        output.close()
        var frames = 0
        while let chunk = output.pop() { frames += chunk.frames }
        let meeting = Int((stoppedAt - start).nanoseconds * 16_000 / 1_000_000_000)
        // A device that delivers at once is paced up to a period ahead of real time: delivered before the stop.
        #expect(frames <= meeting + 1_600 + 16, "\(frames) frames delivered, the meeting was \(meeting)")
        #expect(frames >= meeting - 1_600, "\(frames) frames delivered, the meeting was \(meeting)")
    }
}
