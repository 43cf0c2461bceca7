/// The weights of Resemblyzer's GE2E speaker encoder (Apache-2.0, from its PyPI wheel), as the install step
/// (`contrib/voice/install.sh`) writes them: a 3-layer LSTM of 256 over 40 mel bands, a linear 256 → 256, ReLU,
/// L2 norm.
///
/// The file: "SUVGE2E1", a little-endian UInt32 tensor count, then per tensor a UInt16 name length, the name,
/// a UInt32 rank, the dimensions (UInt32) and the Float32 values in row-major order.
public struct VoiceModel: Sendable {
    public static let melBands = 40
    public static let hidden = 256
    public static let layers = 3
    public static let embeddingSize = 256
    /// The version profiles are stamped with: a profile learned by another model means nothing to this one.
    public static let version = "ge2e-resemblyzer-0.1.4"

    public struct Layer: Sendable {
        /// [4·hidden × input], gates in PyTorch's order: input, forget, cell, output.
        public let inputWeights: [Float]
        /// [4·hidden × hidden].
        public let recurrentWeights: [Float]
        /// b_ih + b_hh: the two are only ever added.
        public let bias: [Float]
        public let inputSize: Int
    }

    public let layers: [Layer]
    /// [embeddingSize × hidden].
    public let linearWeights: [Float]
    public let linearBias: [Float]

    static let magic: [UInt8] = Array("SUVGE2E1".utf8)

    /// Parses the weights file; every way it can be wrong is a precise error, never a trap.
    public init(bytes: [UInt8]) throws(VoiceModelError) {
        var reader = ByteReader(bytes: bytes)
        guard Array(try reader.take(Self.magic.count)) == Self.magic else { throw .notAWeightsFile }
        let count = Int(try reader.uint32())
        guard count < 64 else { throw .malformed("\(count) tensors") }
        var tensors: [String: (shape: [Int], values: [Float])] = [:]
        for _ in 0..<count {
            let nameLength = Int(try reader.uint16())
            let name = String(decoding: try reader.take(nameLength), as: UTF8.self)
            let rank = Int(try reader.uint32())
            guard (1...2).contains(rank) else { throw .malformed("\(name): rank \(rank)") }
            var shape: [Int] = []
            for _ in 0..<rank { shape.append(Int(try reader.uint32())) }
            let elements = shape.reduce(1, *)
            guard elements <= 4 << 20 else { throw .malformed("\(name): \(elements) values") }
            tensors[name] = (shape, try reader.floats(elements))
        }
        guard reader.isAtEnd else { throw .malformed("\(bytes.count - reader.offset) bytes after the last tensor") }

        func tensor(_ name: String, _ shape: [Int]) throws(VoiceModelError) -> [Float] {
            guard let found = tensors[name] else { throw .missingTensor(name) }
            guard found.shape == shape else { throw .wrongShape(name, found: found.shape, expected: shape) }
            for value in found.values where !value.isFinite { throw .malformed("\(name): a value that is not finite") }
            return found.values
        }
        let gates = 4 * Self.hidden
        var layers: [Layer] = []
        for index in 0..<Self.layers {
            let inputSize = index == 0 ? Self.melBands : Self.hidden
            let biasIH = try tensor("lstm.bias_ih_l\(index)", [gates])
            let biasHH = try tensor("lstm.bias_hh_l\(index)", [gates])
            layers.append(
                Layer(
                    inputWeights: try tensor("lstm.weight_ih_l\(index)", [gates, inputSize]),
                    recurrentWeights: try tensor("lstm.weight_hh_l\(index)", [gates, Self.hidden]),
                    bias: zip(biasIH, biasHH).map { $0 + $1 },
                    inputSize: inputSize
                )
            )
        }
        self.layers = layers
        linearWeights = try tensor("linear.weight", [Self.embeddingSize, Self.hidden])
        linearBias = try tensor("linear.bias", [Self.embeddingSize])
    }
}

public enum VoiceModelError: Error, Sendable, Equatable, CustomStringConvertible {
    case notAWeightsFile
    case truncated(at: Int)
    case malformed(String)
    case missingTensor(String)
    case wrongShape(String, found: [Int], expected: [Int])

    public var description: String {
        switch self {
        case .notAWeightsFile: "not a GE2E weights file (no SUVGE2E1 header)"
        case .truncated(let offset): "truncated at byte \(offset)"
        case .malformed(let detail): "malformed: \(detail)"
        case .missingTensor(let name): "no tensor \(name)"
        case .wrongShape(let name, let found, let expected): "\(name) is \(found), expected \(expected)"
        }
    }
}

struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    var isAtEnd: Bool { offset == bytes.count }

    mutating func take(_ count: Int) throws(VoiceModelError) -> ArraySlice<UInt8> {
        guard count >= 0, bytes.count - offset >= count else { throw .truncated(at: bytes.count) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func uint16() throws(VoiceModelError) -> UInt16 {
        let raw = try take(2)
        return UInt16(raw[raw.startIndex]) | UInt16(raw[raw.startIndex + 1]) << 8
    }

    mutating func uint32() throws(VoiceModelError) -> UInt32 {
        let raw = try take(4)
        return raw.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func floats(_ count: Int) throws(VoiceModelError) -> [Float] {
        guard count <= (bytes.count - offset) / 4 else { throw .truncated(at: bytes.count) }
        let start = offset
        offset += count * 4
        return [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
            bytes.withUnsafeBytes { raw in
                for index in 0..<count {
                    buffer[index] = Float(
                        bitPattern: UInt32(
                            littleEndian: raw.loadUnaligned(fromByteOffset: start + index * 4, as: UInt32.self)))
                }
            }
            initialized = count
        }
    }
}
