import SyncUpsPOSIX
import Synchronization

/// A logger whose lines a test reads, in the order they were logged (from any thread).
public final class LogLines: Sendable {
    private final class Store: Sendable {
        let lines = Mutex<[String]>([])
    }

    private let store: Store
    /// The logger to hand the daemon.
    public let logger: Logger

    public init(minimumLevel: Logger.Level = .info) {
        let store = Store()
        self.store = store
        logger = Logger(minimumLevel: minimumLevel) { _, message, _ in store.lines.withLock { $0.append(message) } }
    }

    /// Every line logged so far.
    public var all: [String] { store.lines.withLock { $0 } }

    /// How many lines logged so far contain every one of `texts`.
    public func count(containing texts: String...) -> Int {
        store.lines.withLock { lines in lines.count { line in texts.allSatisfy { line.contains($0) } } }
    }
}
