import CSystemd
import Glibc

/// A method call to one of our objects, as a handler sees it: what is called, with which arguments.
public struct MethodCall {
    public let interface: String
    public let member: String
    /// The arguments' D-Bus signature ("" for none).
    public let signature: String
    let reader: MessageReader

    /// The next argument as a string (`s`, or `o` for an object path), or nil when it is not one.
    public func string(type: Character = "s") -> String? { reader.string(type: type) }
}

/// What a handler answers a method call with.
public enum MethodReply {
    case values([BusValue])
    /// A D-Bus error reply (`org.freedesktop.DBus.Error.InvalidArgs`, …) with its message.
    case error(name: String, message: String)
    /// Not ours: sd-bus answers `UnknownMethod`.
    case notHandled
}

/// A received signal's arguments.
public struct SignalMessage {
    let reader: MessageReader
    public var signature: String { reader.signature }
    public func string() -> String? { reader.string() }
    public func uint32() -> UInt32? { reader.uint32() }
    /// The unique name (":1.42") of the connection that sent it, stamped by the bus daemon.
    public var sender: String? { reader.sender }
    /// The object path a signal was sent from.
    public var path: String? { reader.path }
}

/// One connection to the bus, handed to what exports objects on it: objects, names, signals, calls. Its
/// registrations end with the connection (their slots are floating: the bus frees them, and their Swift
/// handlers with them).
public final class BusConnection {
    let bus: OpaquePointer
    /// Called after every message sent: sd-bus may have queued it for POLLOUT.
    private let afterSend: () -> Void

    init(bus: OpaquePointer, afterSend: @escaping () -> Void) {
        self.bus = bus
        self.afterSend = afterSend
    }

    /// A Swift closure retained for a C callback, released by the slot's destroy callback.
    private final class Box<Handler> {
        let handler: Handler
        init(_ handler: Handler) { self.handler = handler }
    }

    private static let releaseBox: sd_bus_destroy_t = { userdata in
        guard let userdata else { return }
        Unmanaged<AnyObject>.fromOpaque(userdata).release()
    }

    /// Makes `slot` floating (owned by the bus) and releases `box` when the bus frees it.
    private func adopt(_ slot: OpaquePointer?, _ box: UnsafeMutableRawPointer, result: CInt) {
        guard result >= 0, let slot else {
            Unmanaged<AnyObject>.fromOpaque(box).release()
            return
        }
        sd_bus_slot_set_destroy_callback(slot, Self.releaseBox)
        sd_bus_slot_set_floating(slot, 1)
    }

