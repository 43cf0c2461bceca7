import Glibc
import SyncUpsJSON
import SyncUpsTestSupport
import Testing

/// How syncupsctl names sync-ups, and how it prints names that hold line breaks or control characters.
@Suite struct NamesTests {
    /// A sync-up titled like another's id prefix: `rm TITLE` deletes the one with that title, never the other.
    @Test func anExactTitleWinsOverAnIDPrefix() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let other = try client.result("syncups.create", ["title": "Other", "attendees": ["Ann"]])
        let otherID = try #require(other["id"]?.stringValue)
        let prefix = String(otherID.prefix(6))
        let titled = try client.result("syncups.create", ["title": .string(prefix), "attendees": ["Ann"]])
        let removed = try daemon.ctl(["rm", prefix, "--yes"])
        #expect(removed.exitCode == 0, "\(removed.standardError)")
        #expect(removed.standardOutput.contains(try #require(titled["id"]?.stringValue)))
        #expect(try client.request("syncups.get", ["id": .string(otherID)])["ok"] == true, "the other is still there")
        // Two titles starting alike, and an id prefix of a third: prefixes among themselves are ambiguous.
        _ = try client.result("syncups.create", ["title": "Retro", "attendees": ["Ann"]])
        _ = try client.result("syncups.create", ["title": "Retro planning", "attendees": ["Ann"]])
        #expect(try daemon.ctl(["show", "retro"]).standardOutput.hasPrefix("Retro  ("))
        let ambiguous = try daemon.ctl(["show", "ret"])
        #expect(ambiguous.exitCode == 65)
        #expect(ambiguous.standardError.contains("matches 2 sync-ups"), "\(ambiguous.standardError)")
    }

    /// Titles match ignoring accents and case; one that matches nothing is not called an id.
    @Test func titlesMatchIgnoringAccentsAndAMissSaysIdOrTitle() throws {
        let daemon = try DaemonProcess()
        _ = try daemon.client().result("syncups.create", ["title": "Équipe", "attendees": ["Zoë"]])
        let shown = try daemon.ctl(["show", "equipe"])
        #expect(shown.exitCode == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.hasPrefix("Équipe  ("))
        let missing = try daemon.ctl(["show", "nothing"])
        #expect(missing.exitCode == 65)
        #expect(
            missing.standardError.contains("no sync-up with the id or title \"nothing\""), "\(missing.standardError)")
    }

    /// Two sync-ups with the same title: addressed by id, and the error says so.
    @Test func sameTitledSyncUpsAreAddressedByID() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        _ = try client.result("syncups.create", ["title": "Dup", "attendees": ["Ann"]])
        _ = try client.result("syncups.create", ["title": "Dup", "attendees": ["Ann"]])
        let result = try daemon.ctl(["rm", "Dup", "--yes"])
        #expect(result.exitCode == 65)
        #expect(result.standardError.contains("is the title of 2 sync-ups"), "\(result.standardError)")
        #expect(result.standardError.contains("by its id"))
    }

    /// A line break in a name shows as ⏎ in every one-line format: one line per change, nothing forged.
    @Test(arguments: ["polybar", "tmux", "i3blocks", "waybar", "{speaker} {title}"])
    func aLineBreakInANameStaysOnOneLineInTheBarFormats(format: String) throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let syncUp = try client.result(
            "syncups.create", ["title": "Design\nreview", "attendees": ["Ann\nsyncupsd offline", "Bob"]])
        _ = try client.result("session.start", ["syncup": syncUp["id"] ?? .null, "audio": false])
        let line = try daemon.ctl(["watch", "--once", "--format", format])
        #expect(line.exitCode == 0)
        #expect(line.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).count == 2)
        #expect(line.standardOutput.contains("Ann⏎syncupsd offline"), "\(line.standardOutput)")
    }

    /// Multi-line outputs: a name cannot fake a line of `show`, `session` or `meeting`.
    @Test func aNameCannotFakeALineOfAMultiLineOutput() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        let syncUp = try client.result(
            "syncups.create", ["title": "Design\ntheme:      fake", "attendees": ["Ann\nmeetings:   99", "Bob"]])
        let id = try #require(syncUp["id"]?.stringValue)
        let shown = try daemon.ctl(["show", id]).standardOutput
        #expect(!shown.contains("\ntheme:      fake"), "\(shown)")
        #expect(!shown.contains("\nmeetings:   99"), "\(shown)")
        #expect(shown.contains("Ann⏎meetings:   99, Bob"), "\(shown)")
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": .string(id), "audio": false])
        #expect(try daemon.ctl(["session"]).standardOutput.hasPrefix("recording \"Design⏎theme:      fake\""))
        _ = try client.result("session.end", ["action": "save"])
        _ = try client.nextEvent("session.ended")
        let meeting = try daemon.ctl(["meeting", id, "latest"]).standardOutput
        #expect(meeting.hasPrefix("Design⏎theme:      fake, "), "\(meeting)")
    }

    /// A title given byte for byte wins over one that only matches it loosely; loose matches among themselves
    /// are ambiguous and listed by id.
    @Test func anExactTitleWinsOverALooseOne() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let first = try client.result("syncups.create", ["title": "Équipe Café ☕", "attendees": ["Ann"]])
        let second = try daemon.ctl(["--json", "add", "équipe café ☕", "--attendee", "Bob"])
        #expect(second.exitCode == 0, "\(second.standardError)")
        let secondID = try #require(try JSONParser().parse(Array(second.standardOutput.utf8))["id"]?.stringValue)
        let firstID = try #require(first["id"]?.stringValue)
        let shown = try daemon.ctl(["show", "équipe café ☕"])
        #expect(shown.exitCode == 0, "\(shown.standardError)")
        #expect(shown.standardOutput.hasPrefix("équipe café ☕  (\(secondID))"), "\(shown.standardOutput)")
        #expect(try daemon.ctl(["show", "Équipe Café ☕"]).standardOutput.hasPrefix("Équipe Café ☕  (\(firstID))"))
        for loose in ["equipe cafe ☕", "equipe"] {
            let ambiguous = try daemon.ctl(["show", loose])
            #expect(ambiguous.exitCode == 65, "\(loose): \(ambiguous.standardOutput)")
            #expect(ambiguous.standardError.contains(String(firstID.prefix(8))), "\(ambiguous.standardError)")
            #expect(ambiguous.standardError.contains(String(secondID.prefix(8))), "\(ambiguous.standardError)")
        }
    }

    /// `rm` and `rm-meeting` never take a title prefix: only an id, an id prefix of 4+ characters or a whole
    /// title; and `rm` asks on a terminal, and needs `--yes` elsewhere, even with no meetings to lose.
    @Test func deletingNeverTakesATitlePrefix() throws {
        let daemon = try DaemonProcess()
        let client = try daemon.client()
        let board = try #require(
            try client.result("syncups.create", ["title": "Board Review", "attendees": ["Ann"]])["id"]?.stringValue)
        _ = try client.result("syncups.create", ["title": "Zebra", "attendees": ["Ann"]])
        _ = try GuidanceTests.quickMeeting(daemon)
        for arguments in [["rm", "z", "--yes"], ["rm", "Zeb", "--yes"], ["rm-meeting", "Qui", "latest", "--yes"]] {
            let refused = try daemon.ctl(arguments)
            #expect(refused.exitCode == 65, "\(arguments): \(refused.standardOutput)")
            #expect(refused.standardError.contains("start of a title"), "\(arguments): \(refused.standardError)")
        }
        let declined = try daemon.ctlOnTerminal(["rm", "bo"], input: "y\n")
        #expect(declined.exitCode == 65, "\(declined.standardOutput)")
        #expect(try client.request("syncups.get", ["id": .string(board)])["ok"] == true, "Board Review is still there")
        let noMeetings = try daemon.ctl(["rm", "Board Review"])
        #expect(noMeetings.exitCode == 64, "\(noMeetings.standardOutput)")
        #expect(noMeetings.standardError.contains("pass --yes"), "\(noMeetings.standardError)")
        let asked = try daemon.ctlOnTerminal(["rm", "board review"], input: "n\n")
        #expect(asked.exitCode == 1)
        #expect(asked.standardOutput.contains("[y/N]"), "\(asked.standardOutput)")
        let byIDPrefix = try daemon.ctl(["rm", String(board.prefix(4)), "--yes"])
        #expect(byIDPrefix.exitCode == 0, "\(byIDPrefix.standardError)")
        #expect(try daemon.ctl(["rm", "zebra", "--yes"]).exitCode == 0)
        let meeting = try daemon.ctlOnTerminal(["rm-meeting", "Quick", "latest"], input: "n\n")
        let meetingID = try daemon.ctl(["ids", "Quick"]).standardOutput.prefix(36)
        #expect(
            meeting.standardOutput.contains(String(meetingID)),
            "the prompt names the meeting: \(meeting.standardOutput)")
    }
}
