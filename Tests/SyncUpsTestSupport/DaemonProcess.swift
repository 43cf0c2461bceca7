import Glibc
import SyncUpsPOSIX

/// The built `syncupsd` running on a temporary socket and data directory, for end-to-end tests.
public final class DaemonProcess {
    public let directory: TemporaryDirectory
    public let socketPath: String
    public let dataPath: String
    public let process: Subprocess
    public let log: OutputCollector
    public private(set) var termination: Subprocess.Termination?

    /// Starts the daemon and waits until it says it is ready (its socket then accepts connections).
    public init(
        arguments: [String] = [],
        environment: [String: String] = [:],
        directory: TemporaryDirectory? = nil,
        waitForReady: Bool = true,
        wrapper: [String] = []
    ) throws {
        let directory = directory ?? TemporaryDirectory("daemon")
        self.directory = directory
        socketPath = directory.appending("syncupsd.sock")
        dataPath = directory.appending("data")
        var fullEnvironment = Subprocess.currentEnvironment()
        fullEnvironment["XDG_CONFIG_HOME"] = directory.appending("config")
        // A runtime directory of its own, removed with `directory`. Without one, libpulse puts its runtime
        // directory in a new `$TMPDIR/pulse-XXXXXXXX` linked from `$XDG_CONFIG_HOME/pulse`: the link went with
        // the test, the directory stayed (thousands in /tmp after a day of suites). A test gives another.
        let runtime = directory.appending("run")
        mkdir(runtime, 0o700)
        fullEnvironment["XDG_RUNTIME_DIR"] = runtime
        // The desktop's session bus only when a test brings its own (`SessionBusFixture`).
        fullEnvironment["DBUS_SESSION_BUS_ADDRESS"] = nil
        for (key, value) in environment { fullEnvironment[key] = value }
        // A wrapper (`setpriv --reuid=…`) runs the daemon through another program.
        let daemonArguments = ["--socket", socketPath, "--data-dir", dataPath, "--log-level", "debug"] + arguments
        process = try Subprocess(
            executable: wrapper.first ?? BuiltProducts.path("syncupsd"),
            arguments: wrapper.isEmpty
                ? daemonArguments : Array(wrapper.dropFirst()) + [BuiltProducts.path("syncupsd")] + daemonArguments,
            environment: fullEnvironment,
            standardInput: .null,
            standardOutput: .null,
            standardError: .pipe
        )
        log = try OutputCollector(process.standardError!, name: "syncupsd-log")
        if waitForReady {
            guard log.wait(until: { $0.contains(" ready on ") || $0.contains("error:") }),
                log.contents.contains(" ready on ")
            else {
                stop()
                throw TestFailure("syncupsd did not become ready:\n\(log.contents)")
            }
        }
    }

    deinit {
        if termination == nil { stop() }
    }

    public var pid: pid_t { process.pid }

    /// SIGTERM, then waits for the exit.
    @discardableResult
    public func stop(signal: CInt = SIGTERM) -> Subprocess.Termination {
        if let termination { return termination }
        process.send(signal)
        let result = process.wait()
        log.join()
        process.closeStreams()
        termination = result
        return result
    }

    /// Waits for the daemon to exit on its own.
    public func waitForExit() -> Subprocess.Termination {
        if let termination { return termination }
        let result = process.wait()
        log.join()
        process.closeStreams()
        termination = result
        return result
    }

    /// A raw protocol client connected to this daemon.
    public func client() throws -> RawClient { try RawClient(path: socketPath) }

    /// Runs `syncupsctl ARGS` against this daemon.
    public func ctl(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try CommandResult.run(
            BuiltProducts.path("syncupsctl"),
            arguments,
            environment: ["SYNCUPSD_SOCKET": socketPath].merging(environment) { $1 }
        )
    }

    /// Runs `syncupsctl ARGS` on a pseudo-terminal (util-linux `script`), typing `input`: what a person at a
    /// terminal sees. Standard output and error both come back in `standardOutput`, as on a screen.
    public func ctlOnTerminal(_ arguments: [String], input: String = "") throws -> CommandResult {
        try CommandResult.runOnTerminal(
            [BuiltProducts.path("syncupsctl")] + arguments, input: input, environment: ["SYNCUPSD_SOCKET": socketPath])
    }
}

extension CommandResult {
    /// Runs a command on a pseudo-terminal with `input` typed into it; its exit status is the command's
    /// (`script` ends with it).
    public static func runOnTerminal(_ command: [String], input: String, environment: [String: String] = [:])
        throws -> CommandResult
    {
        let quoted = command.map { "'" + $0.replacing("'", with: "'\\''") + "'" }.joined(separator: " ")
        var fullEnvironment = Subprocess.currentEnvironment()
        for (key, value) in environment { fullEnvironment[key] = value }
        let process = try Subprocess(
            executable: "/usr/bin/script", arguments: ["-qec", quoted, "/dev/null"], environment: fullEnvironment,
            standardInput: .pipe, standardOutput: .pipe, standardError: .pipe)
        let errors = try OutputCollector(process.standardError!, name: "terminal-stderr")
        let output = try OutputCollector(process.standardOutput!, name: "terminal")
        try process.standardInput!.writeAll(Array(input.utf8))
        output.join()
        errors.join()
        let status = process.wait()
        process.closeStreams()
        return CommandResult(status: status, standardOutput: output.contents, standardError: errors.contents)
    }
}

/// A test's own failure with a message.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// What a finished command printed and how it exited.
public struct CommandResult: Sendable {
    public var status: Subprocess.Termination
    public var standardOutput: String
    public var standardError: String

    public var exitCode: CInt? {
        if case .exited(let code) = status { return code }
        return nil
    }

    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> CommandResult
    {
        var fullEnvironment = Subprocess.currentEnvironment()
        for (key, value) in environment { fullEnvironment[key] = value }
        let process = try Subprocess(
            executable: executable,
            arguments: arguments,
            environment: fullEnvironment,
            standardInput: .null,
            standardOutput: .pipe,
            standardError: .pipe
        )
        let errors = try OutputCollector(process.standardError!, name: "test-stderr")
        let output = String(decoding: try process.standardOutput!.readToEnd(), as: UTF8.self)
        errors.join()
        let status = process.wait()
        process.closeStreams()
        return CommandResult(status: status, standardOutput: output, standardError: errors.contents)
    }
}
