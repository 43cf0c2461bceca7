/// What an error message shows of the text it complains about: a key, a name, a value, a line. However large
/// or strange that text, the message stays one short line (a reply, a log line, a `daemon.warning` every
/// subscriber takes, a meeting's `detailsError`).
public enum ErrorQuote {
    /// The most characters (Unicode scalars) of the text a message quotes.
    public static let excerptLength = 80

    /// `excerpt(text)` in double quotes.
    public static func quoted(_ text: some StringProtocol) -> String { "\"" + excerpt(text) + "\"" }

    /// Control characters and quotes escaped as in JSON, at most `excerptLength` scalars and then "…".
    public static func excerpt(_ text: some StringProtocol) -> String {
        let scalars = text.unicodeScalars
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars.prefix(excerptLength))
        var output: [UInt8] = []
        JSONWriter.writeString(String(kept), into: &output)
        let isCut = !scalars.dropFirst(excerptLength).isEmpty
        return String(decoding: output.dropFirst().dropLast(), as: UTF8.self) + (isCut ? "…" : "")
    }
}
