import Glibc
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// The shell completions in contrib/completions, against a running daemon.
@Suite struct CompletionTests {
    static let completions = BuiltProducts.repositoryRoot + "/contrib/completions"

    @Test func bashCompletesCommandsOptionsAndIdsFromTheDaemon() throws {
        let daemon = try DaemonProcess(arguments: ["--audio-device", "null", "--no-cue"])
        let client = try daemon.client()
        for title in ["Design", "Q&A 'team'"] {
            _ = try client.result("syncups.create", ["title": .string(title), "attendees": ["Ann"]])
        }
        // A recorded meeting, for the meeting-id completion.
        let design = try #require(try client.result("syncups.list")["syncups"]?[0]?["id"])
        _ = try client.result("subscribe", ["topics": ["session"], "snapshot": false])
        _ = try client.result("session.start", ["syncup": design, "audio": false])
        _ = try client.result("session.end", ["action": "save"])
        _ = try client.nextEvent("session.ended")
        // The script checks every command and option against `syncupsctl help`, and the ids against `list`.
        let result = try CommandResult.run(
            "/bin/bash", [Self.completions + "/test-completions.sh"],
            environment: ["SYNCUPSD_SOCKET": daemon.socketPath, "SYNCUPSCTL": BuiltProducts.path("syncupsctl")])
        #expect(result.exitCode == 0, "\(result.standardOutput)\(result.standardError)")
        #expect(result.standardOutput.hasSuffix("all checks passed\n"))
        #expect(!result.standardOutput.contains("FAIL"))
    }

    @Test(arguments: [("/usr/bin/zsh", "_syncupsctl"), ("/usr/bin/fish", "syncupsctl.fish")])
    func zshAndFishParseTheirFiles(shell: String, file: String) throws {
        let result = try CommandResult.run(shell, ["-n", Self.completions + "/" + file])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardError == "")
    }
}
