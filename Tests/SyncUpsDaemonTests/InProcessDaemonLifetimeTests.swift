import SyncUpsTestSupport
import Testing

@testable import SyncUpsDaemon

/// An in-process daemon's owners end with it. Kept alive by each other (the server's command handler holds the
/// server, the store's event handler the state that holds the store), each of the 55 tests that make one left
/// its inotify instance, its loop's descriptors and its worker threads to the end of the process: past 128
/// inotify instances (the per-user limit, shared with every daemon and sound server of the machine) every
/// daemon after, in process or not, failed to open its data directory.
@Suite struct InProcessDaemonLifetimeTests {
    final class Weak {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }

    @Test func aDroppedDaemonsSessionStoreVoicesAndSchedulerEndWithIt() throws {
        let directory = TemporaryDirectory("lifetime")
        var owners: [String: Weak] = [:]
        do {
            let daemon = try InProcessDaemon(dataDirectory: directory.path)
            let client = LoopClient(try daemon.connect(), daemon)
            try client.send(#"{"id":"c","cmd":"syncups.create","args":{"title":"Kept"}}"# + "\n")
            #expect(try client.reply(to: "c")["result"]?["title"] == "Kept")
            owners = [
                "session": Weak(daemon.session), "voices": Weak(daemon.voices),
                "scheduler": Weak(daemon.scheduler), "journals": Weak(daemon.journals),
            ]
        }
        #expect(owners.filter { $0.value.object != nil }.keys.sorted() == [])
    }
}
