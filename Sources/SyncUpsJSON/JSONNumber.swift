/// A JSON number, kept as an exact integer when it was written as one.
///
/// The SyncUps app encodes `Duration` as `[high, low]` where `low` is a `UInt64` that often exceeds 2⁵³, so an
/// integer must never pass through `Double` on its way in or out.
public enum JSONNumber: Sendable, Hashable {
    case int(Int64)
    case uint(UInt64)
    case double(Double)

    /// The value as an `Int64` when it is an integer that fits (a double with no fractional part counts).
    public var int64: Int64? {
        switch self {
        case .int(let value): value
        case .uint(let value): Int64(exactly: value)
        case .double(let value): Int64(exactly: value)
        }
    }

    /// The value as a `UInt64` when it is a non-negative integer that fits.
    public var uint64: UInt64? {
        switch self {
        case .int(let value): UInt64(exactly: value)
        case .uint(let value): value
        case .double(let value): UInt64(exactly: value)
        }
    }

    /// The value as a `Double`, rounding large integers.
    public var double: Double {
        switch self {
        case .int(let value): Double(value)
        case .uint(let value): Double(value)
        case .double(let value): value
        }
    }

    /// Numeric equality across representations: `1`, `1.0` and `1e0` are the same number.
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        if let a = lhs.int64, let b = rhs.int64 { return a == b }
        if let a = lhs.uint64, let b = rhs.uint64 { return a == b }
        return lhs.double == rhs.double
    }

    public func hash(into hasher: inout Hasher) {
        // Equal numbers have equal doubles, so hashing the double agrees with `==`.
        hasher.combine(double)
    }
}
