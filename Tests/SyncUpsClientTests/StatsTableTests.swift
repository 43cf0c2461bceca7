import FoundationEssentials
import Testing

@testable import SyncUpsClient
@testable import SyncUpsCore

/// `syncupsctl stats`: the by-voice averages appear where meetings were attributed by voice.
@Suite struct StatsTableTests {
    let ann = Attendee(id: Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000A")!, name: "Ann")
    let ben = Attendee(id: Attendee.ID(uuidString: "00000000-0000-0000-0000-00000000000B")!, name: "Ben")

    @Test func showsTheByVoiceAveragesOnlyWhereMeetingsHaveThem() {
        var annRow = AttendeeStats(attendee: ann, meetings: 3, averageFloor: 60, averageSpeaking: 50, ranOver: 1)
        let benRow = AttendeeStats(attendee: ben, meetings: 1, averageFloor: 40, averageSpeaking: 30, ranOver: 0)
        let floorOnly = Format.stats(title: "Design", meetings: 3, insights: 3, [annRow, benRow])
        #expect(!floorOnly.contains("by voice"), "\(floorOnly)")
        annRow.meetingsWithVoices = 2
        annRow.averageSpeakingByVoice = 48.25
        annRow.averageInOthersTurns = 3.5
        let text = Format.stats(title: "Design", meetings: 3, insights: 3, [annRow, benRow])
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 5, "\(text)")
        #expect(lines[1].hasSuffix("by voice  in others' turns"), "\(text)")
        #expect(lines[2].hasSuffix("00:48.3   00:03.5"), "\(text)")
        #expect(lines[3].hasSuffix("-         -"), "Ben's meeting had no voices: \(text)")
        #expect(lines[4] == "by voice: averages over the 2 meetings attributed by voice", "\(text)")
    }
}
