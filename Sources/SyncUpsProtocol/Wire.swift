import SyncUpsJSON

/// The exact bytes of replies and events: `{"id":…,"ok":true,"result":…}`, `{"event":"…","seq":N,"data":…}`,
/// one line each. Built once per message; an event's bytes are shared by every subscriber.
public enum Wire {
    /// The protocol version announced in the greeting.
    public static let protocolVersion = 1

    public static func success(id: JSONValue, result: JSONValue) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        appendSuccess(id: id, result: result, to: &bytes)
        return bytes
    }

    public static func appendSuccess(id: JSONValue, result: JSONValue, to bytes: inout [UInt8]) {
        let writer = JSONWriter()
        JSONWriter.appendASCII(#"{"id":"#, to: &bytes)
        writer.write(id, into: &bytes)
        JSONWriter.appendASCII(#","ok":true,"result":"#, to: &bytes)
        writer.write(result, into: &bytes)
        JSONWriter.appendASCII("}\n", to: &bytes)
    }

    /// A result already encoded as JSON text (for replies built straight into bytes on hot paths).
    public static func appendSuccess(id: JSONValue, encodedResult: [UInt8], to bytes: inout [UInt8]) {
        JSONWriter.appendASCII(#"{"id":"#, to: &bytes)
        JSONWriter().write(id, into: &bytes)
        JSONWriter.appendASCII(#","ok":true,"result":"#, to: &bytes)
        bytes.append(contentsOf: encodedResult)
        JSONWriter.appendASCII("}\n", to: &bytes)
    }

    public static func failure(id: JSONValue, error: ProtocolError) -> [UInt8] {
        var bytes: [UInt8] = []
        appendFailure(id: id, error: error, to: &bytes)
        return bytes
    }

    public static func appendFailure(id: JSONValue, error: ProtocolError, to bytes: inout [UInt8]) {
        let writer = JSONWriter()
        JSONWriter.appendASCII(#"{"id":"#, to: &bytes)
        writer.write(id, into: &bytes)
        JSONWriter.appendASCII(#","ok":false,"error":{"code":"#, to: &bytes)
        JSONWriter.writeString(error.code.rawValue, into: &bytes)
        JSONWriter.appendASCII(#","message":"#, to: &bytes)
        JSONWriter.writeString(error.message, into: &bytes)
        JSONWriter.appendASCII("}}\n", to: &bytes)
    }

    /// An event line; `seq` is omitted for the greeting, which precedes all numbered events.
    public static func event(_ name: String, seq: Int?, data: JSONValue) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        JSONWriter.appendASCII(#"{"event":"#, to: &bytes)
        JSONWriter.writeString(name, into: &bytes)
        if let seq {
            JSONWriter.appendASCII(#","seq":"#, to: &bytes)
            JSONWriter.appendInteger(Int64(seq), to: &bytes)
        }
        JSONWriter.appendASCII(#","data":"#, to: &bytes)
        JSONWriter().write(data, into: &bytes)
        JSONWriter.appendASCII("}\n", to: &bytes)
        return bytes
    }
}

/// A line received by a client: a reply to one of its requests, or an event.
public enum IncomingMessage: Sendable, Equatable {
    case reply(id: JSONValue, outcome: Result<JSONValue, ProtocolError>)
    case event(name: String, seq: Int?, data: JSONValue)

    /// Reads one line from the daemon.
    public static func decode(_ line: some Collection<UInt8>) throws(ProtocolError) -> IncomingMessage {
        let value: JSONValue
        do {
            value = try JSONParser(maxDepth: 64).parse(line)
        } catch {
            throw ProtocolError(.parseError, "the daemon sent invalid JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw ProtocolError(.parseError, "the daemon sent \(value.typeName)")
        }
        if case .string(let name)? = object["event"] {
            let seq = object["seq"]?.numberValue?.int64.map(Int.init)
            return .event(name: name, seq: seq, data: object["data"] ?? .null)
        }
        let id = object["id"] ?? .null
        if object["ok"] == .bool(true) { return .reply(id: id, outcome: .success(object["result"] ?? .null)) }
        let error = object["error"]?.objectValue
        let code = error?["code"]?.stringValue ?? "internal"
        let message = error?["message"]?.stringValue ?? "no message"
        return .reply(id: id, outcome: .failure(ProtocolError(ErrorCode(rawValue: code), message)))
    }
}

/// The version of syncupsd and syncupsctl, reported by `--version`, the greeting and `status`.
public enum SyncUpsVersion {
    public static let current = "0.1.0"
}
