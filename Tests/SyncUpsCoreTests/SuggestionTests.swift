import SyncUpsCore
import Testing

@Suite struct SuggestionTests {
    @Test func suggestsTheNearestNameWithinAThirdOfTheTypedLength() {
        #expect(Suggestion.nearest(to: "strat", among: ["start", "stats", "status"]) == "start")
        #expect(Suggestion.nearest(to: "LSIT", among: ["list", "show"]) == "list")
        #expect(Suggestion.nearest(to: "zzzzzz", among: ["list", "show"]) == nil)
    }

    /// A client's megabyte of a name (an unknown option in a config file, a theme) gets no suggestion, and
    /// is not compared with every candidate letter by letter.
    @Test func suggestsNothingForAWordLongerThanAnyName() {
        let long = String(repeating: "start", count: 200_000)
        #expect(Suggestion.nearest(to: long, among: ["start"]) == nil)
        #expect(
            Suggestion.nearest(to: String(repeating: "a", count: 65), among: [String(repeating: "a", count: 64)]) == nil
        )
        #expect(
            Suggestion.nearest(to: String(repeating: "a", count: 64), among: [String(repeating: "a", count: 63)]) != nil
        )
    }
}
