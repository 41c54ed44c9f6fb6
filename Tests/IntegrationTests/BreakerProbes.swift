import TestSupport

/// Counting the probes of a verifier's open breaker from its metrics: while the breaker is open nothing goes to
/// Apple but one probe at a time, and a probe is a round, so once the rounds dispatched before it opened have ended,
/// every further round without a verdict is a failed probe (each waits its doubling interval first).
extension ServiceProcess {
    /// Rounds at Apple that ended without a verdict.
    func unavailableRounds() async -> Double {
        await metricSum("verifier_apple_rounds_total", labels: ["result=\"unavailable\""]) ?? 0
    }

    /// The unavailable rounds at a moment when no round was at Apple (the same count read before and after seeing
    /// nothing in flight), or nil when there was no such moment within `timeout`. Call it with the breaker open.
    func unavailableRoundsWithNothingAtApple(timeout: Duration = .seconds(60)) async -> Double? {
        var settled: Double?
        _ = await eventually(timeout: timeout, interval: .milliseconds(20)) {
            let before = await unavailableRounds()
            guard await metricSum("verifier_apple_in_flight") == 0, await unavailableRounds() == before else {
                return false
            }
            settled = before
            return true
        }
        return settled
    }
}
