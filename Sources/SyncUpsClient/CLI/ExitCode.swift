import SyncUpsJSON

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
    /// EX_CANTCREAT: an output file could not be written (`export --output`).
    case cannotCreate = 73
    /// EX_TEMPFAIL: the daemon answers, but what was asked is not done yet (`end`: the meeting is still
    /// being saved).
    case notYet = 75

    /// The error code `--json` reports for a failure with this status when nothing more precise is known.
    var errorCode: String {
        switch self {
        case .success: "ok"
        case .failure: "failure"
        case .usage: "usage"
        case .rejected: "rejected"
        case .unavailable: "unavailable"
        case .cannotCreate: "cannot_create"
        case .notYet: "not_yet"
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

    public init(_ exitCode: ExitCode, _ message: String, code: String? = nil) {
        self.exitCode = exitCode
        self.message = message
        self.code = code ?? exitCode.errorCode
        self.detail = message
    }

    public static func usage(_ message: String) -> CLIError { CLIError(.usage, message) }

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
