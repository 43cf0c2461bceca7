import SyncUpsJSON

/// A profile's file, `voices/<attendee-id>.json` in the data directory: the model it was learned with, the
/// seconds of speech, when it last changed and the sum of the embeddings learned.
public enum VoiceProfileFile {
    public static let formatVersion = 1

    public static func encode(_ profile: VoiceProfile) -> [UInt8] {
        let value: JSONValue = [
            "format": .int(formatVersion),
            "model": .string(VoiceModel.version),
            "seconds": .double(profile.seconds),
            "updated": .number(.int(profile.updated)),
            "sum": .array(profile.sum.map { .double(Double($0)) }),
        ]
        return JSONWriter().encode(value) + [0x0A]
    }

    /// The profile in `bytes`, or why it cannot be used: the caller sets such a file aside and relearns.
    public static func decode(_ bytes: [UInt8]) throws(VoiceProfileFileError) -> VoiceProfile {
        let value: JSONValue
        do { value = try JSONParser().parse(bytes) } catch { throw .corrupt(error.description) }
        guard value.objectValue != nil else { throw .corrupt("not a JSON object") }
        guard let format = value["format"]?.numberValue?.int64 else { throw .corrupt("no format") }
        guard format == formatVersion else { throw .otherVersion("format \(format)") }
        guard let model = value["model"]?.stringValue else { throw .corrupt("no model") }
        guard model == VoiceModel.version else { throw .otherVersion("learned with \(model)") }
        guard let seconds = value["seconds"]?.numberValue?.double, seconds.isFinite, seconds >= 0 else {
            throw .corrupt("no seconds")
        }
        guard let updated = value["updated"]?.numberValue?.int64 else { throw .corrupt("no updated") }
        guard let sum = value["sum"]?.arrayValue, sum.count == VoiceModel.embeddingSize else {
            throw .corrupt("the embedding is not \(VoiceModel.embeddingSize) numbers")
        }
        var floats: [Float] = []
        floats.reserveCapacity(sum.count)
        for element in sum {
            guard let number = element.numberValue?.double, number.isFinite else {
                throw .corrupt("the embedding has a value that is not a finite number")
            }
            floats.append(Float(number))
        }
        return VoiceProfile(sum: floats, seconds: seconds, updated: updated)
    }
}

public enum VoiceProfileFileError: Error, Sendable, Equatable, CustomStringConvertible {
    case corrupt(String)
    case otherVersion(String)

    public var description: String {
        switch self {
        case .corrupt(let detail): "corrupt (\(detail))"
        case .otherVersion(let detail): "from another model version (\(detail))"
        }
    }
}