    private func retained<Handler>(_ handler: Handler) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(Box(handler) as AnyObject).toOpaque()
    }

    private static func box<Handler>(_ userdata: UnsafeMutableRawPointer?, as: Handler.Type) -> Handler {
        (Unmanaged<AnyObject>.fromOpaque(userdata!).takeUnretainedValue() as! Box<Handler>).handler
    }

    typealias ObjectHandler = (MethodCall) -> MethodReply

    /// Answers every method call to `path` with `handler` (after sd-bus's own `Peer` and before its
    /// `Introspectable`, which a handler may answer itself).
    public func addObject(path: String, handler: @escaping (MethodCall) -> MethodReply) {
        let box = retained(handler as ObjectHandler)
        var slot: OpaquePointer?
        let result = sd_bus_add_object(
            bus, &slot, path,
            { message, userdata, error in
                guard let message else { return 0 }
                let handler = BusConnection.box(userdata, as: ObjectHandler.self)
                let reader = MessageReader(message: message)
                let call = MethodCall(
                    interface: reader.interface ?? "", member: reader.member ?? "", signature: reader.signature,
                    reader: reader)
                switch handler(call) {
                case .notHandled:
                    return 0
                case .error(let name, let text):
                    return sd_bus_error_set(error, name, text)
                case .values(let values):
                    var reply: OpaquePointer?
                    var result = sd_bus_message_new_method_return(message, &reply)
                    guard result >= 0, let reply else { return result }
                    defer { sd_bus_message_unref(reply) }
                    var writer = MessageWriter(reply)
                    for value in values { writer.append(value) }
                    guard writer.result >= 0 else { return writer.result }
                    result = sd_bus_send(nil, reply, nil)
                    return result < 0 ? result : 1
                }
            }, box)
        adopt(slot, box, result: result)
    }

    /// Asks for a well-known name without queueing; `completion` gets whether it is ours.
    public func requestName(_ name: String, completion: @escaping (Bool) -> Void) {
        typealias Completion = (Bool) -> Void
        let box = retained(completion as Completion)
        var slot: OpaquePointer?
        let result = sd_bus_request_name_async(
            bus, &slot, name, 0,
            { message, userdata, _ in
                let completion = BusConnection.box(userdata, as: Completion.self)
                guard let message, sd_bus_message_is_method_error(message, nil) == 0,
                    let answer = MessageReader(message: message).uint32()
                else {
                    completion(false)
                    return 0
                }
                // 1: the primary owner now; 4: already was.
                completion(answer == 1 || answer == 4)
                return 0
            }, box)
        adopt(slot, box, result: result)
        afterSend()
    }

    /// Sends a signal from `path`; returns false when it could not be queued.
    @discardableResult
    public func emitSignal(path: String, interface: String, member: String, arguments: [BusValue]) -> Bool {
        var message: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &message, path, interface, member) >= 0, let message else {
            return false
        }
        defer { sd_bus_message_unref(message) }
        var writer = MessageWriter(message)
        for argument in arguments { writer.append(argument) }
        guard writer.result >= 0 else { return false }
        let result = sd_bus_send(bus, message, nil)
        afterSend()
        return result >= 0
    }

    /// `PropertiesChanged` for `interface`'s `changed` properties.
    @discardableResult
    public func emitPropertiesChanged(path: String, interface: String, changed: [(String, BusValue)]) -> Bool {
        emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [.string(interface), .dictionary(changed), .strings([])])
    }

    /// Calls a method without waiting; `reply` gets the reply's reader or, for an error reply, its message.
    public func callMethod(
        destination: String, path: String, interface: String, member: String, arguments: [BusValue],
        reply: @escaping (Result<SignalMessage, BusCallError>) -> Void
    ) {
        typealias Completion = (Result<SignalMessage, BusCallError>) -> Void
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, destination, path, interface, member) >= 0,
            let message
        else { return reply(.failure(BusCallError(message: "cannot build the call"))) }
        defer { sd_bus_message_unref(message) }
        var writer = MessageWriter(message)
        for argument in arguments { writer.append(argument) }
        guard writer.result >= 0 else {
            return reply(.failure(BusCallError(message: "cannot build the call: \(writer.result)")))
        }
        let box = retained(reply as Completion)
        var slot: OpaquePointer?
        let result = sd_bus_call_async(
            bus, &slot, message,
            { message, userdata, _ in
                let completion = BusConnection.box(userdata, as: Completion.self)
                guard let message else { return 0 }
                if sd_bus_message_is_method_error(message, nil) != 0 {
                    let error = sd_bus_message_get_error(message)
                    let text = error?.pointee.message.map { String(cString: $0) } ?? "error"
                    completion(.failure(BusCallError(message: text)))
                } else {
                    completion(.success(SignalMessage(reader: MessageReader(message: message))))
                }
                return 0
            }, box, 0)
        adopt(slot, box, result: result)
        afterSend()
        if result < 0 { reply(.failure(BusCallError(message: "cannot send the call: \(result)"))) }
    }

    /// Calls `handler` for every `member` signal of `interface` from `sender` (any, when nil) on `path` (any,
    /// when nil). The bus daemon filters broadcasts by name, but a signal sent straight to this connection passes
    /// whatever the rule says: a handler that trusts only one sender checks `SignalMessage.sender` itself.
    public func matchSignal(
        sender: String? = nil, path: String? = nil, interface: String, member: String,
        handler: @escaping (SignalMessage) -> Void
    ) {
        typealias Handler = (SignalMessage) -> Void
        let box = retained(handler as Handler)
        var slot: OpaquePointer?
        let result = sd_bus_match_signal_async(
            bus, &slot, sender, path, interface, member,
            { message, userdata, _ in
                guard let message else { return 0 }
                BusConnection.box(userdata, as: Handler.self)(SignalMessage(reader: MessageReader(message: message)))
                return 0
            }, nil, box)
        adopt(slot, box, result: result)
        afterSend()
    }
}

public struct BusCallError: Error, Sendable {
    public let message: String
}
