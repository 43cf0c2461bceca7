import SyncUpsJSON

/// A profile's file, `voices/<attendee-id>.json` in the data directory: the model it was learned with, the
/// seconds of speech, when it last changed and the sum of the embeddings learned.
public enum VoiceProfileFile {
    public static let formatVersion = 1
    /// The most speech a profile may say it learned: 1,000 hours (more is a damaged file).
    public static let maximumSeconds: Double = 3_600_000
    /// `updated` must lie between 1970-01-01 and 2200-01-01 (Unix seconds).
    public static let earliestUpdate: Int64 = 0
    public static let latestUpdate: Int64 = 7_258_118_400

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
        guard let seconds = value["seconds"]?.numberValue?.double, seconds.isFinite else {
            throw .corrupt("no seconds")
        }
        guard seconds >= 0, seconds <= maximumSeconds else {
            throw .corrupt("seconds \(seconds) is not between 0 and \(Int(maximumSeconds))")
        }
        guard let updated = value["updated"]?.numberValue?.int64 else { throw .corrupt("no updated") }
        guard updated >= earliestUpdate, updated <= latestUpdate else {
            throw .corrupt("updated \(updated) is not a date between 1970 and 2200")
        }
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
        // A sum of unit embeddings, one per window of speech (each at least 0.1 s): no longer than that many,
        // and with a direction once anything was learned (an all-zero sum matches nothing, ever).
        let norm = floats.reduce(0) { $0 + Double($1) * Double($1) }.squareRoot()
        guard seconds == 0 || norm > 1e-6 else { throw .corrupt("the embedding is all zeros") }
        guard norm <= (seconds / 0.1).rounded(.up) + 1 else {
            throw .corrupt("the embedding's length \(norm) is more than \(seconds) s of speech can make")
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
