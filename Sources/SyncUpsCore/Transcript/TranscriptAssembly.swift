/// The transcript of a meeting as the recognizer's results arrive: settled utterances, then the
/// provisional tail of the current one.
public struct TranscriptAssembly: Sendable, Equatable {
    /// The text of each final result, in order.
    public private(set) var finals: [String] = []
    /// The words of each final result, for attribution.
    public private(set) var utterances: [[TranscriptWord]] = []
    /// The latest partial result of the utterance in progress; replaced by its final.
    public private(set) var partial = ""

    public init() {}

    public mutating func add(kind isFinal: Bool, text: String, words: [TranscriptWord]) {
        if isFinal {
            let trimmed = text.trimmingWhitespace()
            if !trimmed.isEmpty {
                finals.append(trimmed)
                utterances.append(words)
            }
            partial = ""
        } else {
            partial = text.trimmingWhitespace()
        }
    }

    /// Everything settled, as the saved meeting's transcript (the app's plain string).
    public var finalText: String { finals.joined(separator: " ") }

    /// Settled text followed by the provisional tail: what a live view shows.
    public var text: String {
        partial.isEmpty ? finalText : (finals + [partial]).joined(separator: " ")
    }
}
