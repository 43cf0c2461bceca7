import SyncUpsJSON
import Testing

@testable import SyncUpsClient

/// `syncupsctl status` for a person says what `status` says of voices: on and with which model, or off and why.
@Suite struct StatusTextTests {
    @Test(arguments: ["on: ge2e-resemblyzer-0.1.4 from /x/ge2e.weights", "voices off: no voice model configured"])
    func statusHasAVoicesLine(voices: String) {
        let status: JSONValue = [
            "version": "1", "uptime": 5, "pid": 7, "socket": "/s", "dataFile": "/d", "syncUps": 0, "meetings": 0,
            "connections": 1, "subscribers": 0, "session": .null, "speechEngine": "pocketsphinx",
            "voices": .string(voices),
        ]
        #expect(Format.status(status).contains("\nspeech:    pocketsphinx, idle\nvoices:    \(voices)\n"))
    }
}

/// A name of line breaks alone is blank too: shown `(no name)`, not the `⏎` that makes a break visible (attack
/// 99: `show` and `status` printed `⏎`).
@Suite struct BlankNameTextTests {
    @Test(arguments: ["", "  ", "\n", "\r\n", "\u{2028}", "\u{85}"])
    func aBlankSpeakerIsNoName(name: String) {
        let session: JSONValue = [
            "state": "running", "title": "T", "secondsElapsed": 0, "speaker": ["name": .string(name)],
            "speakerIndex": 0, "attendeeCount": 4,
        ]
        #expect(Format.sessionLine(session) == "recording \"T\" 00:00 · (no name) 1/4")
        #expect(Format.attendee(.string(name)) == "(no name)")
    }

    @Test func aNameWithABreakInsideStaysVisible() {
        #expect(Format.attendee("Ann\nBob") == "Ann⏎Bob")
    }
}
