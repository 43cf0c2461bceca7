import SyncUpsJSON

/// A command's `args`, read with exact types and precise `invalid_argument` messages.
///
/// Unknown argument names are refused, so a typo in a script (`"titel"`) is an error, not a silent no-op.
public struct Arguments: Sendable {
    public let command: String
    public let object: JSONObject

    /// Checks that every argument given is one of `allowed`.
    public init(_ request: Request, allowed: [String]) throws(ProtocolError) {
        command = request.command
        object = request.arguments
        for key in object.keys where !allowed.contains(key) {
            let expected =
                allowed.isEmpty ? "takes no arguments" : "takes " + allowed.map { "\"\($0)\"" }.joined(separator: ", ")
            throw .invalidArgument("unknown argument \"\(key)\" for \(command) (\(expected))")
        }
    }

    private func typeError(_ key: String, _ expected: String, _ value: JSONValue) -> ProtocolError {
        .invalidArgument("\"\(key)\" must be \(expected), got \(value.typeName)")
    }

    public func has(_ key: String) -> Bool { object[key] != nil && object[key] != .null }

    public func string(_ key: String) throws(ProtocolError) -> String {
        guard let value = try optionalString(key) else {
            throw .invalidArgument("missing argument \"\(key)\" for \(command)")
        }
        return value
    }

    public func optionalString(_ key: String) throws(ProtocolError) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let string) = value else { throw typeError(key, "a string", value) }
        return string
    }

    public func int(_ key: String) throws(ProtocolError) -> Int {
        guard let value = try optionalInt(key) else {
            throw .invalidArgument("missing argument \"\(key)\" for \(command)")
        }
        return value
    }

    /// An integer; `90` and `90.0` are accepted, `90.5` and `1e300` are not.
    public func optionalInt(_ key: String) throws(ProtocolError) -> Int? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value else { throw typeError(key, "an integer", value) }
        guard let integer = number.int64, let result = Int(exactly: integer) else {
            throw .invalidArgument("\"\(key)\" must be an integer, got \(JSONWriter().string(value))")
        }
        return result
    }

    public func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard case .bool(let flag) = value else { throw typeError(key, "true or false", value) }
        return flag
    }

    public func optionalArray(_ key: String) throws(ProtocolError) -> [JSONValue]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .array(let elements) = value else { throw typeError(key, "an array", value) }
        return elements
    }

    /// An array of strings, naming the first element that is not one.
    public func optionalStrings(_ key: String) throws(ProtocolError) -> [String]? {
        guard let elements = try optionalArray(key) else { return nil }
        var strings: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let string) = element else {
                throw .invalidArgument("\"\(key)[\(index)]\" must be a string, got \(element.typeName)")
            }
            strings.append(string)
        }
        return strings
    }

    /// One of `choices`, exactly.
    public func optionalChoice(_ key: String, _ choices: [String]) throws(ProtocolError) -> String? {
        guard let value = try optionalString(key) else { return nil }
        guard choices.contains(value) else {
            throw .invalidArgument(
                "\"\(key)\" must be one of \(choices.map { "\"\($0)\"" }.joined(separator: ", ")), got \"\(value)\"")
        }
        return value
    }
}
