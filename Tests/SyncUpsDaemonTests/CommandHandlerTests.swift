import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol
import SyncUpsTestSupport
import Testing

/// The command table as a client meets it: every command protocol.md documents is there, an unknown one
/// and bad arguments get their codes, and the request's id comes back with the error.
@Suite struct CommandHandlerTests {
    /// The command names of protocol.md's "Commands" section (its `### \`name …\`` headings).
    static let documentedCommands: [String] = {
        let root = FilePath.directory(of: FilePath.directory(of: FilePath.directory(of: #filePath)))
        let text = Files.readString(FilePath.join(root, "protocol.md")) ?? ""
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "## Commands"), let end = lines.firstIndex(of: "## Events") else {
            return []
        }
        return lines[start..<end].filter { $0.hasPrefix("### ") }
            .flatMap { heading in
                heading.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map {
                    String($0.element.split(separator: " ")[0])
                }
            }
    }()

    /// The event names of protocol.md's events table (its second column).
    static let documentedEvents: [String] = {
        let root = FilePath.directory(of: FilePath.directory(of: FilePath.directory(of: #filePath)))
        let text = Files.readString(FilePath.join(root, "protocol.md")) ?? ""
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "## Events"),
            let end = lines.firstIndex(of: "## Limits and slow clients")
        else { return [] }
        return lines[start..<end].filter { $0.hasPrefix("| `") }
            .flatMap { row in
                let cells = row.split(separator: "|", omittingEmptySubsequences: false)
                guard cells.count > 2 else { return [String]() }
                return cells[2].split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map {
                    String($0.element)
                }
            }
    }()

    static func client() throws -> (TemporaryDirectory, LoopClient) {
        let directory = TemporaryDirectory("commands")
        let daemon = try InProcessDaemon(dataDirectory: directory.path)
        return (directory, LoopClient(try daemon.connect(), daemon))
    }

    func error(_ client: LoopClient, _ line: String) throws -> JSONValue {
        try client.send(line + "\n")
        let reply = try client.reply(to: "r")
        #expect(reply["ok"] == false, "\(line) succeeded: \(reply)")
        return reply["error"] ?? .null
    }

    @Test func protocolMDDocumentsTheCommandsThisTestKnows() {
        #expect(Self.documentedCommands.count >= 15, "\(Self.documentedCommands)")
        for name in ["ping", "status", "syncups.create", "session.pause", "session.resume", "unsubscribe"] {
            #expect(Self.documentedCommands.contains(name), "\(name) not found in \(Self.documentedCommands)")
        }
    }

    /// Every event the daemon publishes is one `EventName` constant, and protocol.md's table lists exactly
    /// those: a new event without its row (or a row for an event no constant names) fails here.
    @Test func protocolMDListsEveryPublishedEventAndNoOther() {
        #expect(Self.documentedEvents.count >= 15, "\(Self.documentedEvents)")
        #expect(Set(Self.documentedEvents) == Set(EventName.published))
        #expect(Set(EventName.published).count == EventName.published.count, "a name listed twice")
        #expect(EventName.published.filter { $0.hasPrefix(EventName.sessionPrefix) }.count == 11)
    }

    @Test func hasAnEntryForEveryDocumentedCommand() throws {
        let (directory, client) = try Self.client()
        _ = directory
        for name in Self.documentedCommands {
            try client.send(#"{"id":"r","cmd":"\#(name)"}"# + "\n")
            let reply = try client.reply(to: "r")
            #expect(reply["error"]?["code"] != "unknown_command", "\(name): \(reply)")
        }
    }

    @Test func namesAnUnknownCommandAndEchoesTheID() throws {
        let (directory, client) = try Self.client()
        _ = directory
        let error = try self.error(client, #"{"id":"r","cmd":"syncups.explode"}"#)
        #expect(error["code"] == "unknown_command")
        #expect(error["message"]?.stringValue?.contains("syncups.explode") == true, "\(error)")
    }

    @Test(arguments: [
        (#"{"id":"r","cmd":"syncups.create","args":{"title":5}}"#, "invalid_argument"),
        (#"{"id":"r","cmd":"syncups.create","args":{"title":"x","bogus":1}}"#, "invalid_argument"),
        (#"{"id":"r","cmd":"syncups.create","args":{}}"#, "invalid_argument"),
        (#"{"id":"r","cmd":"ping","args":{"extra":true}}"#, "invalid_argument"),
        (#"{"id":"r","cmd":"syncups.list","args":{"limit":-1}}"#, "invalid_argument"),
        (#"{"id":"r","cmd":"syncups.get","args":{"id":"5FD1A5E6-0000-0000-0000-000000000000"}}"#, "not_found"),
        (#"{"id":"r","cmd":"session.next"}"#, "no_session"),
    ])
    func refusesBadArgumentsWithTheirCodes(line: String, code: String) throws {
        let (directory, client) = try Self.client()
        _ = directory
        let error = try self.error(client, line)
        #expect(error["code"] == .string(code), "\(line): \(error)")
    }
}
