import Synchronization

/// A thread-safe counter that hands out 0, 1, 2, …
final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)

    func next() -> Int {
        value.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}
