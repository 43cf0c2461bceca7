import SyncUpsJSON
import SyncUpsTestSupport
import Testing

@testable import SyncUpsClient

/// Exports of a meeting whose names and words are hostile to every format, checked against each format's
/// own rules: the file must parse, and what it says must be what was said, by whom.
@Suite struct TranscriptExportTests {
    static let title = "R&D <Core> #1"
    static let lines: [(name: String, text: String)] = [
        ("Al<i>ce & Co", "a <b>bold</b> claim & more"),
        ("B --> ob", "x --> y\n\nz"),
        ("**Carol**", "*not* emphasised # [link](x) `code` _under_ \\ | ~"),
        ("", "1. not a list"),
    ]

    static var meeting: JSONValue {
        var segments: [JSONValue] = []
        for (index, line) in lines.enumerated() {
            segments.append([
                "speaker": ["name": .string(line.name)], "start": .double(Double(index) * 2),
                "end": .double(Double(index) * 2 + 1.5), "text": .string(line.text),
            ])
        }
        return [
            "id": "9C4D0000-0000-0000-0000-000000000000", "date": "2026-12-01T09:30:00Z",
            "syncup": ["id": "5FD10000-0000-0000-0000-000000000000", "title": .string(title)],
            "segments": .array(segments), "transcript": "",
        ]
    }

