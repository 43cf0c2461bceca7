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

    /// Reads a request from one line (without its newline). The error carries the id when one could be read.
    public static func decode(_ line: UnsafeRawBufferPointer) -> Result<Request, RequestDecodingError> {
        if let request = decodeCommonShape(line) { return .success(request) }
        return decodeGeneral(line)
    }

    /// `decode` without the fast path: the reference the fuzzer holds `decodeCommonShape` to.
    public static func decodeGeneral(_ line: UnsafeRawBufferPointer) -> Result<Request, RequestDecodingError> {
        let value: JSONValue
        switch JSONParser(maxDepth: maxDepth).parse(buffer: line) {
        case .success(let parsed): value = parsed
        case .failure(let error):
            return .failure(
                RequestDecodingError(id: .null, error: ProtocolError(.parseError, "invalid JSON: \(error)")))
        }
        guard case .object(let object) = value else {
            return .failure(
                RequestDecodingError(
                    id: .null,
                    error: ProtocolError(.invalidRequest, "a request must be a JSON object, got \(value.typeName)")))
        }
        let id = object["id"] ?? .null
        guard id.isScalar else {
            return .failure(
                RequestDecodingError(
                    id: .null,
                    error: ProtocolError(
                        .invalidRequest, "\"id\" must be a string, number, boolean or null, got \(id.typeName)")))
        }
        for member in object.members where member.key != "id" && member.key != "cmd" && member.key != "args" {
            let key = member.key
            return .failure(
                RequestDecodingError(
                    id: id,
                    error: ProtocolError(
                        .invalidRequest, "unknown request field \"\(key)\"; a request has \"id\", \"cmd\" and \"args\"")
                ))
        }
        guard let commandValue = object["cmd"] else {
            return .failure(RequestDecodingError(id: id, error: ProtocolError(.invalidRequest, "missing \"cmd\"")))
        }
        guard case .string(let command) = commandValue else {
            return .failure(
                RequestDecodingError(
                    id: id,
                    error: ProtocolError(.invalidRequest, "\"cmd\" must be a string, got \(commandValue.typeName)")))
        }
        var arguments = JSONObject()
        switch object["args"] {
        case nil, .null?: break
        case .object(let given)?: arguments = given
        case let other?:
            return .failure(
                RequestDecodingError(
                    id: id, error: ProtocolError(.invalidRequest, "\"args\" must be an object, got \(other.typeName)")))
        }
        return .success(Request(id: id, command: command, arguments: arguments))
    }

    /// The usual request, `{"id":…,"cmd":"…","args":{…}}` with keys in any order, read without building a
    /// JSONValue for the whole line: most of a status poll's cost was that tree. Anything else (an error, an
    /// escaped key, a duplicate) returns nil and goes through `decode`'s general path, which alone defines
    /// the errors, so the two can only differ in speed.
    public static func decodeCommonShape(_ line: UnsafeRawBufferPointer) -> Request? {
        var scanner = JSONScanner(bytes: line, maxDepth: maxDepth)
        guard scanner.consume(UInt8(ascii: "{")) else { return nil }
        var id: JSONValue?
        var command: String?
        var arguments: JSONObject?
        repeat {
            scanner.skipWhitespace()
            if scanner.consumeKey("cmd") {
                guard command == nil, scanner.consume(UInt8(ascii: ":")) else { return nil }
                scanner.skipWhitespace()
                guard scanner.current == UInt8(ascii: "\""), let value = try? scanner.parseString() else { return nil }
                command = value
            } else if scanner.consumeKey("id") {
                guard id == nil, scanner.consume(UInt8(ascii: ":")) else { return nil }
                scanner.skipWhitespace()
                guard let value = try? scanner.parseValue(depth: 1), value.isScalar else { return nil }
                id = value
            } else if scanner.consumeKey("args") {
                guard arguments == nil, scanner.consume(UInt8(ascii: ":")) else { return nil }
                scanner.skipWhitespace()
                guard scanner.current == UInt8(ascii: "{"), case .object(let value)? = try? scanner.parseValue(depth: 1)
                else { return nil }
                arguments = value
            } else {
                return nil
            }
        } while scanner.consume(UInt8(ascii: ","))
        guard scanner.consume(UInt8(ascii: "}")), let command else { return nil }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { return nil }
        return Request(id: id ?? .null, command: command, arguments: arguments ?? JSONObject())
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
