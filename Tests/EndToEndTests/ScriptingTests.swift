import Glibc
import SyncUpsCore
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsTestSupport
import Testing

/// syncupsctl as a shell script uses it: commands that can be chained, `--json` that a program can read
/// whatever happens, and input mistakes caught as usage errors.
@Suite struct ScriptingTests {
    // MARK: - Attendee edits

    @Test(arguments: [["Blob="], ["=Blob Jr"], ["Blob=  "]])
    func refusesARenameToOrFromAnEmptyName(rename: [String]) throws {
        let daemon = try DaemonProcess()
        let created = try JSONParser().parse(
            try daemon.ctl(["--json", "add", "T", "--attendee", "Blob", "--attendee", "Ann"]).standardOutput)
        let id = try #require(created["id"]?.stringValue)
        let result = try daemon.ctl(["edit", id, "--rename-attendee"] + rename)
        #expect(result.exitCode == 64, "\(result.standardError)")
        #expect(result.standardError.contains("--rename-attendee"))
        let after = try JSONParser().parse(try daemon.ctl(["--json", "show", id]).standardOutput)
        #expect(after["attendees"]?.arrayValue?.map { $0["name"]?.stringValue } == ["Blob", "Ann"])
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
