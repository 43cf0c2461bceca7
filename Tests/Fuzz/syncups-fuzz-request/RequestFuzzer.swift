// Fuzzes the request decoder (against the strict parser) and the command dispatcher: each input is a batch of request lines, answered
// by an in-process daemon that lives across inputs, so sequences of commands are explored, not just single
// lines. Each line takes every client's path: a socket, the framing, the replay cache, the decoder, the
// handler, state and store, the reply and output limits.
//
// Built with `make fuzz` (libFuzzer, -sanitize=fuzzer). Built normally, it replays files given as arguments:
// the committed corpus and every crash the fuzzer found run that way in `make test`.

import FuzzDriver
import Glibc
import SyncUpsDaemon
import SyncUpsJSON
import SyncUpsPOSIX
import SyncUpsProtocol

/// The daemon every input talks to.
nonisolated(unsafe) private var daemon: InProcessDaemon?

private let knownCodes: Set<String> = [
    "parse_error", "invalid_request", "unknown_command", "invalid_argument", "not_found", "session_active",
    "no_session", "invalid_state", "speech_unavailable", "line_too_long", "too_many_subscriptions", "internal",
]

/// The decoder against the strict parser: a line the parser refuses is a `parse_error`, and a request read
/// from a line is exactly the parsed object's `id`, `cmd` and `args`.
func checkDecoding(_ line: UnsafeRawBufferPointer) {
    let decoded = Request.decode(line)
    guard case .success(let value) = JSONParser(maxDepth: Request.maxDepth).parse(buffer: line) else {
        guard case .failure(let error) = decoded, error.error.code == .parseError else {
            preconditionFailure("a line that is not JSON must be a parse_error")
        }
        return
    }
    if case .success(let request) = decoded {
        guard case .object(let object) = value else { preconditionFailure("a request from a non-object") }
        precondition(object.members.allSatisfy { ["id", "cmd", "args"].contains($0.key) }, "an unknown field read")
        precondition((object["id"] ?? .null) == request.id, "the id read differently")
        precondition(object["cmd"] == .string(request.command), "the command read differently")
        precondition(
            (object["args"]?.objectValue ?? JSONObject()) == request.arguments, "the arguments read differently")
    }
}

/// Answers every line of `input` and checks what a client relies on: one reply line per request line, valid
/// JSON, `ok` true with a result or false with a known code and a message.
func fuzzRequests(_ input: UnsafeRawBufferPointer) {
    if daemon == nil {
        // Under $TMPDIR, which `make fuzz` and the corpus test point at directories they remove.
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/syncups-fuzz-XXXXXX".utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        daemon = try! InProcessDaemon(dataDirectory: directory)
    }
    var start = 0
    while start <= input.count {
        let end = input[start...].firstIndex(of: 0x0A) ?? input.count
        let line = UnsafeRawBufferPointer(rebasing: input[start..<end])
        start = end + 1
        guard !line.isEmpty, line.count <= 1 << 20 else { continue }
        checkDecoding(line)
        let reply = daemon!.handle(line)
        if line.count == 1 && line[0] == 0x0D {
            // A blank line (its `\r` is the line end's) is no request, and is answered by nothing.
            precondition(reply.isEmpty, "a blank line was answered")
            continue
        }
        precondition(
            reply.last == 0x0A && reply.dropLast().allSatisfy { $0 != 0x0A }, "a reply must be exactly one line")
        let value: JSONValue
        do {
            value = try JSONParser().parse(reply.dropLast())
        } catch {
            preconditionFailure("the reply is not valid JSON: \(error)")
        }
        switch value["ok"] {
        case .bool(true)?:
            precondition(value["result"] != nil, "a success needs a result")
        case .bool(false)?:
            let code = value["error"]?["code"]?.stringValue ?? ""
            precondition(knownCodes.contains(code), "unknown error code \(code)")
            precondition(value["error"]?["message"]?.stringValue?.isEmpty == false, "an error needs a message")
        default:
            preconditionFailure("a reply needs ok true or false")
        }
    }
}

#if FUZZING
    /// SwiftPM links an executable's `main` as `<module>_main`; hand it to libFuzzer's driver.
    @_cdecl("syncups_fuzz_request_main")
    func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        FuzzDriver.run(argc, argv, fuzzRequests)
    }
#else
    @main
    struct Replay {
        static func main() { FuzzDriver.replay(CommandLine.arguments.dropFirst(), fuzzRequests) }
    }
#endif
