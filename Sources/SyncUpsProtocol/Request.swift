import SyncUpsJSON

/// One request line: `{"id": <scalar>, "cmd": "<name>", "args": {…}}`.
public struct Request: Sendable, Equatable {
    /// Echoed in the reply; any JSON scalar, `null` when absent.
    public var id: JSONValue
    public var command: String
    public var arguments: JSONObject

    public init(id: JSONValue = .null, command: String, arguments: JSONObject = JSONObject()) {
        self.id = id
        self.command = command
        self.arguments = arguments
    }

    /// The deepest nesting a request may have; more is a `parse_error`, never a stack overflow.
    public static let maxDepth = 32

    /// The longest `id`, as written in the line: a longer one is an `invalid_request` answered with id
    /// `null`, since every reply echoes the id. Echoing a 600,000-byte id made a 600 KB error reply, over
    /// `maxReplyBytes`, and a 1 MiB one (a legal line) went over the output limit, so the client was cut
    /// off with no reply at all. syncupsctl's ids are small integers; 256 bytes is room for a UUID and a
    /// client's own prefix many times over.
    public static let maxIDBytes = 256

    /// Reads a request from one line (without its newline). The error carries the id when one could be read.
    ///
    /// One pass over the line with the strict JSON scanner, building a `JSONValue` only for the id and the
    /// arguments (building one for the whole line was most of a status poll's cost). Every byte is checked,
    /// so a line that is not JSON is a `parse_error` whatever else is wrong with it; otherwise the first
    /// problem in this order is an `invalid_request`: not an object, an `id` that is not a scalar or is longer
    /// than `maxIDBytes`, an unknown
    /// field, no `cmd`, a `cmd` that is not a string, `args` that are neither an object nor null.
    public static func decode(_ line: UnsafeRawBufferPointer) -> Result<Request, RequestDecodingError> {
        var reader = RequestReader(scanner: JSONScanner(bytes: line, maxDepth: maxDepth))
        do throws(JSONParseError) {
            return try reader.read()
        } catch {
            return .failure(
                RequestDecodingError(id: .null, error: ProtocolError(.parseError, "invalid JSON: \(error)")))
        }
    }

    /// The request as one line of JSON, without the newline.
    public func encoded() -> [UInt8] {
        var object = JSONObject()
        if id != .null { object.append("id", id) }
        object.append("cmd", .string(command))
        if !arguments.isEmpty { object.append("args", .object(arguments)) }
        return JSONWriter().encode(.object(object))
    }
}

/// A request line that could not be read, with the id to answer to.
public struct RequestDecodingError: Error, Sendable, Equatable {
    public var id: JSONValue
    public var error: ProtocolError
}

/// The one pass of `Request.decode`: syntax errors are thrown, request errors noted and reported once the
/// whole line has proved to be JSON.
private struct RequestReader {
    var scanner: JSONScanner
    var id: JSONValue = .null
    var command: String?
    var arguments = JSONObject()
    /// The known keys seen (a bit each) and the others, for duplicates.
    var knownKeys: UInt8 = 0
    /// By their bytes: a set, so a line of many thousand keys costs no more than its length, and bytes, so
    /// two spellings of "é" are two keys, as JSON has them.
    var otherKeys = Set<[UInt8]>()
    /// The first problem found of each kind, reported in `Request.decode`'s order.
    var notScalarID: JSONValue?
    /// The length of an `id` over `Request.maxIDBytes`, as written.
    var longIDBytes: Int?
    var unknownKey: String?
    var notStringCommand: JSONValue?
    var notObjectArguments: JSONValue?

