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
    /// The ALSA playback device for the speaker-change cue.
    public var cueDevice = "default"
    public var playsCue = true
    public var speechEngine = SpeechEngine.auto
    public var speechCommand: String?
    public var speechModel = PocketSphinxRecognizer.Model.debian.acousticModel
    public var speechDictionary = PocketSphinxRecognizer.Model.debian.dictionary
    public var speechLanguageModel = PocketSphinxRecognizer.Model.debian.languageModel ?? ""
    /// A JSGF grammar used instead of the language model (small vocabularies, exact results).
    public var speechGrammar: String?
    /// The config file to read; nil means the default place, `false` for `--no-config`.
    public var configFile: String?
    public var readsConfigFile = true

    public init() {}
}
