import Foundation

/// A gate that opens once and stays open: `wait(within:)` blocks until `open()` was called (or the bound passed),
/// and returns at once after it, for every waiter and every later call (a semaphore lets one waiter through per
/// signal; a second `drain` waiting for the same loop would never return).
///
/// `@unchecked Sendable`: `isOpen` is read and written only while `condition` is locked.
public final class Gate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false

    public init() {}

    /// Opens the gate for every waiter, now and later.
    public func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits up to `bound` for the gate to open. Returns whether it is open.
    public func wait(within bound: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(bound / .seconds(1))
        condition.lock()
        defer { condition.unlock() }
        while !isOpen {
            if !condition.wait(until: deadline) { return isOpen }
        }
        return true
    }
}