    mutating func read() throws(JSONParseError) -> Result<Request, RequestDecodingError> {
        scanner.skipWhitespace()
        guard scanner.current == UInt8(ascii: "{") else {
            let value = try scanner.parseValue(depth: 0)
            try expectEnd()
            return failure(id: .null, "a request must be a JSON object, got \(value.typeName)")
        }
        scanner.index += 1
        if !scanner.consume(UInt8(ascii: "}")) {
            repeat {
                try member()
            } while scanner.consume(UInt8(ascii: ","))
            guard scanner.consume(UInt8(ascii: "}")) else {
                throw JSONParseError(
                    scanner.isAtEnd
                        ? "unterminated object"
                        : "unexpected \(scanner.describeCurrent()) in object, expected ',' or '}'",
                    at: scanner.index)
            }
        }
        try expectEnd()

        if let notScalarID {
            return failure(id: .null, "\"id\" must be a string, number, boolean or null, got \(notScalarID.typeName)")
        }
        if let longIDBytes {
            return failure(
                id: .null, "\"id\" is \(longIDBytes) bytes long; an id may be at most \(Request.maxIDBytes) bytes")
        }
        if let unknownKey {
            return failure(
                id: id,
                "unknown request field \(ErrorQuote.quoted(unknownKey)); a request has \"id\", \"cmd\" and \"args\"")
        }
        if let notStringCommand { return failure(id: id, "\"cmd\" must be a string, got \(notStringCommand.typeName)") }
        guard let command else { return failure(id: id, "missing \"cmd\"") }
        if let notObjectArguments {
            return failure(id: id, "\"args\" must be an object, got \(notObjectArguments.typeName)")
        }
        return .success(Request(id: id, command: command, arguments: arguments))
    }

    /// One `"key": value`; the three known keys are matched without making a String.
    mutating func member() throws(JSONParseError) {
        scanner.skipWhitespace()
        let keyOffset = scanner.index
        let key: String
        if scanner.consumeKey("cmd") {
            key = "cmd"
        } else if scanner.consumeKey("id") {
            key = "id"
        } else if scanner.consumeKey("args") {
            key = "args"
        } else if scanner.current == UInt8(ascii: "\"") {
            key = try scanner.parseString()
        } else {
            throw JSONParseError(
                "unexpected \(scanner.describeCurrent()) in object, expected a string key", at: keyOffset)
        }
        let bit: UInt8 =
            switch key {
            case "cmd": 1
            case "id": 2
            case "args": 4
            default: 0
            }
        let isRepeated = bit == 0 ? !otherKeys.insert(Array(key.utf8)).inserted : knownKeys & bit != 0
        if isRepeated { throw JSONParseError("duplicate key \(ErrorQuote.quoted(key))", at: keyOffset) }
        knownKeys |= bit
        guard scanner.consume(UInt8(ascii: ":")) else {
            throw JSONParseError(
                "unexpected \(scanner.describeCurrent()) after object key, expected ':'", at: scanner.index)
        }
        scanner.skipWhitespace()
        switch key {
        case "cmd" where scanner.current == UInt8(ascii: "\""):
            command = try scanner.parseString()
        case "cmd":
            notStringCommand = try scanner.parseValue(depth: 1)
        case "id":
            let start = scanner.index
            let value = try scanner.parseValue(depth: 1)
            let length = scanner.index - start
            if !value.isScalar {
                notScalarID = value
            } else if length > Request.maxIDBytes {
                longIDBytes = length
            } else {
                id = value
            }
        case "args":
            switch try scanner.parseValue(depth: 1) {
            case .object(let given): arguments = given
            case .null: break
            case let other: notObjectArguments = other
            }
        default:
            _ = try scanner.parseValue(depth: 1)
            if unknownKey == nil { unknownKey = key }
        }
    }

    mutating func expectEnd() throws(JSONParseError) {
        scanner.skipWhitespace()
        guard scanner.isAtEnd else {
            throw JSONParseError("unexpected \(scanner.describeCurrent()) after the JSON value", at: scanner.index)
        }
    }

    func failure(id: JSONValue, _ message: String) -> Result<Request, RequestDecodingError> {
        .failure(RequestDecodingError(id: id, error: ProtocolError(.invalidRequest, message)))
    }
}
