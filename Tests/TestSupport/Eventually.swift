/// Polls `condition` until it holds or `timeout` passes. Returns whether it held.
public func eventually(
    timeout: Duration = .seconds(20), interval: Duration = .milliseconds(50),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
