import FoundationEssentials
import Glibc
import SyncUpsCore
import SyncUpsPOSIX
import SyncUpsPersistence
import SyncUpsTestSupport
import Testing

/// The meetings set aside are pruned as the voice profiles are (`AsideDirectory`): beyond 100, the longest
/// aside, once they have waited 30 days, all their files; never one set aside by the same call, never a
/// file the daemon did not mark.
@Suite struct MeetingAsideTests {
    let directory = TemporaryDirectory("meeting-aside")

    @Test func theLongestAsideBeyondAHundredGoOnlyAfterThirtyDays() throws {
        let data = DataDirectory(path: directory.appending("data"))
        try data.create()
        let aside = MeetingAside(directory: data)
        let first = Date(timeIntervalSince1970: 1_800_000_000)
        var meetings: [Meeting.ID: [String]] = [:]
        for number in 1...102 {
            let meeting = Meeting.ID(UUID(counting: number))
            let names = [meeting.description + ".json", meeting.description + ".wav"]
            for name in names { Files.write(data.meetingsDirectory + "/" + name, "x") }
            meetings[meeting] = names
        }
        let foreign = aside.aside.path + "/" + Meeting.ID(UUID(counting: 999)).description + ".json"
        // One start sets them all aside and deletes none.
        let (moved, pruned, failure) = aside.setAside(meetings, at: first)
        #expect(moved.count == 102 && pruned.isEmpty && failure == nil)
        Files.write(foreign, "the user's")
        #expect(Files.list(aside.aside.path).count == 205)
        // A day later one more: still within the grace.
        let late = Meeting.ID(UUID(counting: 500))
        Files.write(data.meetingsDirectory + "/\(late).json", "x")
        let day = aside.setAside([late: ["\(late).json"]], at: first.addingTimeInterval(86_400))
        #expect(day.pruned.isEmpty)
        // 31 days later another: the 104 marked beyond 100 are the 4 longest aside, each with all its files.
        let last = Meeting.ID(UUID(counting: 501))
        Files.write(data.meetingsDirectory + "/\(last).json", "x")
        let month = aside.setAside([last: ["\(last).json"]], at: first.addingTimeInterval(31 * 86_400))
        #expect(month.pruned.count == 4)
        #expect(!month.pruned.contains(last) && !month.pruned.contains(late))
        for meeting in month.pruned {
            #expect(
                !Files.exists(aside.aside.path + "/\(meeting).json")
                    && !Files.exists(aside.aside.path + "/\(meeting).wav"))
        }
        #expect(Files.readString(foreign) == "the user's")
        #expect(aside.asideMeetings().count == 101)
    }
}
