/// A stable, snake_case error code on the wire. Scripts match on these; the message next to it is for people.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    /// The line is not valid JSON (the reply's id is null: it could not be read).
    public static let parseError = ErrorCode(rawValue: "parse_error")
    /// Valid JSON, but not a request: not an object, no string `cmd`, an `id` that is not a scalar, `args` that is not an object.
    public static let invalidRequest = ErrorCode(rawValue: "invalid_request")
    public static let unknownCommand = ErrorCode(rawValue: "unknown_command")
    public static let invalidArgument = ErrorCode(rawValue: "invalid_argument")
    public static let notFound = ErrorCode(rawValue: "not_found")
    public static let sessionActive = ErrorCode(rawValue: "session_active")
    public static let noSession = ErrorCode(rawValue: "no_session")
    /// The session is in a state where the command does not apply (resume while running, next while ending…).
    public static let invalidState = ErrorCode(rawValue: "invalid_state")
    public static let speechUnavailable = ErrorCode(rawValue: "speech_unavailable")
    public static let lineTooLong = ErrorCode(rawValue: "line_too_long")
    /// A request line stayed incomplete for `partialLineTimeoutSeconds`; the connection is closed.
    public static let requestTimeout = ErrorCode(rawValue: "request_timeout")
    public static let tooManyConnections = ErrorCode(rawValue: "too_many_connections")
    public static let tooManySubscriptions = ErrorCode(rawValue: "too_many_subscriptions")
    public static let permissionDenied = ErrorCode(rawValue: "permission_denied")
    public static let internalError = ErrorCode(rawValue: "internal")
}

/// A refused request: the code for programs and a message for people.
public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    public static func invalidArgument(_ message: String) -> ProtocolError { ProtocolError(.invalidArgument, message) }
    public static func notFound(_ message: String) -> ProtocolError { ProtocolError(.notFound, message) }
}