    /// What a viewer shows for a line: line breaks folded to spaces (a cue or paragraph is one line).
    static func shown(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    // MARK: - WebVTT

    /// A short word padded to 0.5 s on screen stops at the next cue (the attack's 00:00:14.000 --> 00:00:14.500
    /// followed by a cue at 00:00:14.230).
    @Test(arguments: ["vtt", "srt"]) func cuesNeverOverlap(format: String) throws {
        let meeting: JSONValue = [
            "id": "9C4D0000-0000-0000-0000-000000000000", "date": "2026-12-01T09:30:00Z",
            "syncup": ["id": "5FD10000-0000-0000-0000-000000000000", "title": "Design"],
            "segments": [
                ["speaker": ["name": "Ann"], "start": 14.0, "end": 14.1, "text": "yes"],
                ["speaker": ["name": "Ben"], "start": 14.23, "end": 15.0, "text": "no"],
            ],
            "transcript": "",
        ]
        let text = try TranscriptExport.render(meeting, format: format)
        let separator = format == "vtt" ? "." : ","
        #expect(text.contains("00:00:14\(separator)000 --> 00:00:14\(separator)230\n"), "\(text)")
        #expect(text.contains("00:00:14\(separator)230 --> 00:00:15\(separator)000\n"), "\(text)")
    }

    @Test func webVTTIsValidAndSaysWhatWasSaidByWhom() throws {
        let file = try TranscriptExport.render(Self.meeting, format: "vtt")
        var blocks = file.components(separatedBy: "\n\n")
        #expect(blocks.removeFirst() == "WEBVTT")
        #expect(blocks.removeLast() == "")
        #expect(blocks.count == Self.lines.count)
        for (block, line) in zip(blocks, Self.lines) {
            let rows = block.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(rows.count == 2, "one timing line and one line of text: \(rows)")
            #expect(try WebVTTRules.isTiming(#require(rows.first)), "\(rows)")
            let payload = try #require(rows.last)
            #expect(!payload.contains("-->"), "a cue's text never holds -->: \(payload)")
            let (voice, text) = try WebVTTRules.parsePayload(payload)
            #expect(voice == (line.name.isEmpty ? nil : Self.shown(line.name)), "\(payload)")
            #expect(text == Self.shown(line.text), "\(payload)")
        }
    }

    // MARK: - Attribution

    /// Ann's turn: her words by the floor, then Cat's interjection named by voice, then Ann again by voice.
    static let attributed: JSONValue = [
        "id": "9C4D0000-0000-0000-0000-000000000000", "date": "2026-12-01T09:30:00Z",
        "syncup": ["id": "5FD10000-0000-0000-0000-000000000000", "title": "Design"],
        "segments": [
            [
                "speaker": ["id": "A", "name": "Ann"], "start": 0.0, "end": 2.0, "text": "the release is late",
                "attribution": ["by": "floor"],
            ],
            [
                "speaker": ["id": "A", "name": "Ann"], "start": 2.0, "end": 3.0, "text": "again",
                "attribution": ["by": "floor"],
            ],
            [
                "speaker": ["id": "C", "name": "Cat"], "start": 3.0, "end": 4.0, "text": "why",
                "attribution": ["by": "voice", "confidence": 0.874],
            ],
            [
                "speaker": ["id": "A", "name": "Ann"], "start": 4.0, "end": 5.0, "text": "the build",
                "attribution": ["by": "voice", "confidence": 0.9],
            ],
        ],
        "transcript": "",
    ]

    /// Each format says which words were named by voice, with the confidence, and leaves the floor's unmarked,
    /// in a form its readers and players take as text (VTT's voice tag stays the bare name).
    @Test func everyFormatSaysWhichSpeakersWereNamedByVoice() throws {
        let markdown = try TranscriptExport.render(Self.attributed, format: "md")
        #expect(
            markdown.contains(
                "**Ann:** the release is late again\n\n**Cat:** (by voice, 0.87) why\n\n**Ann:** (by voice, 0.90) the build\n\n"
            ), "\(markdown)")
        let vtt = try TranscriptExport.render(Self.attributed, format: "vtt")
        let cues = vtt.components(separatedBy: "\n\n").dropFirst().map {
            $0.split(separator: "\n").last.map(String.init)
        }
        #expect(
            cues == [
                "<v Ann>the release is late", "<v Ann>again", "<v Cat>(by voice, 0.87) why",
                "<v Ann>(by voice, 0.90) the build", nil,
            ], "\(vtt)")
        for cue in cues.compactMap(\.self) {
            let (voice, _) = try WebVTTRules.parsePayload(cue)
            #expect(voice == "Ann" || voice == "Cat", "the voice tag is the bare name: \(cue)")
        }
        let srt = try TranscriptExport.render(Self.attributed, format: "srt")
        #expect(srt.contains("\nCat (by voice, 0.87): why\n"), "\(srt)")
        #expect(srt.contains("\nAnn: again\n"), "\(srt)")
    }

    // MARK: - SubRip

    @Test func subRipIsValidAndSaysWhatWasSaidByWhom() throws {
        let file = try TranscriptExport.render(Self.meeting, format: "srt")
        var blocks = file.components(separatedBy: "\n\n")
        #expect(blocks.removeLast() == "")
        #expect(blocks.count == Self.lines.count)
        for (index, (block, line)) in zip(blocks, Self.lines).enumerated() {
            let rows = block.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(rows.count == 3, "\(rows)")
            #expect(rows.first == String(index + 1))
            #expect(rows.count > 1 && WebVTTRules.isTiming(rows[1].replacing(",", with: ".")), "\(rows)")
            let text = try #require(rows.last)
            #expect(!text.contains("-->") && !text.contains("<"), "no tags, no arrows: \(text)")
            let expected = (line.name.isEmpty ? "" : Self.shown(line.name) + ": ") + Self.shown(line.text)
            #expect(try WebVTTRules.decodeEntities(text) == expected)
        }
    }

    // MARK: - Markdown

    /// The Markdown export of a meeting without insights ends with a section that says so.
    static let noInsights = "\n## Insights\n\n_No insights: this meeting was saved without its turns._\n"
    static let noInsightsHTML =
        "<h2>Insights</h2>\n<p><em>No insights: this meeting was saved without its turns.</em></p>\n"

    @Test func markdownEscapesEveryMetacharacterOfNamesAndText() throws {
        let file = try TranscriptExport.render(Self.meeting, format: "md")
        #expect(file.hasSuffix(Self.noInsights))
        let rows = file.dropLast(Self.noInsights.count).split(separator: "\n").map(String.init)
        #expect(rows.count == 1 + Self.lines.count, "\(rows)")
        #expect(try MarkdownRules.unescape(#require(rows.first)).hasPrefix("# \(Self.title), "))
        for (row, line) in zip(rows.dropFirst(), Self.lines) {
            let name = line.name.isEmpty ? "Unknown" : Self.shown(line.name)
            #expect(row.hasPrefix("**") && row.contains(":** "), "\(row)")
            let parts = row.dropFirst(2).split(separator: ":** ", maxSplits: 1).map(String.init)
            #expect(try MarkdownRules.unescape(parts[0]) == name, "\(row)")
            #expect(try MarkdownRules.unescape(parts[1]) == Self.shown(line.text), "\(row)")
        }
    }

    /// The same file through cmark, the CommonMark reference implementation: one heading and one paragraph
    /// per line, the name alone in bold, no HTML or markup of the speakers' own.
    @Test(.enabled(if: Files.exists("/usr/bin/cmark")))
    func markdownRendersAsCommonMarkSaysItShould() throws {
        let file = try TranscriptExport.render(Self.meeting, format: "md")
        let directory = TemporaryDirectory("markdown")
        Files.write(directory.appending("meeting.md"), file)
        let html = try CommandResult.run("/usr/bin/cmark", [directory.appending("meeting.md")]).standardOutput
        func escaped(_ text: String) -> String {
            text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
                .replacing("\"", with: "&quot;")
        }
        var expected = ""
        for line in Self.lines {
            let name = line.name.isEmpty ? "Unknown" : Self.shown(line.name)
            expected += "<p><strong>\(escaped(name)):</strong> \(escaped(Self.shown(line.text)))</p>\n"
        }
        #expect(html.hasPrefix("<h1>\(escaped(Self.title)), "), "\(html)")
        #expect(html.hasSuffix("</h1>\n" + expected + Self.noInsightsHTML), "\(html)")

        // A transcript without speakers starts its line: nothing in it may begin a list or a code block.
        for transcript in ["- not a list <b>", "12) nor this", "    nor code", "= nor a heading"] {
            guard case .object(var plain) = Self.meeting else { return }
            plain["segments"] = []
            plain["transcript"] = .string(transcript)
            Files.write(directory.appending("plain.md"), try TranscriptExport.render(.object(plain), format: "md"))
            let rendered = try CommandResult.run("/usr/bin/cmark", [directory.appending("plain.md")]).standardOutput
            let text = transcript.drop { $0 == " " }
            #expect(
                rendered.hasSuffix("</h1>\n<p>\(escaped(String(text)))</p>\n" + Self.noInsightsHTML), "\(rendered)")
        }
    }

    /// The insights table: each hostile name is one cell, escaped, so every row has the header's six pipes.
    @Test func markdownInsightsTableKeepsEachNameInItsCell() throws {
        guard case .object(var meeting) = Self.meeting else { return }
        let rows: [JSONValue] = Self.lines.enumerated().map { index, line in
            [
                "attendee": ["id": .string("00000000-0000-0000-0000-00000000000\(index)"), "name": .string(line.name)],
                "share": 60, "floor": 61.25, "speaking": 12.5, "turns": 1,
            ]
        }
        meeting["insights"] = [
            "plannedSeconds": 240, "realSeconds": 245.3, "pausedSeconds": 0, "turnsCutShort": 0,
            "attendees": .array(rows),
        ]
        let file = try TranscriptExport.render(.object(meeting), format: "md")
        let section = try #require(file.components(separatedBy: "\n## Insights\n\n").last)
        #expect(section.hasPrefix("Planned 04:00.0, took 04:05.3; 0 turns cut short.\n"), "\(section)")
        let table = section.split(separator: "\n").dropFirst().map(String.init)
        #expect(table.count == 2 + Self.lines.count, "\(table)")
        func pipes(_ row: String) -> Int {
            var count = 0
            var isEscaped = false
            for character in row {
                if character == "|" && !isEscaped { count += 1 }
                isEscaped = character == "\\" && !isEscaped
            }
            return count
        }
        for (row, line) in zip(table.dropFirst(2), Self.lines) {
            #expect(pipes(row) == 6, "\(row)")
            let name = line.name.isEmpty ? "Unknown" : Self.shown(line.name)
            let cell = String(row.dropFirst(2).split(separator: " | ")[0])
            #expect(try MarkdownRules.unescape(cell) == name, "\(row)")
            #expect(row.hasSuffix(" | 01:00.0 | 01:01.3 | 00:12.5 | +00:01.3 (ran over) |"), "\(row)")
        }
    }
}

