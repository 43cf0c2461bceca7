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

    /// Each line and what the general path answers: nil for a valid request (a ping), else the error code.
    @Test(
        arguments: [
            (#"{"cmd":"ping","cmd":"status"}"#, "parse_error"),  // duplicate key: the general path names it
            (#"{"cmd":"ping","extra":1}"#, "invalid_request"),  // unknown field
            (#"{"\u0063md":"ping"}"#, nil),  // an escaped key
            (#"{"cmd":5}"#, "invalid_request"),  // wrong type
            (#"{"id":[1],"cmd":"ping"}"#, "invalid_request"),  // non-scalar id
            (#"{"cmd":"ping","args":[]}"#, "invalid_request"),  // args not an object
            (#"{"cmd":"ping"} trailing"#, "parse_error"),
            (#"{"cmd":"ping""#, "parse_error"),
            (#"{}"#, "invalid_request"),
            (#"[]"#, "invalid_request"),
            (#"{"cmd":"ping","args":{"a":}}"#, "parse_error"),
        ] as [(String, String?)])
    func leavesEverythingElseToTheGeneralPath(line: String, code: String?) throws {
        #expect(decode(line, fast: true) == nil)
        // And the general path decides: the escaped key is a valid request, the rest are errors with their codes,
        // which `Request.decode` (the fast path first) gives as well.
        let general = try #require(decode(line, fast: false))
        var bytes = Array(line.utf8)
        let decoded = bytes.withUnsafeMutableBytes { Request.decode(UnsafeRawBufferPointer($0)) }
        #expect(decoded == general)
        switch general {
        case .success(let request):
            #expect(code == nil, "\(line) decoded as \(request)")
            #expect(request == Request(command: "ping"))
        case .failure(let failure):
            #expect(failure.error.code.rawValue == code, "\(line): \(failure.error)")
        }
    }
}
