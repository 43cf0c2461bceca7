import Glibc
import SyncUpsJSON
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

/// A desktop notification server on a `SessionBusFixture`'s bus (`Tests/Tools/notification-server`, Python
/// over python3-dbus): it records every `Notify` call, and `invoke` presses a notification's button
/// (`ActionInvoked`). Ended when the value goes.
public final class NotificationServerFixture {
    private let process: Subprocess
    private let output: OutputCollector

    public init(bus: SessionBusFixture) throws {
        var environment = Subprocess.currentEnvironment()
        for (key, value) in bus.environment { environment[key] = value }
        process = try Subprocess(
            executable: "/usr/bin/python3",
            arguments: [BuiltProducts.repositoryRoot + "/Tests/Tools/notification-server"],
            environment: environment,
            standardInput: .pipe,
            standardOutput: .pipe,
            standardError: .null
        )
        output = try OutputCollector(process.standardOutput!, name: "notification-server")
        guard output.wait(until: { $0.hasPrefix("ready\n") }) else {
            process.send(SIGTERM)
            _ = process.wait()
            throw TestFailure("the notification server did not start: \(output.contents)")
        }
    }

    deinit {
        process.send(SIGTERM)
        _ = process.wait()
        process.closeStreams()
    }

    /// Every `Notify` call so far, oldest first.
    public var notifications: [JSONValue] {
        output.contents.split(separator: "\n").dropFirst().compactMap { try? JSONParser().parse(String($0)) }
    }

    /// Waits until a notification satisfies `condition`; returns it, or nil at the deadline.
    public func wait(
        timeout: Duration = .seconds(10), for condition: @escaping (JSONValue) -> Bool
    ) -> JSONValue? {
        var found: JSONValue?
        _ = output.wait(timeout: timeout) { text in
            found = text.split(separator: "\n").dropFirst().compactMap { try? JSONParser().parse(String($0)) }
                .last(where: condition)
            return found != nil
        }
        return found
    }

    /// Presses the button `action` of notification `id`.
    public func invoke(_ id: JSONValue, _ action: String) throws {
        let line = Array("\(id.numberValue?.int64 ?? 0) \(action)\n".utf8)
        _ = try line.withUnsafeBytes { try process.standardInput!.write($0) }
    }
}
