import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX

extension Syncupsctl {
    static let exportCommand = Subcommand(
        name: "export",
        usage: "export SYNCUP [MEETING] [--format md|json|srt|vtt] [--output FILE]",
        summary:
            "Write a meeting's attributed transcript (default: the latest) as Markdown, JSON, SubRip or WebVTT (to stdout by default).",
        details: """
            --format F     md, json, srt or vtt; srt and vtt need the timed transcript a speech
                           engine records. Default: the one FILE's extension names (.md, .json,
                           .srt, .vtt), else md; a --format other than FILE's extension is an error
            --output FILE  write to FILE (created 0600) instead of standard output; - is
                           standard output
            """,
        spec: ArgumentSpec(valueOptions: ["format", "output"], positionals: 1...2)
    ) { context, arguments throws(CLIError) in
        let format = try exportFormat(given: arguments.value("format"), output: arguments.value("output"))
        let meeting = try context.wholeMeeting(
            syncUp: arguments.positionals[0], meeting: arguments.positionals.dropFirst().first ?? "latest")
        let text = try TranscriptExport.render(meeting, format: format)
        if let path = arguments.value("output"), path != "-" {
            do {
                let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
                defer { fd.close() }
                try fd.writeAll(Array(text.utf8))
            } catch {
                throw CLIError(.cannotCreate, "cannot write \(path): \(error)")
            }
            if context.globals.json {
                context.print(
                    JSONWriter().string([
                        "output": .string(path), "format": .string(format), "bytes": .int(text.utf8.count),
                    ]) + "\n")
            }
        } else if context.globals.json && format != "json" {
            // One JSON document, as with every command: the export inside it.
            context.print(JSONWriter().string(["format": .string(format), "text": .string(text)]) + "\n")
        } else {
            context.print(text)
        }
    }
}

extension Syncupsctl {
    static let exportFormats = ["md", "json", "srt", "vtt"]

    /// The format `--format` names, else the one the output file's extension names (`out.vtt`), else md. A
    /// `--format` that contradicts the extension is a usage error: `--format md --output out.vtt` is a mistake.
    static func exportFormat(given: String?, output: String?) throws(CLIError) -> String {
        let fileName = output.map { FilePath.name(of: $0) } ?? ""
        let parts = fileName.split(separator: ".")
        let suffix = parts.count > 1 ? parts[parts.count - 1].lowercased() : ""
        let byExtension = suffix == "markdown" ? "md" : exportFormats.contains(suffix) ? suffix : nil
        guard let given else { return byExtension ?? "md" }
        let format = given.lowercased()
        guard exportFormats.contains(format) else {
            throw .usage("--format must be md, json, srt or vtt, not \"\(given)\"")
        }
        if let byExtension, byExtension != format {
            throw .usage(
                "--format \(format) contradicts --output \(fileName), a .\(suffix) file; give one of them, or make them agree"
            )
        }
        return format
    }
}

/// Renders a meeting (as `meetings.get` returns it) in the export formats.
enum TranscriptExport {
    struct Cue {
        var speaker: String
        /// The speaker's attendee id ("" when nobody was attributed): who a paragraph belongs to.
        var speakerID: String
        var start: Double
        var end: Double
        var text: String
        /// How the speaker was known: `floor`, or by voice with the confidence.
        var attribution: SpeakerSource = .floor

        /// ` (by voice, 0.91)` after a speaker named by voice; nothing for the floor (every meeting before
        /// voices, and speech without a confident voice): what the reader sees in every format.
        var marker: String {
            guard case .voice(let confidence) = attribution else { return "" }
            let hundredths = Int((confidence * 100).rounded())
            let (sign, fraction) = (hundredths < 0 ? "-" : "", abs(hundredths) % 100)
            return " (by voice, \(sign)\(abs(hundredths) / 100).\(fraction < 10 ? "0" : "")\(fraction))"
        }
    }

    static func cues(_ meeting: JSONValue) -> [Cue] {
        (meeting["segments"]?.arrayValue ?? []).map { segment in
            Cue(
                speaker: segment["speaker"]?["name"]?.stringValue ?? "",
                speakerID: segment["speaker"]?["id"]?.stringValue ?? "",
                start: segment["start"]?.numberValue?.double ?? 0,
                end: segment["end"]?.numberValue?.double ?? 0,
                text: segment["text"]?.stringValue ?? "",
                attribution: SpeakerSource(json: segment["attribution"])
            )
        }
    }

