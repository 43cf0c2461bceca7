/// What the MPRIS player shows: derived by the daemon from its session (no meeting: `stopped` and empty).
public struct MediaPlayerState: Equatable, Sendable {
    public enum Status: String, Sendable {
        case playing = "Playing"
        case paused = "Paused"
        case stopped = "Stopped"
    }

    public var status: Status = .stopped
    /// The track: one per turn, `/org/syncupsd/<meeting>/<turn>`; nil without a meeting.
    public var trackID: String?
    /// "Blob Jr · 2/6"
    public var title = ""
    /// The sync-up's title.
    public var album = ""
    /// The speaker.
    public var artist = ""
    /// The speaker's share, in seconds.
    public var lengthSeconds = 0
    /// The sync-up's theme ("Bubblegum") and its colour ("#FFB3BA").
    public var theme: String?
    public var themeColor: String?
    public var canGoNext = false
    public var canPause = false
    public var canPlay = false

    public init() {}
}

/// What a media key or `playerctl` asks for.
public enum MediaPlayerCommand: Sendable, Equatable {
    case next
    case playPause
    case play
    case pause
    /// Ends the meeting and saves it, as `syncupsctl end --save` does.
    case stop
}

/// The MPRIS player (`org.mpris.MediaPlayer2.syncupsd`) on the session bus: the `MediaPlayer2` and
/// `MediaPlayer2.Player` interfaces on `/org/mpris/MediaPlayer2`, answering property reads from `state`
/// and sending `PropertiesChanged` whenever `update` changes it (the daemon calls it on every event it
/// publishes; nothing polls). `Position` is read when asked (MPRIS leaves it out of `PropertiesChanged`;
/// players extrapolate it with `Rate`).
public final class MediaPlayer {
    public static let path = "/org/mpris/MediaPlayer2"
    public static let busName = "org.mpris.MediaPlayer2.syncupsd"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"

    public private(set) var state = MediaPlayerState()
    /// The name owned on the current connection (`busName`, or `busName.instance<pid>` when another
    /// syncupsd holds it, as MPRIS asks), nil while none is.
    public private(set) var ownedName: String?
    /// The position in the turn, in microseconds, when asked.
    private let position: () -> Int64
    /// Performs a command; returns why it was refused, or nil.
    private let perform: (MediaPlayerCommand) -> String?
    private var connection: BusConnection?
    private let instanceSuffix: String
    /// Called when `ownedName` changes.
    public var onNameChange: () -> Void = {}

    public init(
        bus: SessionBus, instance: String, position: @escaping () -> Int64,
        perform: @escaping (MediaPlayerCommand) -> String?
    ) {
        self.position = position
        self.perform = perform
        self.instanceSuffix = instance
        bus.onConnection.append { [unowned self] connection in attach(connection) }
        let onStateChange = bus.onStateChange
        bus.onStateChange = { [unowned self, unowned bus] in
            if !bus.isConnected, connection != nil {
                connection = nil
                if ownedName != nil {
                    ownedName = nil
                    onNameChange()
                }
            }
            onStateChange()
        }
    }

    private func attach(_ connection: BusConnection) {
        self.connection = connection
        connection.addObject(path: Self.path) { [unowned self] call in handle(call) }
        connection.requestName(Self.busName) { [unowned self, weak connection] owned in
            guard let connection, connection === self.connection else { return }
            if owned {
                ownedName = Self.busName
                onNameChange()
                return
            }
            let fallback = "\(Self.busName).instance\(instanceSuffix)"
            connection.requestName(fallback) { [unowned self, weak connection] owned in
                guard owned, let connection, connection === self.connection else { return }
                ownedName = fallback
                onNameChange()
            }
        }
    }

    /// Takes the new state; sends `PropertiesChanged` with what changed.
    public func update(_ new: MediaPlayerState) {
        guard new != state else { return }
        let old = state
        state = new
        guard let connection else { return }
        var changed: [(String, BusValue)] = []
        if old.status != new.status { changed.append(("PlaybackStatus", .string(new.status.rawValue))) }
        if old.trackID != new.trackID || old.title != new.title || old.album != new.album
            || old.artist != new.artist || old.lengthSeconds != new.lengthSeconds || old.theme != new.theme
            || old.themeColor != new.themeColor
        {
            changed.append(("Metadata", metadata))
        }
        if old.canGoNext != new.canGoNext { changed.append(("CanGoNext", .bool(new.canGoNext))) }
        if old.canPause != new.canPause { changed.append(("CanPause", .bool(new.canPause))) }
        if old.canPlay != new.canPlay { changed.append(("CanPlay", .bool(new.canPlay))) }
        guard !changed.isEmpty else { return }
        connection.emitPropertiesChanged(path: Self.path, interface: Self.playerInterface, changed: changed)
    }

