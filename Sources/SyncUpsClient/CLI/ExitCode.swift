import SyncUpsJSON
import SyncUpsProtocol

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
    /// EX_TEMPFAIL: try again later. The daemon runs but turned the connection away for now
    /// (`too_many_connections`), or what was asked is not done yet (`end`: the meeting is still being saved).
    case temporaryFailure = 75
    /// EX_CANTCREAT: an output file could not be written (`export --output`).
    case cannotCreate = 73

    /// The error code `--json` reports for a failure with this status when nothing more precise is known.
    var errorCode: String {
        switch self {
        case .success: "ok"
        case .failure: "failure"
        case .usage: "usage"
        case .rejected: "rejected"
        case .unavailable: "unavailable"
        case .cannotCreate: "cannot_create"
        case .temporaryFailure: "temporary_failure"
        }
    }
}

/// Why a syncupsctl command failed, and the exit status it leads to.
public struct CLIError: Error, Sendable {
    public var exitCode: ExitCode
    /// What stderr says (for a rejected request, the daemon's code and message).
    public var message: String
    /// The stable snake_case code a program matches on: the daemon's own for a rejected request, else
    /// `usage`, `unavailable`, `failure` or one of the protocol's codes.
    public var code: String
    /// The message alone, without the code in front.
    public var detail: String
    /// No socket could be reached, so the daemon is likely not running: stderr suggests starting it. Not
    /// after a connection was made (a daemon that is slow to answer is running).
    public var suggestsStartingDaemon = false

    public init(_ exitCode: ExitCode, _ message: String, code: String? = nil) {
        self.exitCode = exitCode
        self.message = message
        self.code = code ?? exitCode.errorCode
        self.detail = message
    }

    public static func usage(_ message: String) -> CLIError { CLIError(.usage, message) }

    /// The daemon turned the connection away (status 75): `message` on stderr; `--json`, the bars' tooltip
    /// and `watch.busy` carry the daemon's own code and words, as for a rejected request.
    static func turnedAway(_ message: String, daemonSays error: ProtocolError) -> CLIError {
        var failure = CLIError(.temporaryFailure, message, code: error.code.rawValue)
        failure.detail = error.message
        return failure
    }

    /// No daemon's socket could be reached (status 69, with the hint to start one).
    static func notReached(_ message: String) -> CLIError {
        var error = CLIError(.unavailable, message)
        error.suggestsStartingDaemon = true
        return error
    }

    /// The daemon refused a request: its code and message (`forPeople` on stderr, when it says it better).
    static func rejected(code: String, message: String, forPeople: String? = nil) -> CLIError {
        var error = CLIError(.rejected, "\(code): \(forPeople ?? message)", code: code)
        error.detail = message
        return error
    }

    /// `{"ok":false,"error":{"code","message"}}`: what `--json` prints for a failure, the shape of the
    /// protocol's error replies.
    var document: JSONValue {
        ["ok": false, "error": ["code": .string(code), "message": .string(detail)]]
    }
}
