/// A desktop notification: what it says, its buttons, and the slot it takes. One notification a slot is on
/// screen at a time: a new one in the same slot replaces the last in place (`replaces_id`).
public struct DesktopNotification: Equatable, Sendable {
    public enum Urgency: UInt8, Sendable {
        case low = 0
        case normal = 1
        case critical = 2
    }

    public var slot: String
    public var summary: String
    public var body: String
    /// Action keys and their labels ("next", "Next").
    public var actions: [Action]
    public var urgency: Urgency

    public struct Action: Equatable, Sendable {
        public var key: String
        public var label: String
        public init(_ key: String, _ label: String) {
            self.key = key
            self.label = label
        }
    }

    public init(slot: String, summary: String, body: String, actions: [Action] = [], urgency: Urgency = .normal) {
        self.slot = slot
        self.summary = summary
        self.body = body
        self.actions = actions
        self.urgency = urgency
    }
}

/// The desktop's notification server (`org.freedesktop.Notifications`) as the daemon uses it: `show` sends
/// `Notify` without waiting, replacing the slot's last notification; an `ActionInvoked` for one of ours
/// calls `onAction` with its slot and action key. Without a bus (or a server) notifications are dropped.
///
/// Any client may emit a signal named `ActionInvoked`, so one is heard only when it comes from the connection
/// that answered our `Notify` with that id (its unique name, stamped by the bus daemon) on the server's path:
/// a server that went away and a new owner of the name never act on ids they did not hand out.
public final class Notifier {
    static let destination = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"

    private var connection: BusConnection?
    /// The server's id of each slot's notification on screen, and the unique name of the server that gave it.
    private var ids: [String: (id: UInt32, server: String)] = [:]
    /// Slots whose `Notify` has not been answered yet, and the notification to send once it is (the newest).
    private var pending: [String: DesktopNotification?] = [:]
    /// Called with the slot and the action key of an action invoked on one of ours.
    public var onAction: (_ slot: String, _ action: String) -> Void = { _, _ in }
    private let appName: String

    public init(bus: SessionBus, appName: String = "syncupsd") {
        self.appName = appName
        bus.onConnection.append { [unowned self] connection in attach(connection) }
        let onStateChange = bus.onStateChange
        bus.onStateChange = { [unowned self, unowned bus] in
            if !bus.isConnected, connection != nil {
                connection = nil
                ids = [:]
                pending = [:]
            }
            onStateChange()
        }
    }

    private func attach(_ connection: BusConnection) {
        self.connection = connection
        ids = [:]
        pending = [:]
        connection.matchSignal(
            sender: Self.destination, path: Self.path, interface: Self.interface, member: "ActionInvoked"
        ) { [unowned self] signal in
            guard signal.signature == "us", let id = signal.uint32(), let action = signal.string(),
                let slot = slot(of: id, from: signal)
            else { return }
            onAction(slot, action)
        }
        connection.matchSignal(
            sender: Self.destination, path: Self.path, interface: Self.interface, member: "NotificationClosed"
        ) { [unowned self] signal in
            guard signal.signature.hasPrefix("u"), let id = signal.uint32(), let slot = slot(of: id, from: signal)
            else { return }
            ids[slot] = nil
        }
    }

    /// The slot whose notification is `id`, when `signal` comes from the server that gave that id, on its path.
    private func slot(of id: UInt32, from signal: SignalMessage) -> String? {
        guard signal.path == Self.path, let sender = signal.sender else { return nil }
        return ids.first(where: { $0.value.id == id && $0.value.server == sender })?.key
    }

    /// Shows `notification`, replacing its slot's last one.
    public func show(_ notification: DesktopNotification) {
        guard let connection else { return }
        if pending[notification.slot] != nil {
            // Its slot's id is not known yet: this one follows once it is, so it replaces rather than stacks.
            pending[notification.slot] = .some(notification)
            return
        }
        pending[notification.slot] = .some(nil)
        let actions = notification.actions.flatMap { [$0.key, $0.label] }
        connection.callMethod(
            destination: Self.destination, path: Self.path, interface: Self.interface, member: "Notify",
            arguments: [
                .string(appName), .uint32(ids[notification.slot]?.id ?? 0), .string(""), .string(notification.summary),
                .string(notification.body), .strings(actions),
                .dictionary([("urgency", .byte(notification.urgency.rawValue)), ("desktop-entry", .string("syncupsd"))]
                ),
                .int32(-1),
            ]
        ) { [unowned self, weak connection] result in
            guard let connection, connection === self.connection else { return }
            if case .success(let reply) = result, let id = reply.uint32(), let server = reply.sender {
                ids[notification.slot] = (id, server)
            }
            let next = pending[notification.slot] ?? nil
            pending[notification.slot] = nil
            if let next { show(next) }
        }
    }
}