    var metadata: BusValue {
        guard let trackID = state.trackID else { return .dictionary([("mpris:trackid", .objectPath(Self.noTrack))]) }
        var entries: [(String, BusValue)] = [
            ("mpris:trackid", .objectPath(trackID)),
            ("mpris:length", .int64(Int64(state.lengthSeconds) * 1_000_000)),
            ("xesam:title", .string(state.title)),
            ("xesam:album", .string(state.album)),
            ("xesam:artist", .strings([state.artist])),
        ]
        if let theme = state.theme {
            entries.append(("xesam:genre", .strings([theme])))
            entries.append(("xesam:comment", .strings(["theme \(theme)\(state.themeColor.map { " \($0)" } ?? "")"])))
        }
        if let color = state.themeColor { entries.append(("syncupsd:themeColor", .string(color))) }
        return .dictionary(entries)
    }

    // MARK: - Method calls

    private static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"

    private func handle(_ call: MethodCall) -> MethodReply {
        switch call.interface {
        case Self.propertiesInterface: return handleProperties(call)
        case Self.rootInterface:
            guard call.member == "Raise" || call.member == "Quit" else { return .notHandled }
            guard call.signature.isEmpty else { return wrongArguments(call, expected: "") }
            return .values([])  // CanRaise and CanQuit are false: nothing to do
        case Self.playerInterface: return handlePlayer(call)
        case "org.freedesktop.DBus.Introspectable":
            guard call.member == "Introspect" else { return .notHandled }
            return .values([.string(Self.introspection)])
        default: return .notHandled
        }
    }

    private func wrongArguments(_ call: MethodCall, expected: String) -> MethodReply {
        .error(
            name: Self.invalidArgs,
            message: "\(call.member) takes arguments of type \"\(expected)\", not \"\(call.signature)\"")
    }

    private func handlePlayer(_ call: MethodCall) -> MethodReply {
        let command: MediaPlayerCommand
        switch call.member {
        case "Next": command = .next
        case "PlayPause": command = .playPause
        case "Play": command = .play
        case "Pause": command = .pause
        case "Stop": command = .stop
        case "Previous":
            guard call.signature.isEmpty else { return wrongArguments(call, expected: "") }
            return .error(
                name: "org.mpris.MediaPlayer2.syncupsd.Error.NotSupported",
                message: "the floor never goes back (CanGoPrevious is false)")
        case "OpenUri":
            return .error(
                name: "org.mpris.MediaPlayer2.syncupsd.Error.NotSupported",
                message: "OpenUri is not supported: the player opens no URI (SupportedUriSchemes is empty)")
        case "Seek", "SetPosition":
            return .error(
                name: "org.mpris.MediaPlayer2.syncupsd.Error.NotSupported",
                message: "\(call.member) is not supported: a turn's time cannot be moved (CanSeek is false)")
        default: return .notHandled
        }
        guard call.signature.isEmpty else { return wrongArguments(call, expected: "") }
        if let refusal = perform(command) {
            return .error(name: "org.mpris.MediaPlayer2.syncupsd.Error.Refused", message: refusal)
        }
        return .values([])
    }

