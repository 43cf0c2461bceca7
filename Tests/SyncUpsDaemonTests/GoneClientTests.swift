import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// A client that writes its requests and closes its socket without reading the replies (a script's `sendall`
/// then `close`): every line it sent is carried out, in order, and the connection ends once they are.
@Suite struct GoneClientTests {
    /// Three deletes pipelined, then a close. Each `syncups.delete` is answered off the loop (it waits for its
    /// people's voice profiles to go), so the connection waited for the first reply when the hang-up came:
    /// it was closed there and then, and the other two deletes were never done (attack 37's C4).
    @Test func linesSentBeforeTheClientClosedAreCarriedOut() throws {
        let directory = TemporaryDirectory("gone-client")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        let client = LoopClient(try daemon.connect(), daemon)
        var ids: [String] = []
        for title in ["B", "C", "D"] {
            let created = try client.result("syncups.create", ["title": .string(title), "attendees": ["Ann"]])
            ids.append(try #require(created["id"]?.stringValue))
        }
        let connections = try client.result("status")["connections"]
        let script = try daemon.connect()
        let lines = ids.map { #"{"cmd":"syncups.delete","args":{"id":"\#($0)"}}"# + "\n" }.joined()
        try UnixSocket.sendAll(script, Array(lines.utf8))
        script.close()
        let deadline = MonotonicInstant.now() + .seconds(20)
        while !daemon.syncUpIDs.isEmpty, MonotonicInstant.now() < deadline { daemon.turn(waitingUpTo: 10) }
        #expect(daemon.syncUpIDs.isEmpty, "left: \(daemon.syncUpIDs.count) of 3")
        // And the connection is gone: nothing of it is left behind.
        _ = try client.waitForStatus { $0["connections"] == connections }
    }
}
