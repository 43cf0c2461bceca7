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

    /// The zsh and fish files are written by hand, like the bash one: each must offer every command
    /// `syncupsctl help` lists, in that shell's own entry (a substring anywhere would let `rm` pass), and every
    /// option `syncupsctl COMMAND --help` names.
    @Test(arguments: [
        // 'rm:delete a sync-up…'; '--once[…]', '--duration=[…]', {-h,--help}
        ("_syncupsctl", "'{}:", ["--{}[", "--{}=", "--{}}"]),
        ("syncupsctl.fish", "-a {} ", ["-l {} "]),  // -a rm -d …; -l duration -x
    ])
    func zshAndFishOfferEveryCommandAndOption(file: String, commandEntry: String, optionEntries: [String]) throws {
        let syncupsctl = BuiltProducts.path("syncupsctl")
        let help = try CommandResult.run(syncupsctl, ["help"]).standardOutput
        let text = try #require(Files.readString(Self.completions + "/" + file))
        let commands = help.split(separator: "\n").filter {
            $0.hasPrefix("  ") && $0.dropFirst(2).first?.isLetter == true
        }.map { String($0.split(separator: " ")[0]) }
        #expect(commands.count > 20)
        for command in commands {
            let offersCommand = text.contains(commandEntry.replacing("{}", with: command))
            #expect(offersCommand, "\(file) does not offer the command \(command)")
            let commandHelp = try CommandResult.run(syncupsctl, [command, "--help"]).standardOutput
            for option in Set(commandHelp.matches(of: /--([a-z][a-z-]*)/).map({ String($0.output.1) })) {
                let offersOption = optionEntries.contains { text.contains($0.replacing("{}", with: option)) }
                #expect(offersOption, "\(file) does not offer --\(option) of \(command)")
            }
        }
    }

    @Test(arguments: [("/usr/bin/zsh", "_syncupsctl"), ("/usr/bin/fish", "syncupsctl.fish")])
    func zshAndFishParseTheirFiles(shell: String, file: String) throws {
        let result = try CommandResult.run(shell, ["-n", Self.completions + "/" + file])
        #expect(result.exitCode == 0, "\(result.standardError)")
        #expect(result.standardError == "")
    }
}
