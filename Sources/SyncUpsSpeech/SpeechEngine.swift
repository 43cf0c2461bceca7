/// Which recognizer meetings use: `--speech-engine auto|pocketsphinx|command|none`.
public enum SpeechEngine: String, Sendable, CaseIterable {
    /// The command if one is configured, else PocketSphinx if its model is installed, else none.
    case auto
    case pocketsphinx
    case command
    case none

    /// The recognizer for this choice, or nil with the reason when there is none.
    public func recognizer(command: String?, model: PocketSphinxRecognizer.Model) -> (SpeechRecognizer?, String) {
        switch self {
        case .none:
            return (nil, "speech recognition is off (--speech-engine none)")
        case .command:
            guard let command else { return (nil, "--speech-engine command needs --speech-command") }
            return (CommandRecognizer.recognizer(command: command), "the speech command: \(command)")
        case .pocketsphinx:
            guard model.isInstalled else {
                return (
                    nil,
                    "the PocketSphinx model is not installed at \(model.acousticModel) (apt install pocketsphinx-en-us)"
                )
            }
            return (
                PocketSphinxRecognizer.recognizer(model: model),
                "PocketSphinx with \(model.grammar ?? model.languageModel ?? "")"
            )
        case .auto:
            if command != nil { return SpeechEngine.command.recognizer(command: command, model: model) }
            if model.isInstalled { return SpeechEngine.pocketsphinx.recognizer(command: command, model: model) }
            return (
                nil, "no speech engine: no --speech-command and no PocketSphinx model (apt install pocketsphinx-en-us)"
            )
        }
    }
}
