import ServiceSupport

/// Decides when Apple is broadly failing, so the verifier stops taking new work instead of burning retry rounds.
///
/// Fed with one observation per Apple answer or failure (`true` = Apple answered with a verdict or a status,
/// `false` = a retryable failure: timeout, HTTP 5xx, 21005/21009/retryable 211xx, or a round without a verdict).
///
/// - closed: normal work. Opens when, among the last `windowSize` observations (at least `minimumObservations`),
///   the failure share reaches `failureRatio`.
/// - open: no new work except one probe at a time, the first `initialProbeInterval` after opening, then with the
///   interval doubling up to `maximumProbeInterval`. Any success closes the breaker (the window is cleared).
struct AppleCircuitBreaker: Sendable {
    struct Configuration: Sendable, Equatable {
        var windowSize: Int
        var minimumObservations: Int
        var failureRatio: Double
        var initialProbeInterval: Duration
        var maximumProbeInterval: Duration

        init(
            windowSize: Int = 50, minimumObservations: Int = 20, failureRatio: Double = 0.5,
            initialProbeInterval: Duration = .seconds(1), maximumProbeInterval: Duration = .seconds(15)
        ) {
            precondition(windowSize > 0 && minimumObservations > 0 && minimumObservations <= windowSize)
            self.windowSize = windowSize
            self.minimumObservations = minimumObservations
            self.failureRatio = failureRatio
            self.initialProbeInterval = initialProbeInterval
            self.maximumProbeInterval = maximumProbeInterval
        }
    }

    enum State: Sendable, Equatable {
        case closed
        /// `nextProbeAtNs` is a monotonic time; `probeInFlight` while a probe's answer is awaited.
        case open(nextProbeAtNs: UInt64, probeInterval: Duration, probeInFlight: Bool)

        var isOpen: Bool {
            if case .open = self { return true }
            return false
        }
    }

    /// What an observation changed, for logs and metrics.
    enum Transition: Sendable, Equatable {
        case opened
        case closed
    }

    let configuration: Configuration
    private(set) var state: State = .closed
    private var ring: [Bool]
    private var next = 0
    private var filled = 0
    private var failures = 0

    init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.ring = Array(repeating: true, count: configuration.windowSize)
    }

    var isOpen: Bool { state.isOpen }

    /// Records one observation made at monotonic time `nowNs`.
    mutating func record(success: Bool, nowNs: UInt64) -> Transition? {
        switch state {
        case .closed:
            push(success)
            guard !success, filled >= configuration.minimumObservations,
                Double(failures) >= configuration.failureRatio * Double(filled)
            else { return nil }
            let interval = configuration.initialProbeInterval
            state = .open(
                nextProbeAtNs: nowNs &+ interval.clampedNanoseconds, probeInterval: interval, probeInFlight: false)
            return .opened
        case .open:
            guard success else { return nil }
            reset()
            state = .closed
            return .closed
        }
    }

    /// Whether a probe may be dispatched now; when it may, the breaker counts it as in flight.
    mutating func takeProbe(nowNs: UInt64) -> Bool {
        guard case .open(let due, let interval, let inFlight) = state, !inFlight, nowNs >= due else { return false }
        state = .open(nextProbeAtNs: due, probeInterval: interval, probeInFlight: true)
        return true
    }

    /// The probe ended without Apple answering: wait twice as long for the next one (up to the maximum).
    /// A probe that succeeded is reported through `record(success: true, ...)` instead, which closes the breaker.
    mutating func probeFailed(nowNs: UInt64) {
        guard case .open(_, let interval, _) = state else { return }
        let doubled = min(interval * 2, configuration.maximumProbeInterval)
        state = .open(nextProbeAtNs: nowNs &+ doubled.clampedNanoseconds, probeInterval: doubled, probeInFlight: false)
    }

    /// Failures among the observations in the window (closed state), for metrics.
    var recentFailures: Int { failures }
    var recentObservations: Int { filled }

    private mutating func push(_ success: Bool) {
        if filled == configuration.windowSize {
            if !ring[next] { failures -= 1 }
        } else {
            filled += 1
        }
        ring[next] = success
        if !success { failures += 1 }
        next = (next + 1) % configuration.windowSize
    }

    private mutating func reset() {
        next = 0
        filled = 0
        failures = 0
    }
}
