import FoundationEssentials
import Glibc
import SyncUpsCore

extension SyncUp {
    /// A sync-up for tests: `count` attendees named "Blob 1"…, ids counting from `seed`.
    public static func fixture(
        seed: Int = 1,
        title: String = "Design",
        attendees count: Int = 3,
        seconds: Int = 6,
        meetings: [Meeting] = [],
        theme: Theme = .orange
    ) -> SyncUp {
        SyncUp(
            id: SyncUp.ID(UUID(counting: seed * 1000)),
            attendees: (0..<count).map {
                Attendee(id: Attendee.ID(UUID(counting: seed * 1000 + 1 + $0)), name: "Blob \($0 + 1)")
            },
            duration: .seconds(seconds),
            meetings: meetings,
            theme: theme,
            title: title
        )
    }

    /// A sync-up of realistic size: `meetingCount` meetings with transcripts of `transcriptBytes` bytes.
    public static func realistic(index: Int, meetingCount: Int = 10, transcriptBytes: Int = 1024) -> SyncUp {
        let words = ["yesterday", "I", "finished", "the", "review", "today", "blocked", "on", "deploy", "Zoë", "❌"]
        var transcript = ""
        var word = index
        while transcript.utf8.count < transcriptBytes {
            transcript += words[word % words.count] + " "
            word += 7
        }
        return SyncUp(
            id: SyncUp.ID(UUID(counting: 1_000_000 + index)),
            attendees: (0..<6).map {
                Attendee(id: Attendee.ID(UUID(counting: 2_000_000 + index * 10 + $0)), name: "Attendee \($0)")
            },
            duration: .seconds(900),
            meetings: (0..<meetingCount).map {
                Meeting(
                    id: Meeting.ID(UUID(counting: 3_000_000 + index * 100 + $0)),
                    date: Date(timeIntervalSinceReferenceDate: 800_000_000 + Double(index * 100 + $0) * 86_400.25),
                    transcript: transcript
                )
            },
            theme: Theme.allCases[index % Theme.allCases.count],
            title: "Team \(index)"
        )
    }
}

extension TemporaryDirectory {
    /// `data` (where `DaemonProcess(directory:)` keeps its data) with `meetings` and a sync-ups.json that
    /// holds `syncUps`; returns its path.
    public func dataDirectory(holding syncUps: [SyncUp]) -> String {
        let data = appending("data")
        mkdir(data, 0o700)
        mkdir(data + "/meetings", 0o700)
        Files.write(data + "/sync-ups.json", SyncUpsFile.encode(syncUps))
        return data
    }
}
