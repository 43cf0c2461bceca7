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
        for key in object.keys where key != "id" && key != "cmd" && key != "args" {
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
