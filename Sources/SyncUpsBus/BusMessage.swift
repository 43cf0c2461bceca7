import CSystemd
import Glibc

/// A D-Bus value as the daemon sends it: the few types MPRIS and notifications use.
public indirect enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case byte(UInt8)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case double(Double)
    case strings([String])
    /// `a{sv}`: a dictionary of variants, in order.
    case dictionary([(String, BusValue)])
    /// `v`: a value of any of these types (a property's value in `Properties.Get`).
    case variant(BusValue)

    public static func == (lhs: BusValue, rhs: BusValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)), (.objectPath(let a), .objectPath(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.byte(let a), .byte(let b)): a == b
        case (.int32(let a), .int32(let b)): a == b
        case (.uint32(let a), .uint32(let b)): a == b
        case (.int64(let a), .int64(let b)): a == b
        case (.double(let a), .double(let b)): a == b
        case (.strings(let a), .strings(let b)): a == b
        case (.variant(let a), .variant(let b)): a == b
        case (.dictionary(let a), .dictionary(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Its D-Bus signature.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .byte: "y"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .double: "d"
        case .strings: "as"
        case .dictionary: "a{sv}"
        case .variant: "v"
        }
    }
}

/// Appends values to an sd-bus message through its non-variadic calls (`sd_bus_message_append_basic`,
/// `open_container`); the first failure is kept and later appends do nothing.
struct MessageWriter {
    let message: OpaquePointer
    private(set) var result: CInt = 0

    init(_ message: OpaquePointer) {
        self.message = message
    }

    private static func type(_ character: Character) -> CChar { CChar(bitPattern: character.asciiValue!) }

    private mutating func check(_ value: CInt) {
        if result >= 0, value < 0 { result = value }
    }

    mutating func append(_ value: BusValue) {
        guard result >= 0 else { return }
        switch value {
        case .string(let string): appendString(string, type: "s")
        case .objectPath(let path): appendString(path, type: "o")
        case .bool(let flag):
            var raw: CInt = flag ? 1 : 0
            check(sd_bus_message_append_basic(message, Self.type("b"), &raw))
        case .byte(var number): check(sd_bus_message_append_basic(message, Self.type("y"), &number))
        case .int32(var number): check(sd_bus_message_append_basic(message, Self.type("i"), &number))
        case .uint32(var number): check(sd_bus_message_append_basic(message, Self.type("u"), &number))
        case .int64(var number): check(sd_bus_message_append_basic(message, Self.type("x"), &number))
        case .double(var number): check(sd_bus_message_append_basic(message, Self.type("d"), &number))
        case .strings(let strings):
            container("a", "s") { writer in
                for string in strings { writer.appendString(string, type: "s") }
            }
        case .variant(let inner):
            container("v", inner.signature) { $0.append(inner) }
        case .dictionary(let entries):
            container("a", "{sv}") { writer in
                for (key, value) in entries {
                    writer.container("e", "sv") { entry in
                        entry.appendString(key, type: "s")
                        entry.container("v", value.signature) { $0.append(value) }
                    }
                }
            }
        }
    }

    mutating func appendString(_ string: String, type: Character) {
        guard result >= 0 else { return }
        check(string.withCString { sd_bus_message_append_basic(message, Self.type(type), $0) })
    }

    mutating func container(_ type: Character, _ contents: String, _ body: (inout MessageWriter) -> Void) {
        guard result >= 0 else { return }
        check(sd_bus_message_open_container(message, Self.type(type), contents))
        guard result >= 0 else { return }
        body(&self)
        check(sd_bus_message_close_container(message))
    }
}

/// Reads a message's basic arguments (`sd_bus_message_read_basic`).
struct MessageReader {
    let message: OpaquePointer

    /// The next argument as a string (`s` or `o`), or nil when it is not one.
    func string(type: Character = "s") -> String? {
        var pointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, CChar(bitPattern: type.asciiValue!), &pointer) > 0, let pointer
        else { return nil }
        return String(cString: pointer)
    }

    func uint32() -> UInt32? {
        var value: UInt32 = 0
        guard sd_bus_message_read_basic(message, CChar(bitPattern: Character("u").asciiValue!), &value) > 0 else {
            return nil
        }
        return value
    }

    /// The message's signature (its arguments' types).
    var signature: String {
        sd_bus_message_get_signature(message, 1).map { String(cString: $0) } ?? ""
    }

    var interface: String? { sd_bus_message_get_interface(message).map { String(cString: $0) } }
    var member: String? { sd_bus_message_get_member(message).map { String(cString: $0) } }
    /// The sender's unique name, as the bus daemon stamped it (a client cannot choose it).
    var sender: String? { sd_bus_message_get_sender(message).map { String(cString: $0) } }
    var path: String? { sd_bus_message_get_path(message).map { String(cString: $0) } }
}
