import SyncUpsJSON
import SyncUpsProtocol
import Testing

/// The request decoder's fast path must read the usual shapes exactly as the general path does, and leave
/// everything else (errors above all) to it.
@Suite struct RequestDecodingTests {
    func decode(_ text: String, fast: Bool) -> Result<Request, RequestDecodingError>? {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { raw in
            let line = UnsafeRawBufferPointer(raw)
            if fast { return Request.decodeCommonShape(line).map { .success($0) } }
            return Request.decodeGeneral(line)
        }
    }

    @Test(arguments: [
        #"{"cmd":"status"}"#,
        #"  { "id" : 7 , "cmd" : "ping" }  "#,
        #"{"args":{"id":"5FD1","title":"Q&A \u00e9"},"cmd":"syncups.update","id":"a-string"}"#,
        #"{"id":null,"cmd":"ping","args":{}}"#,
        #"{"id":-1.5e3,"cmd":"syncups.list","args":{"limit":2,"nested":{"deep":[1,2,{"x":true}]}}}"#,
    ])
    func readsTheUsualShapesAsTheGeneralPathDoes(line: String) throws {
        let fast = try #require(decode(line, fast: true), "the fast path declined \(line)")
        #expect(fast == decode(line, fast: false))
    }

    @Test(arguments: [
        #"{"cmd":"ping","cmd":"status"}"#,  // duplicate key: the general path names it
        #"{"cmd":"ping","extra":1}"#,  // unknown field
        #"{"\u0063md":"ping"}"#,  // an escaped key
        #"{"cmd":5}"#,  // wrong type
        #"{"id":[1],"cmd":"ping"}"#,  // non-scalar id
        #"{"cmd":"ping","args":[]}"#,  // args not an object
        #"{"cmd":"ping"} trailing"#,
        #"{"cmd":"ping""#,
        #"{}"#,
        #"[]"#,
        #"{"cmd":"ping","args":{"a":}}"#,
    ])
    func leavesEverythingElseToTheGeneralPath(line: String) {
        #expect(decode(line, fast: true) == nil)
        // And the general path still decides: the escaped key is a valid request, the rest are errors.
        let general = decode(line, fast: false)
        if line.contains(#"\u0063md"#) {
            #expect(general == .success(Request(command: "ping")))
        } else if case .success(let request)? = general {
            Issue.record("\(line) decoded as \(request)")
        }
    }
}
