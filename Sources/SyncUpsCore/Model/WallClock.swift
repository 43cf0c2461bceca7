import FoundationEssentials

/// Tells the date and time, for what is stored or shown as a date (a meeting's date, a file's stamp, when
/// the daemon started); live it is the system clock, in tests a fixed date. Durations and timers use the
/// monotonic clock of the event loop instead, never this.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Date

    public init(_ read: @escaping @Sendable () -> Date) {
        self.read = read
    }

    public func callAsFunction() -> Date { read() }

    /// The system's clock.
    public static let system = WallClock { Date() }

    /// Always `date`.
    public static func fixed(_ date: Date) -> WallClock { WallClock { date } }
}
