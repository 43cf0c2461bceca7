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
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            var parts: [String] = []
            for (column, cell) in cells.enumerated() {
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                let isLast = column == cells.count - 1
                parts.append(rightAligned.contains(column) ? padding + cell : (isLast ? cell : cell + padding))
            }
            return parts.joined(separator: "  ") + "\n"
        }
        return line(headers) + rows.map(line).joined()
    }
}

extension String {
    /// The text on one line, every character of it visible: a line break shows as `⏎`, a tab as a space,
    /// another control character as its Unicode control picture (`␛` for ESC). A name can then neither
    /// make a one-line format print two lines nor fake a line of a multi-line output.
    var visibleOnOneLine: String {
        var result = ""
        for character in self {
            if character.isNewline {
                result += "⏎"
            } else if character == "\t" {
                result += " "
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

    /// The first line, cut to `limit` characters with an ellipsis.
    func excerpt(_ limit: Int) -> String {
        let firstLine = split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return firstLine.count <= limit ? firstLine : String(firstLine.prefix(limit - 1)) + "…"
    }
}