    static func render(_ meeting: JSONValue, format: String) throws(CLIError) -> String {
        let cues = cues(meeting)
        switch format {
        case "json":
            var text = JSONWriter(options: JSONWriter.Options(isPretty: true)).string(meeting)
            text += "\n"
            return text
        case "md":
            let title = Escape.markdown(Format.string(meeting["syncup"]?["title"]))
            var text = "# \(title), \(Escape.markdown(Format.date(meeting["date"])))\n\n"
            if cues.isEmpty {
                let transcript = Format.string(meeting["transcript"])
                text +=
                    (transcript.isEmpty ? "_No transcript._" : Escape.markdown(transcript, atLineStart: true)) + "\n"
            } else {
                // One paragraph per speaker turn: a speaker's consecutive phrases, as the recognizer split them,
                // read as what they said in one go; a phrase named by voice starts its own, marked.
                var index = 0
                while index < cues.count {
                    let cue = cues[index]
                    var phrases = [Escape.markdown(cue.text)]
                    index += 1
                    while index < cues.count, cues[index].speakerID == cue.speakerID,
                        cues[index].speaker == cue.speaker, cues[index].attribution == cue.attribution
                    {
                        phrases.append(Escape.markdown(cues[index].text))
                        index += 1
                    }
                    let speaker = Escape.markdown(cue.speaker.isEmpty ? "Unknown" : cue.speaker)
                    text += "**\(speaker):**\(cue.marker) \(phrases.joined(separator: " "))\n\n"
                }
            }
            return text + "\n" + markdownInsights(meeting)
        default:
            guard !cues.isEmpty else {
                throw CLIError(
                    .rejected, "this meeting has no timed transcript to export as \(format); try --format md",
                    code: "invalid_argument")
            }
            let isVTT = format == "vtt"
            var text = isVTT ? "WEBVTT\n\n" : ""
            for (index, cue) in cues.enumerated() {
                // At least 0.5 s on screen, but never past the next cue's start: cues must not overlap.
                let next = index + 1 < cues.count ? cues[index + 1].start : .infinity
                let padded = max(cue.end, cue.start + 0.5)
                let end = next > cue.start ? min(padded, next) : padded
                // One line of text per cue, escaped: a blank line would end the cue, "-->" start a new one,
                // and a name or word with < or & would be read as markup.
                let speaker = Escape.subtitle(cue.speaker)
                let words = Escape.subtitle(cue.text)
                // Named by voice: the marker opens the cue's text (the voice tag stays the bare name, which
                // players show or style as the speaker).
                if isVTT {
                    text += "\(timestamp(cue.start, separator: ".")) --> \(timestamp(end, separator: "."))\n"
                    let marker = cue.marker.isEmpty ? "" : String(cue.marker.dropFirst()) + " "
                    text += "\(speaker.isEmpty ? "" : "<v \(speaker)>")\(marker)\(words)\n\n"
                } else {
                    text +=
                        "\(index + 1)\n\(timestamp(cue.start, separator: ",")) --> \(timestamp(end, separator: ","))\n"
                    text += "\(speaker.isEmpty ? "" : speaker + cue.marker + ": ")\(words)\n\n"
                }
            }
            return text
        }
    }

    /// `01:02:03,456` (SubRip) or `01:02:03.456` (WebVTT).
    static func timestamp(_ seconds: Double, separator: String) -> String {
        let milliseconds = Int((max(0, seconds) * 1000).rounded())
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return
            "\(pad(milliseconds / 3_600_000, 2)):\(pad(milliseconds / 60_000 % 60, 2)):\(pad(milliseconds / 1000 % 60, 2))\(separator)\(pad(milliseconds % 1000, 3))"
    }
}

/// Escaping for the export formats: what a speaker said or is called is always text, never markup.
enum Escape {
    /// Line breaks and tabs folded to single spaces: a cue or a paragraph is one line.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0.isNewline || $0 == "\t" }).joined(separator: " ")
    }

    /// WebVTT cue text and voice names (also safe in SubRip, whose players read the same tags and
    /// references): `&`, `<`, `>` as character references, so no tag and no `-->` can appear, on one line.
    static func subtitle(_ text: String) -> String {
        var result = ""
        for character in oneLine(text) {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            default: result.append(character)
            }
        }
        return result
    }

    /// CommonMark's ASCII punctuation that can start or end markup anywhere on a line (emphasis, code, links,
    /// HTML, entities, a heading's closing `#`s, tables, strikethrough).
    static let markdownMetacharacters: Set<Character> = Set("\\`*_[]<>&#~|")

    /// Markdown text that renders as exactly `text`, on one line. At the start of a line, what would begin a
    /// block (a list item `-`, `+`, `1.`, `1)`, a setext underline `=`, indentation) is neutralized too.
    static func markdown(_ text: String, atLineStart: Bool = false) -> String {
        var line = oneLine(text)
        var result = ""
        if atLineStart {
            line = String(line.drop { $0 == " " })
            let digits = line.prefix { $0.isASCII && $0.isNumber }
            if let first = line.first, "-+=".contains(first) {
                result = "\\"
            } else if !digits.isEmpty, let marker = line.dropFirst(digits.count).first, marker == "." || marker == ")" {
                result = digits + "\\"
                line.removeFirst(digits.count)
            }
        }
        for character in line {
            if markdownMetacharacters.contains(character) { result.append("\\") }
            result.append(character)
        }
        return result
    }
}
