import SyncUpsJSON

/// One line of `syncupsd.conf`: `key = value`, where the value may be quoted.
///
/// `#` starts a comment only outside quotes, so `speech-command = "run --tag #1"` keeps its `#`.
/// Double quotes understand `\"` and `\\`; single quotes take everything literally, as in a shell.
enum ConfigurationLine {
    /// The line's key and value, or nil for a blank or comment-only line.
    static func parse(_ line: Substring) throws(ConfigurationError.Reason) -> (key: String, value: String)? {
        let content = line.drop { $0 == " " || $0 == "\t" || $0 == "\r" }
        if content.isEmpty || content.first == "#" { return nil }
        // A key never holds "#", so an "=" after one is inside a comment.
        let beforeComment = content.prefix { $0 != "#" }
        guard let equals = beforeComment.firstIndex(of: "=") else {
            throw .syntax(
                "expected \"key = value\", got \(ErrorQuote.quoted(String(beforeComment).trimmingWhitespace()))"
            )
        }
        let key = String(content[..<equals]).trimmingWhitespace()
        guard !key.isEmpty else { throw .syntax("a line starts with \"=\" and names no option") }
        let rest = content[content.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else {
            let value = rest.prefix { $0 != "#" }
            return (key, String(value).trimmingWhitespace())
        }
        var value = ""
        var index = rest.index(after: rest.startIndex)
        var closed = false
        while index < rest.endIndex {
            let character = rest[index]
            index = rest.index(after: index)
            if character == quote {
                closed = true
                break
            }
            if quote == "\"", character == "\\", index < rest.endIndex, rest[index] == "\"" || rest[index] == "\\" {
                value.append(rest[index])
                index = rest.index(after: index)
                continue
            }
            value.append(character)
        }
        guard closed else {
            throw .syntax("the value of \(ErrorQuote.excerpt(key)) opens a \(quote) quote that is never closed")
        }
        let trailing = rest[index...].drop { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard trailing.isEmpty || trailing.first == "#" else {
            throw .syntax(
                "unexpected \(ErrorQuote.quoted(String(trailing).trimmingWhitespace())) after the quoted value of \(ErrorQuote.excerpt(key))"
            )
        }
        return (key, value)
    }
}
