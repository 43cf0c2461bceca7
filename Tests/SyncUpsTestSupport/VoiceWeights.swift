/// A weights file in the install step's format, with every tensor of the right shape filled by `value`.
public func weightsFile(
    value: Float = 0.01, omitting omitted: String? = nil, reshaping reshaped: (String, [Int])? = nil
) -> [UInt8] {
    var tensors: [(String, [Int])] = []
    for layer in 0..<3 {
        tensors += [
            ("lstm.weight_ih_l\(layer)", [1024, layer == 0 ? 40 : 256]), ("lstm.weight_hh_l\(layer)", [1024, 256]),
            ("lstm.bias_ih_l\(layer)", [1024]), ("lstm.bias_hh_l\(layer)", [1024]),
        ]
    }
    tensors += [("linear.weight", [256, 256]), ("linear.bias", [256])]
    tensors = tensors.filter { $0.0 != omitted }.map { $0.0 == reshaped?.0 ? reshaped! : $0 }
    func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    var bytes = Array("SUVGE2E1".utf8) + le32(UInt32(tensors.count))
    for (name, shape) in tensors {
        bytes += [UInt8(name.utf8.count), 0] + Array(name.utf8) + le32(UInt32(shape.count))
        for dim in shape { bytes += le32(UInt32(dim)) }
        let bits = le32(value.bitPattern)
        for _ in 0..<shape.reduce(1, *) { bytes += bits }
    }
    return bytes
}
