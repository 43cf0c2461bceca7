import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsSpeech

/// Everything the daemon can be told, from flags and `syncupsd.conf`. The defaults need no file at all.
public struct Configuration: Sendable, Equatable {
    /// The socket to listen on; nil means the one in `RuntimeDirectory` (`$XDG_RUNTIME_DIR/syncupsd/socket`).
    public var socketPath: String?
    /// The data directory; nil means `$XDG_DATA_HOME/syncups`.
    public var dataDirectory: String?
    public var logLevel: Logger.Level = .info
    /// Simultaneous client connections.
    public var maxConnections = Limits().maxConnections
    /// How long the event loop keeps polling after a burst of events before it sleeps (`EventLoop`); 0 never.
    public var busyPollMicroseconds = 50
    /// The ALSA capture device meetings record from.
    public var audioDevice = "default"
    /// Whether (and from where) meetings record the call beside the microphone.
    public var callAudio = CallAudio.auto
    /// The ALSA playback device for the speaker-change cue.
    public var cueDevice = "default"
    public var playsCue = true
    public var speechEngine = SpeechEngine.auto
    public var speechCommand: String?
    /// How long the next meeting's speech command, started ahead after a meeting or at a stand-up's reminder,
    /// waits unused before it is ended (seconds); 0 starts none.
    public var speechSpareIdleSeconds = 600
    /// Start the next meeting's speech command ahead when syncupsd starts, too.
    public var speechSpareAtStart = false
    public var speechModel = PocketSphinxRecognizer.Model.debian.acousticModel
    public var speechDictionary = PocketSphinxRecognizer.Model.debian.dictionary
    public var speechLanguageModel = PocketSphinxRecognizer.Model.debian.languageModel ?? ""
    /// The speaker encoder's weights; nil means `$XDG_DATA_HOME/syncups/voice/ge2e.weights`, "none" no voices.
    public var voiceModel: String?
    /// A JSGF grammar used instead of the language model (small vocabularies, exact results).
    public var speechGrammar: String?
    /// Which desktop notifications to show (`notify`): changes at once on SIGHUP.
    public var notifications = NotificationLevel.all
    /// The config file given with `--config`; nil means the default place (`ConfigurationLoader`).
    public var configFile: String?
    /// False after `--no-config`: no file is read, not even the default one.
    public var readsConfigFile = true

    public init() {}
}

/// `--call-audio`: the other attendees of a call, as the sound server plays them.
public enum CallAudio: Sendable, Equatable {
    /// The monitor of the default output sink, when a sound server is reachable.
    case auto
    case off
    /// This capture source of the sound server (a monitor or an input), by name.
    case source(String)

    public init(_ text: String) {
        switch text {
        case "auto": self = .auto
        case "off": self = .off
        default: self = .source(text)
        }
    }

    public var text: String {
        switch self {
        case .auto: "auto"
        case .off: "off"
        case .source(let name): name
        }
    }
}

/// `notify`: which desktop notifications the daemon shows (org.freedesktop.Notifications).
public enum NotificationLevel: String, CaseIterable, Sendable, Equatable {
    /// Every change of the floor, a pause, the meeting saved, and what went wrong.
    case all
    /// Only the meeting saved and what went wrong (speech failed, sync-ups.json cannot be written).
    case important
    case none
}
