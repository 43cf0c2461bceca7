import Glibc
import SyncUpsAudio
import SyncUpsPOSIX
import Synchronization

/// An ALSA configuration for tests on a machine without a sound card (speech-and-audio.md §4.5), loaded
/// through `ALSA_CONFIG_PATH`: `virtmic` captures from a raw file or FIFO with ALSA's `file` plugin, and
/// `sink` appends everything played to a file. The real alsa-lib does all the work.
public final class ALSAFixture {
    public let directory: TemporaryDirectory
    public let configPath: String
    /// What `virtmic` captures: a FIFO when `paced`, else a regular file.
    public let microphonePath: String
    /// Where `sink` writes what is played.
    public let playedPath: String

    public init(microphone: [UInt8]? = nil, paced: Bool = false) throws {
        directory = TemporaryDirectory("alsa")
        configPath = directory.appending("asound.conf")
        microphonePath = directory.appending(paced ? "microphone.fifo" : "microphone.raw")
        playedPath = directory.appending("played.raw")
        if paced {
            guard mkfifo(microphonePath, 0o600) == 0 else { throw TestFailure("mkfifo: \(Errno.current)") }
        } else {
            Files.write(microphonePath, microphone ?? [])
        }
        Files.write(playedPath, [])
        Files.write(
            configPath,
            """
            pcm.virtmic {
                type file
                slave.pcm "null"
                file "/dev/null"
                infile "\(microphonePath)"
                format "raw"
            }
            pcm.sink {
                type file
                slave.pcm "null"
                file "|cat >> \(playedPath)"
                format "raw"
            }

            """
        )
    }

    /// The environment that makes alsa-lib read this configuration after its own.
    public var environment: [String: String] {
        ["ALSA_CONFIG_PATH": "/usr/share/alsa/alsa.conf:" + configPath]
    }

    /// Sets `ALSA_CONFIG_PATH` in this process (for in-process tests of the audio module).
    public func install() {
        setenv("ALSA_CONFIG_PATH", environment["ALSA_CONFIG_PATH"]!, 1)
    }
}

/// Feeds a FIFO in real time, as a microphone would: 3200 bytes (100 ms) every 100 ms, on absolute
/// deadlines, so the `file` plugin's one read per period is always filled (speech-and-audio.md §4.5).
public final class PacedFeeder: Sendable {
    private let thread: DedicatedThread
    private let state = FeederState()

    /// Feeds `audio`, then silence, until stopped.
    public init(fifo: String, audio: [UInt8]) throws {
        signal(SIGPIPE, SIG_IGN)  // the daemon closing its end must not kill the test process
        let state = self.state
        thread = try DedicatedThread(name: "test-feeder") {
            // Opening a FIFO for writing waits for the reader (the daemon's capture).
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { return }
            defer { close(fd) }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var deadline = MonotonicInstant.now()
            state.started(at: deadline)
            var offset = 0
            let chunk = 3200
            while !state.isStopped {
                var bytes = [UInt8](repeating: 0, count: chunk)
                if offset < audio.count {
                    let end = min(audio.count, offset + chunk)
                    bytes.replaceSubrange(0..<(end - offset), with: audio[offset..<end])
                }
                var sent = 0
                while sent < chunk && !state.isStopped {
                    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, chunk - sent) }
                    if written > 0 {
                        sent += written
                    } else if written < 0 && errno == EAGAIN {
                        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&poller, 1, 50)
                    } else {
                        return  // the reader went away
                    }
                }
                offset += chunk
                state.add(sent)
                deadline = deadline + .milliseconds(100)
                var spec = timespec(
                    tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
                    tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil)
            }
        }
    }

    /// Everything fed so far: `audio` followed by zeros.
    public var fedBytes: Int { state.total }

    /// When the reader opened the FIFO and the first 100 ms went in, or nil before: byte `n` of the feed
    /// goes in at this instant + `n / 3200` × 100 ms (on the feeder's absolute deadlines).
    public var startedAt: MonotonicInstant? {
        let nanoseconds = state.start
        return nanoseconds < 0 ? nil : MonotonicInstant(nanoseconds: nanoseconds)
    }

    public func stop() {
        state.stop()
        thread.join()
    }
}

private final class FeederState: Sendable {
    private let stopped = Atomic(false)
    private let count = Atomic(0)
    private let startNanoseconds = Atomic<Int64>(-1)
    var isStopped: Bool { stopped.load(ordering: .relaxed) }
    func stop() { stopped.store(true, ordering: .relaxed) }
    func add(_ bytes: Int) { count.wrappingAdd(bytes, ordering: .relaxed) }
    var total: Int { count.load(ordering: .relaxed) }
    func started(at instant: MonotonicInstant) { startNanoseconds.store(instant.nanoseconds, ordering: .relaxed) }
    var start: Int64 { startNanoseconds.load(ordering: .relaxed) }
}

/// The daemon's speaker-change cue as the bytes a playback device receives.
public enum CueSamples {
    public static let bytes: [UInt8] = CuePlayer.samples.withUnsafeBytes { Array($0) }
}
