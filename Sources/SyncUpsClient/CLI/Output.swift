import SyncUpsPOSIX

/// Where syncupsctl writes: real standard output and error, or a test's buffers.
public struct Output: Sendable {
    public var out: @Sendable (String) -> Bool
    public var error: @Sendable (String) -> Void

    public init(out: @escaping @Sendable (String) -> Bool, error: @escaping @Sendable (String) -> Void) {
        self.out = out
        self.error = error
    }

    public static let standard = Output(out: { Console.out($0) }, error: { Console.error($0) })
}

/// Fixed-width text tables for terminal output.
struct Table {
    var headers: [String]
    var rows: [[String]] = []
    /// Columns aligned right (numbers).
    var rightAligned: Set<Int> = []

    var text: String {
        var widths = headers.map(\.displayWidth)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.displayWidth) }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (column, cell) in cells.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.displayWidth)
                let isLast = column == cells.count - 1
                parts.append(rightAligned.contains(column) ? padding + cell : (isLast ? cell : cell + padding))
            }
            return parts.joined(separator: "  ") + "\n"
        }
        return line(headers) + rows.map(line).joined()
    }
}

extension String {
    /// How many terminal columns the text takes: two for each emoji and East Asian wide or full-width
    /// character, one for the others (a combining mark is part of its character), so that tables line up.
    var displayWidth: Int {
        reduce(0) { $0 + $1.displayWidth }
    }

    /// The text on one line, every character of it visible: a line break shows as `⏎`, a tab as a space,
    /// another control character as its Unicode control picture (`␛` for ESC), a C1 control or a bidirectional
    /// formatting character (U+202E RIGHT-TO-LEFT OVERRIDE, the isolates, the marks) as `�`. A name can then
    /// neither make a one-line format print two lines, nor fake a line of a multi-line output, nor reorder
    /// the text printed after it on its line.
    var visibleOnOneLine: String {
        var result = ""
        for character in self {
            if character.isNewline {
                result += "⏎"
            } else if character == "\t" {
                result += " "
            } else if character.unicodeScalars.contains(where: { Self.bidiControls.contains($0.value) }) {
                result.append("\u{FFFD}")
            } else if let scalar = character.unicodeScalars.first, scalar.properties.generalCategory == .control {
                let value = scalar.value
                let picture = value < 0x20 ? 0x2400 + value : value == 0x7F ? 0x2421 : 0xFFFD
                result.unicodeScalars.append(Unicode.Scalar(picture)!)
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// Unicode's bidirectional formatting characters (Bidi_Control): the Arabic letter mark, the
    /// left-to-right and right-to-left marks, the embeddings and overrides, and the isolates.
    private static let bidiControls: Set<UInt32> = [
        0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,
    ]

    /// The first line, cut to `limit` characters with an ellipsis.
    func excerpt(_ limit: Int) -> String {
        let firstLine = split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return firstLine.count <= limit ? firstLine : String(firstLine.prefix(limit - 1)) + "…"
    }
}

extension Character {
    /// Terminal columns: 2 for an emoji shown as one (by default, or with the emoji variation selector) and
    /// for East Asian wide and full-width characters (Unicode's EastAsianWidth W and F), else 1.
    var displayWidth: Int {
        guard let first = unicodeScalars.first else { return 0 }
        let properties = first.properties
        if properties.isEmojiPresentation || (properties.isEmoji && unicodeScalars.contains("\u{FE0F}")) {
            return 2
        }
        return Self.wideRanges.contains { $0.contains(first.value) } ? 2 : 1
    }

    /// The East Asian wide and full-width blocks: Hangul Jamo, CJK and its punctuation, Hangul syllables,
    /// compatibility ideographs, vertical and small forms, full-width forms, the supplementary ideographs.
    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
        0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
        0x20000...0x2FFFD, 0x30000...0x3FFFD,
    ]
}
