import Glibc
import SyncUpsPOSIX

/// A private D-Bus session bus (`dbus-daemon --session`) in a temporary directory, the desktop's bus for a
/// test: `environment` points a daemon and `playerctl` at it. `stop` and `start` take it away and bring it
/// back on the same address. Stopped by pid when the value goes.
public final class SessionBusFixture {
    public let directory: TemporaryDirectory
    public let address: String
    public var environment: [String: String] { ["DBUS_SESSION_BUS_ADDRESS": address] }
    private var process: Subprocess?

    /// Why the bus or playerctl cannot run here, or nil. `make test` installs them.
    public static let unavailableReason: String? = {
        for program in ["dbus-daemon", "playerctl", "busctl"] {
            let found = ["/usr/bin/", "/bin/"].contains { access($0 + program, X_OK) == 0 }
            if !found { return "\(program) is not installed (make test installs it with scripts/ensure-packages)" }
        }
        return nil
    }()

    public init() throws {
        directory = TemporaryDirectory("bus")
        address = "unix:path=\(directory.appending("bus"))"
        try start()
    }

    deinit { stop() }

    /// Starts the bus and waits until it listens (it prints its address once it does).
    public func start() throws {
        guard process == nil else { return }
        let started = try Subprocess(
            executable: "/usr/bin/dbus-daemon",
            arguments: ["--session", "--nofork", "--nopidfile", "--address=\(address)", "--print-address=1"],
            environment: Subprocess.currentEnvironment(),
            standardInput: .null,
            standardOutput: .pipe,
            standardError: .null
        )
        process = started
        let output = try OutputCollector(started.standardOutput!, name: "dbus-daemon")
        guard output.wait(until: { $0.contains("\n") }) else {
            stop()
            throw TestFailure("dbus-daemon did not start")
        }
    }

    /// Ends the bus (SIGTERM): every connection to it drops.
    public func stop() {
        guard let process else { return }
        self.process = nil
        process.send(SIGTERM)
        _ = process.wait()
        process.closeStreams()
    }

    /// Runs `playerctl` on this bus.
    public func playerctl(_ arguments: [String]) throws -> CommandResult {
        try CommandResult.run("/usr/bin/playerctl", ["--player=syncupsd"] + arguments, environment: environment)
    }

    /// Runs `busctl --user` on this bus.
    public func busctl(_ arguments: [String]) throws -> CommandResult {
        try CommandResult.run("/usr/bin/busctl", ["--user"] + arguments, environment: environment)
    }
}
