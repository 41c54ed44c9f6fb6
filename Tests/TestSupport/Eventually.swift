import Foundation

/// The tests' one way to wait for something another thread or process does: poll a condition until it holds or a
/// give-up time passes. A condition that holds returns at once, so the give-up time only bounds a failing test; one
/// default for every suite, with the margin for sanitizer builds (`make test-sanitize`) on a loaded machine, where
/// threads run several times slower. A call that waits for something known to be slow (a process starting, a
/// consumer group settling) passes its own `timeout`.
public enum Polling {
    /// How long a poll waits by default before it gives up.
    public static let giveUp: Duration = .seconds(20)
}

/// Polls `condition` until it holds or `timeout` passes (from an async test: it sleeps between looks without
/// holding a thread). Returns whether it held.
public func eventually(
    timeout: Duration = Polling.giveUp, interval: Duration = .milliseconds(50),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// `eventually` for synchronous code (a test that is not async, a callback): it blocks the calling thread between
/// looks, which are closer together (the conditions are cheap reads of in-process state). Returns whether
/// `condition` held.
public func waitUntil(
    timeout: Duration = Polling.giveUp, interval: Duration = .milliseconds(5), _ condition: () -> Bool
) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
    }
}