    private func handleProperties(_ call: MethodCall) -> MethodReply {
        switch call.member {
        case "Get":
            guard call.signature == "ss" else { return wrongArguments(call, expected: "ss") }
            let interface = call.string() ?? ""
            let name = call.string() ?? ""
            guard let value = properties(of: interface)?.first(where: { $0.0 == name })?.1 else {
                return .error(
                    name: "org.freedesktop.DBus.Error.UnknownProperty",
                    message: "no property \(name) on interface \(interface)")
            }
            return .values([.variant(value)])
        case "GetAll":
            guard call.signature == "s" else { return wrongArguments(call, expected: "s") }
            let interface = call.string() ?? ""
            guard let all = properties(of: interface) else {
                return .error(
                    name: "org.freedesktop.DBus.Error.UnknownInterface", message: "no interface \(interface)")
            }
            return .values([.dictionary(all)])
        case "Set":
            guard call.signature == "ssv" else { return wrongArguments(call, expected: "ssv") }
            let interface = call.string() ?? ""
            let name = call.string() ?? ""
            guard properties(of: interface)?.contains(where: { $0.0 == name }) == true else {
                return .error(
                    name: "org.freedesktop.DBus.Error.UnknownProperty",
                    message: "no property \(name) on interface \(interface)")
            }
            return .error(
                name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "\(name) is read-only")
        default:
            return .notHandled
        }
    }

    private func properties(of interface: String) -> [(String, BusValue)]? {
        switch interface {
        case Self.rootInterface:
            return [
                ("CanQuit", .bool(false)),
                ("CanRaise", .bool(false)),
                ("HasTrackList", .bool(false)),
                ("Identity", .string("syncupsd")),
                ("SupportedUriSchemes", .strings([])),
                ("SupportedMimeTypes", .strings([])),
            ]
        case Self.playerInterface:
            return [
                ("PlaybackStatus", .string(state.status.rawValue)),
                ("Rate", .double(1)),
                ("Metadata", metadata),
                ("Volume", .double(1)),
                ("Position", .int64(state.trackID == nil ? 0 : position())),
                ("MinimumRate", .double(1)),
                ("MaximumRate", .double(1)),
                ("CanGoNext", .bool(state.canGoNext)),
                ("CanGoPrevious", .bool(false)),
                ("CanPlay", .bool(state.canPlay)),
                ("CanPause", .bool(state.canPause)),
                ("CanSeek", .bool(false)),
                ("CanControl", .bool(true)),
            ]
        default:
            return nil
        }
    }

    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
         <interface name="org.freedesktop.DBus.Introspectable">
          <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
         </interface>
         <interface name="org.freedesktop.DBus.Peer">
          <method name="Ping"/>
          <method name="GetMachineId"><arg name="id" type="s" direction="out"/></method>
         </interface>
         <interface name="org.freedesktop.DBus.Properties">
          <method name="Get"><arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
          <method name="GetAll"><arg name="interface" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
          <method name="Set"><arg name="interface" type="s" direction="in"/><arg name="name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
          <signal name="PropertiesChanged"><arg name="interface" type="s"/><arg name="changed" type="a{sv}"/><arg name="invalidated" type="as"/></signal>
         </interface>
         <interface name="org.mpris.MediaPlayer2">
          <method name="Raise"/>
          <method name="Quit"/>
          <property name="CanQuit" type="b" access="read"/>
          <property name="CanRaise" type="b" access="read"/>
          <property name="HasTrackList" type="b" access="read"/>
          <property name="Identity" type="s" access="read"/>
          <property name="SupportedUriSchemes" type="as" access="read"/>
          <property name="SupportedMimeTypes" type="as" access="read"/>
         </interface>
         <interface name="org.mpris.MediaPlayer2.Player">
          <method name="Next"/>
          <method name="Previous"/>
          <method name="Pause"/>
          <method name="PlayPause"/>
          <method name="Stop"/>
          <method name="Play"/>
          <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
          <method name="SetPosition"><arg name="TrackId" type="o" direction="in"/><arg name="Position" type="x" direction="in"/></method>
          <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
          <signal name="Seeked"><arg name="Position" type="x"/></signal>
          <property name="PlaybackStatus" type="s" access="read"/>
          <property name="Rate" type="d" access="read"/>
          <property name="Metadata" type="a{sv}" access="read"/>
          <property name="Volume" type="d" access="read"/>
          <property name="Position" type="x" access="read"/>
          <property name="MinimumRate" type="d" access="read"/>
          <property name="MaximumRate" type="d" access="read"/>
          <property name="CanGoNext" type="b" access="read"/>
          <property name="CanGoPrevious" type="b" access="read"/>
          <property name="CanPlay" type="b" access="read"/>
          <property name="CanPause" type="b" access="read"/>
          <property name="CanSeek" type="b" access="read"/>
          <property name="CanControl" type="b" access="read"/>
         </interface>
        </node>
        """
}
