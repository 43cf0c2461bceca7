import Glibc
import SyncUpsPOSIX

/// A real PipeWire sound server (pipewire, wireplumber, pipewire-pulse) in a private runtime directory, with
/// the graph of a desktop in a call, run by `scripts/pipewire-graph`: sink `call` (the default output; the
/// meeting app plays the remote attendees into it), sink `micfeed` (what the microphone hears) and source
/// `mic` (its monitor remapped as a microphone; the default source). Stopped by pid when the value goes.
public final class PipeWireGraph {
    public let directory: TemporaryDirectory
    public let environment: [String: String]
    private var isStopped = false

    static let script = BuiltProducts.repositoryRoot + "/scripts/pipewire-graph"

    /// Why the graph cannot run here (a package is missing), or nil. `make test` installs the packages, so
    /// this is for a bare `swift test` on a machine without them.
    public static let unavailableReason: String? = {
        for program in ["pipewire", "wireplumber", "pipewire-pulse", "pactl", "paplay", "dbus-daemon"] {
            let found = ["/usr/bin/", "/bin/"].contains { access($0 + program, X_OK) == 0 }
            if !found { return "\(program) is not installed (make test installs it with scripts/ensure-packages)" }
        }
        return nil
    }()

    public init() throws {
        directory = TemporaryDirectory("pipewire")
        environment = [
            "XDG_RUNTIME_DIR": directory.path, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path)/bus",
        ]
        try run("start")
    }

    deinit {
        stop()
    }

    /// SIGKILLs the sound server (the bus stays): its clients' connections drop.
    public func kill() throws { try run("kill") }

    /// Starts the server and the graph again after `kill`.
    public func restart() throws { try run("restart") }

    /// SIGSTOPs `pipewire-pulse`: its socket still accepts, nothing answers (a hung or overloaded server).
    public func pause() throws { try signalPulseServer(SIGSTOP) }

    /// SIGCONTs it after `pause`.
    public func resume() throws { try signalPulseServer(SIGCONT) }

    private func signalPulseServer(_ signal: Int32) throws {
        let text = Files.readString(directory.appending("pipewire-pulse.pid"))
        guard let pid = text.flatMap({ pid_t($0.filter(\.isNumber)) }), Glibc.kill(pid, signal) == 0 else {
            throw TestFailure("cannot signal pipewire-pulse (pid file: \(text ?? "none"))")
        }
    }

    public func stop() {
        guard !isStopped else { return }
        isStopped = true
        try? resume()
        _ = try? run("stop")
    }

    /// Runs `pactl` against this server; returns its output, throwing if it fails.
    @discardableResult
    public func pactl(_ arguments: [String]) throws -> String {
        let result = try CommandResult.run("/usr/bin/pactl", arguments, environment: environment)
        guard result.exitCode == 0 else { throw TestFailure("pactl \(arguments) failed: \(result.standardError)") }
        return result.standardOutput
    }

    /// The server's sources, sinks and streams with their states (`RUNNING`, `IDLE`, `SUSPENDED`), for a
    /// failure's message: what the graph looked like when a recording heard nothing.
    public func describe() -> String {
        ["sources", "sinks", "source-outputs", "sink-inputs", "modules"].map { list in
            "\(list):\n" + ((try? pactl(["list", "short", list])) ?? "(pactl failed)")
        }.joined(separator: "\n")
    }

    /// Plays S16_LE 16 kHz mono samples into `sink` with `paplay`; `wait` false returns at once (see `Playback`).
    /// The server holds up to 2 s of it: with 50 ms, a `paplay` starved on loaded cores left the sink gaps of
    /// silence (8-360 ms, up to 1.1 s in one sentence) in the middle of the words, in the recordings as in the
    /// sink, and the grammar recognizer then found no sentence in them (`CallAudioTests`, 6 of 11 runs beside
    /// five busy loops; 0 of 6 with 2 s, and no gap).
    @discardableResult
    public func play(_ bytes: [UInt8], into sink: String, wait: Bool = true) throws -> Playback {
        let path = directory.appending("play-\(UInt64.random(in: 0...UInt64.max)).raw")
        Files.write(path, bytes)
        let process = try Subprocess(
            executable: "/usr/bin/paplay",
            arguments: [
                "--raw", "--format=s16le", "--rate=16000", "--channels=1", "--device=\(sink)",
                "--latency-msec=2000", path,
            ],
            environment: Subprocess.currentEnvironment().merging(environment) { $1 },
            standardInput: .null,
            standardOutput: .null,
            standardError: .pipe
        )
        let playback = Playback(process: process, errors: try OutputCollector(process.standardError!, name: "paplay"))
        if wait { try playback.wait() }
        return playback
    }

    /// From now until the graph stops, what the call plays is heard by the microphone too, 3 dB down
    /// (speakers without a headset); returns once the leak runs. A remote attendee then speaks with
    /// `play(voice, into: "call")`.
    ///
    /// The leak is the call's own playback looped into `micfeed` by the server (`module-loopback` from the
    /// call's monitor, 20 ms), as a room carries what the speakers play: one stream heard twice. A second
    /// `paplay` of the same voice into `micfeed` was two streams that a loaded machine started up to 0.4 s
    /// apart and stalled each on its own, so the "echo" no longer followed the call at all. Loaded before the
    /// meeting, not as the remote attendee starts: the server relinking `micfeed` mid-meeting twice left `mic`
    /// (a remap of its monitor) delivering nothing for the rest of the meeting, in about 50 loaded runs of the
    /// whole suite (`mic` RUNNING, and no record stream listed, the remap's own included).
    public func leakCallIntoMicrophone() throws {
        let module = try pactl([
            "load-module", "module-loopback", "source=call.monitor", "sink=micfeed", "latency_msec=20",
            "source_dont_move=true", "sink_dont_move=true",
        ]).filter(\.isNumber)
        // The loop's stream into micfeed (nothing else plays there meanwhile), 3 dB down once it exists.
        let micfeed = try pactl(["list", "short", "sinks"]).split(separator: "\n")
            .first { $0.split(separator: "\t").dropFirst().first == "micfeed" }?.split(separator: "\t").first
        let deadline = MonotonicInstant.now() + .seconds(10)
        var loop: Substring?
        while loop == nil {
            loop = try pactl(["list", "short", "sink-inputs"]).split(separator: "\n")
                .first { $0.split(separator: "\t").dropFirst().first == micfeed }?.split(separator: "\t").first
            guard loop == nil else { break }
            guard MonotonicInstant.now() < deadline else {
                _ = try? pactl(["unload-module", module])
                throw TestFailure("the loopback into micfeed never ran")
            }
            _ = poll(nil, 0, 20)  // the server has no event for this to wait on: ask again in 20 ms
        }
        try pactl(["set-sink-input-volume", String(loop!), "0.708"])
    }

    /// A `paplay` running.
    public struct Playback {
        let process: Subprocess
        let errors: OutputCollector

        public func wait() throws {
            let status = process.wait()
            errors.join()
            process.closeStreams()
            guard status == .exited(0) else { throw TestFailure("paplay failed (\(status)): \(errors.contents)") }
        }
    }

    private func run(_ command: String) throws {
        let result = try CommandResult.run("/bin/sh", [Self.script, command, directory.path])
        guard result.exitCode == 0 else {
            throw TestFailure("pipewire-graph \(command) failed (\(result.status)): \(result.standardError)")
        }
    }
}
