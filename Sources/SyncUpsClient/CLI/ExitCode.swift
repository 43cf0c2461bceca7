/// syncupsctl's exit statuses, from sysexits.h.
public enum ExitCode: Int32, Sendable {
    case success = 0
    case failure = 1
    /// EX_USAGE: the command line is wrong.
    case usage = 64
    /// EX_DATAERR: the daemon rejected the request (its code and message are on stderr).
    case rejected = 65
    /// EX_UNAVAILABLE: the daemon is not running or not reachable.
    case unavailable = 69
}

/// Why a syncupsctl command failed, and the exit status it leads to.
public struct CLIError: Error, Sendable {
    public var exitCode: ExitCode
    public var message: String

    public init(_ exitCode: ExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }

    public static func usage(_ message: String) -> CLIError { CLIError(.usage, message) }
}
