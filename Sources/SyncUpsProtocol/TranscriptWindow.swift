import SyncUpsJSON

/// A stretch of a transcript by UTF-8 byte offsets, cut only between characters' scalars, so the stretches a
/// client pages through concatenate to exactly the text. How replies and events carry a transcript of any
/// size: `transcript` (the stretch), `transcriptOffset` (where it starts), `transcriptBytes` (the whole
/// length); `transcript.get` pages through the rest.
public struct TranscriptWindow: Sendable, Equatable {
    public var text: Substring
    /// The byte offset of `text` in the whole transcript.
    public var offset: Int
    /// The whole transcript's length in UTF-8 bytes.
    public var totalBytes: Int

    /// Where `text` ends; nil when it reaches the end of the transcript.
    public var next: Int? {
        let end = offset + text.utf8.count
        return end < totalBytes ? end : nil
    }

    /// At most `maxBytes` from `offset` (moved back to the start of the scalar it falls in).
    public static func page(of transcript: String, from offset: Int, maxBytes: Int) -> TranscriptWindow {
        let utf8 = transcript.utf8
        let start = scalarBoundary(in: utf8, atOrBefore: min(max(0, offset), utf8.count))
        let end = scalarBoundary(in: utf8, atOrBefore: min(utf8.count, start + max(1, maxBytes)))
        // A single scalar longer than `maxBytes` (4 bytes at most) is still given whole.
        let cut = end > start ? end : scalarBoundary(in: utf8, after: start)
        return window(transcript, start, cut)
    }

    /// The last `maxBytes` at most (from the start of a scalar): what a live view shows.
    public static func tail(of transcript: String, maxBytes: Int) -> TranscriptWindow {
        let utf8 = transcript.utf8
        guard utf8.count > maxBytes else { return window(transcript, 0, utf8.count) }
        return window(transcript, scalarBoundary(in: utf8, after: utf8.count - maxBytes - 1), utf8.count)
    }

    /// Adds `transcript`, `transcriptOffset` and `transcriptBytes` to a wire object.
    public func append(to object: inout JSONObject) {
        object.append("transcript", .string(String(text)))
        object.append("transcriptOffset", .int(offset))
        object.append("transcriptBytes", .int(totalBytes))
    }

    private static func window(_ transcript: String, _ start: Int, _ end: Int) -> TranscriptWindow {
        let utf8 = transcript.utf8
        let from = utf8.index(utf8.startIndex, offsetBy: start)
        let to = utf8.index(utf8.startIndex, offsetBy: end)
        // Both offsets start a scalar, so the slice holds exactly those bytes.
        return TranscriptWindow(text: transcript[from..<to], offset: start, totalBytes: utf8.count)
    }

    private static func isContinuation(_ byte: UInt8) -> Bool { byte & 0xC0 == 0x80 }

    private static func scalarBoundary(in utf8: String.UTF8View, atOrBefore offset: Int) -> Int {
        var position = offset
        while position > 0 && position < utf8.count
            && isContinuation(utf8[utf8.index(utf8.startIndex, offsetBy: position)])
        {
            position -= 1
        }
        return position
    }

    private static func scalarBoundary(in utf8: String.UTF8View, after offset: Int) -> Int {
        var position = offset + 1
        while position < utf8.count && isContinuation(utf8[utf8.index(utf8.startIndex, offsetBy: position)]) {
            position += 1
        }
        return min(position, utf8.count)
    }
}
