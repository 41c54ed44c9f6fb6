/// Elements that all get the same timeout, kept in registration order, which is therefore deadline order: a FIFO
/// whose expired prefix is cut off, no timer and no heap per element (pure value: time is an argument).
///
/// `DeadlineSweeper` runs one under a lock with a periodic timer.
public struct DeadlineQueue<Element> {
    @usableFromInline
    struct Entry {
        @usableFromInline let deadlineNanoseconds: UInt64
        @usableFromInline let element: Element

        @inlinable
        init(deadlineNanoseconds: UInt64, element: Element) {
            self.deadlineNanoseconds = deadlineNanoseconds
            self.element = element
        }
    }

    /// The timeout every element gets, in nanoseconds.
    public let timeoutNanoseconds: UInt64
    @usableFromInline var entries = FIFOQueue<Entry>()

    /// - Parameter timeout: how long after its registration each element expires (negative counts as zero).
    public init(timeout: Duration) {
        timeoutNanoseconds = timeout.clampedNanoseconds
    }

    /// Elements registered and neither expired nor removed.
    public var count: Int { entries.count }

    /// Starts the timeout of `element` at `nowNanoseconds` (monotonic).
    @inlinable
    public mutating func register(_ element: Element, nowNanoseconds: UInt64) {
        entries.append(Entry(deadlineNanoseconds: nowNanoseconds &+ timeoutNanoseconds, element: element))
    }

    /// Removes and returns, oldest first, every element whose deadline is at or before `nowNanoseconds`.
    public mutating func expire(nowNanoseconds: UInt64) -> [Element] {
        entries.removeFirst(while: { $0.deadlineNanoseconds <= nowNanoseconds }).map(\.element)
    }

    /// Removes and returns every element, expired or not, oldest first.
    public mutating func removeAll() -> [Element] {
        entries.removeAll().map(\.element)
    }
}

extension DeadlineQueue: Sendable where Element: Sendable {}
extension DeadlineQueue.Entry: Sendable where Element: Sendable {}
