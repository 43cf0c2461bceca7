import SyncUpsJSON
import SyncUpsProtocol
import Testing

/// The request decoder reads every spelling of a request as the same request, and names what is wrong with
/// every other line: a line that is not JSON at all is a `parse_error` first, whatever else is wrong with it.
@Suite struct RequestDecodingTests {
    func decode(_ text: String) -> Result<Request, RequestDecodingError> {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { Request.decode(UnsafeRawBufferPointer($0)) }
    }

    @Test(arguments: [
        (#"{"cmd":"status"}"#, Request(command: "status")),
        (#"  { "id" : 7 , "cmd" : "ping" }  "#, Request(id: 7, command: "ping")),
        (
            #"{"args":{"id":"5FD1","title":"Q&A \u00e9"},"cmd":"syncups.update","id":"a-string"}"#,
            Request(id: "a-string", command: "syncups.update", arguments: ["id": "5FD1", "title": "Q&A é"])
        ),
        (#"{"id":null,"cmd":"ping","args":{}}"#, Request(command: "ping")),
        (#"{"cmd":"ping","args":null}"#, Request(command: "ping")),
        (#"{"\u0063md":"ping","\u0069d":true}"#, Request(id: true, command: "ping")),
        (
            #"{"id":-1.5e3,"cmd":"syncups.list","args":{"limit":2,"nested":{"deep":[1,2,{"x":true}]}}}"#,
            Request(
                id: -1.5e3, command: "syncups.list", arguments: ["limit": 2, "nested": ["deep": [1, 2, ["x": true]]]])
        ),
    ])
    func readsEverySpellingOfARequest(line: String, expected: Request) {
        #expect(decode(line) == .success(expected))
    }

    @Test(arguments: [
        (#"{"cmd":"ping","cmd":"status"}"#, ErrorCode.parseError, #"duplicate key "cmd""#, JSONValue.null),
        (#"{"cmd":"ping","extra":1}"#, .invalidRequest, #"unknown request field "extra""#, .null),
        (#"{"id":3,"extra":1,"cmd":5}"#, .invalidRequest, #"unknown request field "extra""#, 3),
        (#"{"cmd":5,"id":"x"}"#, .invalidRequest, #""cmd" must be a string, got a number"#, "x"),
        (#"{"id":[1],"cmd":"ping","extra":1}"#, .invalidRequest, #""id" must be a string"#, .null),
        (#"{"cmd":"ping","args":[],"id":2}"#, .invalidRequest, #""args" must be an object, got an array"#, 2),
        (#"{"id":1}"#, .invalidRequest, #"missing "cmd""#, 1),
        (#"{}"#, .invalidRequest, #"missing "cmd""#, .null),
        ("{\"cmd\":\"ping\",\"\u{E9}\":1,\"e\u{301}\":2}", .invalidRequest, "unknown request field \"\u{E9}\"", .null),
        (#"[]"#, .invalidRequest, "a request must be a JSON object, got an array", .null),
        (#"{"cmd":"ping"} trailing"#, .parseError, "after the JSON value", .null),
        (#"{"cmd":"ping""#, .parseError, "unterminated object", .null),
        (#"{"extra":1,"cmd":"ping","args":{"a":}}"#, .parseError, "expected a value", .null),
        (#"{"cmd":"\u00"}"#, .parseError, "invalid JSON", .null),
    ])
    func namesWhatIsWrongWithEveryOtherLine(line: String, code: ErrorCode, message: String, id: JSONValue) {
        guard case .failure(let failure) = decode(line) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(failure.error.code == code, "\(line)")
        #expect(failure.error.message.contains(message), "\(line): \(failure.error.message)")
        #expect(failure.id == id, "\(line)")
    }
}
