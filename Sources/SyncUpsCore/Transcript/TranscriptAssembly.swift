/// Puts a recognizer's results together into the meeting's transcript: settled text, then the provisional
/// tail. Appending a result costs its own length, not the transcript's.
public struct TranscriptAssembly: Sendable, Equatable {
    /// The words of each final result, for attribution.
    public private(set) var utterances: [[TranscriptWord]] = []
    /// Everything settled, as the saved meeting's transcript (the app's plain string): each final's text,
    /// separated by a space.
    public private(set) var finalText = ""
    /// The latest partial result of the utterance in progress; replaced by its final.
    public private(set) var partial = ""

    public init() {}

    public mutating func add(kind isFinal: Bool, text: String, words: [TranscriptWord]) {
        if isFinal {
            let trimmed = text.trimmingWhitespace()
            if !trimmed.isEmpty {
                if !finalText.isEmpty { finalText += " " }
                finalText += trimmed
                utterances.append(words)
            }
            partial = ""
        } else {
            partial = text.trimmingWhitespace()
        }
    }

    /// Settled text followed by the provisional tail: what a live view shows.
    public var text: String {
        guard !partial.isEmpty else { return finalText }
        return finalText.isEmpty ? partial : finalText + " " + partial
    }
}
