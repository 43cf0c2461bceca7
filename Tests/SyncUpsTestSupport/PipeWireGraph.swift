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

    /// Plays S16_LE 16 kHz mono samples into `sink` with `paplay`; `wait` false returns at once (see `Playback`).
    @discardableResult
    public func play(_ bytes: [UInt8], into sink: String, wait: Bool = true) throws -> Playback {
        let path = directory.appending("play-\(UInt64.random(in: 0...UInt64.max)).raw")
        Files.write(path, bytes)
        let process = try Subprocess(
            executable: "/usr/bin/paplay",
            arguments: [
                "--raw", "--format=s16le", "--rate=16000", "--channels=1", "--device=\(sink)",
                "--latency-msec=50", path,
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

    /// A remote attendee speaks: `voice` into the call sink and, if `leaks`, the same voice 3 dB down into
    /// the microphone at the same time (what speakers without a headset do); returns when both are played.
    public func playRemote(_ voice: [UInt8], leaks: Bool) throws {
        let call = try play(voice, into: "call", wait: false)
        if leaks {
            let leaked = voice.withUnsafeBytes { raw in
                raw.bindMemory(to: Int16.self).map { Int16((Double($0) * 0.708).rounded()) }
            }
            try play(leaked.withUnsafeBytes { Array($0) }, into: "micfeed")
        }
        try call.wait()
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
