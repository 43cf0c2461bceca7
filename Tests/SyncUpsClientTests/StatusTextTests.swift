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