/// The parts of the WebVTT grammar (W3C WebVTT, "cue text parsing rules") an export can use.
enum WebVTTRules {
    struct Violation: Error, CustomStringConvertible {
        var description: String
    }

    /// `00:00:01.500 --> 00:00:03.000`.
    static func isTiming(_ line: String) -> Bool {
        let parts = line.split(separator: " --> ", omittingEmptySubsequences: false)
        return parts.count == 2
            && parts.allSatisfy { part in
                let bytes = Array(part.utf8)
                guard bytes.count == 12 else { return false }
                return bytes.enumerated().allSatisfy { index, byte in
                    switch index {
                    case 2, 5: byte == UInt8(ascii: ":")
                    case 8: byte == UInt8(ascii: ".")
                    default: byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
                    }
                }
            }
    }

    /// The voice (`<v NAME>` at the start, its annotation decoded) and the text with its character
    /// references decoded. Any other tag, an unknown reference or a bare `&` or `>` is a violation.
    static func parsePayload(_ payload: String) throws -> (voice: String?, text: String) {
        var rest = Substring(payload)
        var voice: String?
        if rest.hasPrefix("<v ") {
            guard let close = rest.firstIndex(of: ">") else { throw Violation(description: "unclosed <v") }
            voice = try decodeEntities(String(rest[rest.index(rest.startIndex, offsetBy: 3)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        guard !rest.contains("<") else { throw Violation(description: "a tag in the text: \(payload)") }
        return (voice, try decodeEntities(String(rest)))
    }

    static func decodeEntities(_ text: String) throws -> String {
        guard !text.contains(">") else { throw Violation(description: "a bare > in \(text)") }
        var result = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            result += rest[..<ampersand]
            rest = rest[ampersand...]
            guard
                let (entity, character) = [("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")].first(where: {
                    rest.hasPrefix($0.0)
                })
            else { throw Violation(description: "a bare & in \(text)") }
            result += character
            rest = rest.dropFirst(entity.count)
        }
        return result + rest
    }
}

/// CommonMark's backslash escapes: text whose metacharacters are all escaped reads back as it was.
enum MarkdownRules {
    /// ASCII punctuation that has a meaning somewhere in CommonMark inline or block syntax.
    static let metacharacters = Set("\\`*_{}[]()<>#+-.!|&~")

    /// Removes the escapes; an unescaped `* _ ` [ ] < > & \` (which would be markup) is a violation.
    static func unescape(_ text: String) throws -> String {
        var result = ""
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            if character == "\\" {
                guard let next = iterator.next(), metacharacters.contains(next) else {
                    throw WebVTTRules.Violation(description: "a lone backslash in \(text)")
                }
                result.append(next)
            } else if "*_`[]<>&".contains(character) {
                throw WebVTTRules.Violation(description: "an unescaped \(character) in \(text)")
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// How `syncupsctl meeting` and the Markdown export say how a turn went.
@Suite struct OvertimeTests {
    /// A turn that took exactly its share is on time, not `±00:00.0`.
    @Test func anOnTimeTurnSaysOnTime() {
        let meeting: JSONValue = [
            "insights": [
                "plannedSeconds": 60, "realSeconds": 60, "pausedSeconds": 0, "turnsCutShort": 0,
                "attendees": [
                    [
                        "attendee": ["id": "00000000-0000-0000-0000-000000000001", "name": "Ann"],
                        "share": 60, "floor": 60, "speaking": 0, "turns": 1,
                    ]
                ],
            ]
        ]
        let text = Format.insights(meeting)
        #expect(text.contains("on time"), "\(text)")
        #expect(!text.contains("±"), "\(text)")
        #expect(TranscriptExport.markdownInsights(meeting).contains("| on time |"))
    }
}

/// `syncupsctl meeting` prints one `Name: text` line per segment, whatever the name holds.
@Suite struct MeetingTextTests {
    @Test func aSpeakersNameCannotForgeAnotherLine() {
        let meeting: JSONValue = [
            "syncup": ["id": "S", "title": "Design"], "id": "M", "date": "2026-12-01T09:00:00Z",
            "segments": [
                ["speaker": ["id": "A", "name": "Ann\nBob"], "start": 0, "end": 1, "text": "fine\r\nCy: forged"]
            ],
        ]
        let lines = Format.meeting(meeting).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.contains("Ann⏎Bob: fine⏎Cy: forged"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("Bob") || $0.hasPrefix("Cy") })
    }
}
