import SyncUpsCore
import Testing

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("90", 90), ("90s", 90), ("15m", 900), ("1h30m", 5400), ("1h5s", 3605),
        // What the CLI itself displays (DurationText.clock): m:ss and h:mm:ss.
        ("1:30", 90), ("01:30", 90), ("0:05", 5), ("1:30:00", 5400), ("24:00:00", 86_400), ("90:00", 5400),
    ])
    func parsesUnitsAndClocks(text: String, seconds: Int) {
        #expect(DurationText.parseSeconds(text) == seconds)
    }

    @Test(arguments: [
        "", "soon", "1:", ":30", "1:60", "1:5", "1:00:60", "1:60:00", "1:2:3:4", "-1:30", "1m30", "1:30s",
    ])
    func refusesWhatIsNeitherUnitsNorAClock(text: String) {
        #expect(DurationText.parseSeconds(text) == nil)
    }

    @Test(arguments: [5, 90, 3599, 3600, 5400, 86_400])
    func readsBackTheClockItPrints(seconds: Int) {
        #expect(DurationText.parseSeconds(DurationText.clock(seconds)) == seconds)
    }
}
