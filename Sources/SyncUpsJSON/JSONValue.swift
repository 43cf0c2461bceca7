/// A JSON document held in memory, with numbers kept exact and object members kept in order.
///
/// syncupsd reads and writes JSON itself rather than through `Codable` and Foundation's `JSONDecoder`, for
/// the socket protocol: a request's `args` are any JSON, checked field by field with errors that name the
/// field; a bad line must get a message with its byte offset, duplicate keys and invalid UTF-8 must be
/// refused, and nesting and size have hard limits (a hostile client must not get a stack overflow); and the
/// request path is what bars poll, so it avoids a tree where it can (`Request.decode`, `status`). The strict
/// parser is fuzzed (`make fuzz`). `sync-ups.json` has its own reader and writer over the same scanner
/// (`SyncUpsFile`), tested byte for byte against Foundation's `JSONEncoder`, which is what the app uses.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

// MARK: - Literals

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .number(.int(value)) }
    public init(floatLiteral value: Double) { self = .number(.double(value)) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { JSONObject.Member(key: $0.0, value: $0.1) }))
    }
}

// MARK: - Convenience initialisers

extension JSONValue {
    /// An integer value.
    public static func int(_ value: Int) -> JSONValue { .number(.int(Int64(value))) }

    /// A floating-point value.
    public static func double(_ value: Double) -> JSONValue { .number(.double(value)) }

    /// A string value, or `null` when `value` is nil.
    public static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
}

// MARK: - Reading

extension JSONValue {
    /// The name of this value's JSON type, for error messages ("expected a string, got an array").
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    public var isNull: Bool {
        if case .null = self { true } else { false }
    }

    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    public var numberValue: JSONNumber? {
        if case .number(let value) = self { value } else { nil }
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { value } else { nil }
    }

    /// The member named `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// The element at `index` when this is an array long enough.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// True for values a JSON-RPC style protocol accepts as a request id: null, booleans, numbers and strings.
    public var isScalar: Bool {
        switch self {
        case .null, .bool, .number, .string: true
        case .array, .object: false
        }
    }
}
