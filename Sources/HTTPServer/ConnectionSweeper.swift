import Dispatch
import ServiceSupport
import Synchronization

/// Every open connection's `ConnectionState`, swept periodically: a connection past its head or body deadline is
/// shut down. Also counts connections for `HTTPConnectionStatistics`, and logs what it closed and what
/// libmicrohttpd refused as one summary line at most every `reportInterval` (an attack makes thousands a second).
///
/// The deadlines differ per phase, so the sweep looks at every connection (a few microseconds per thousand, a few
/// times a second); the table is touched only when a connection opens or closes.
final class ConnectionSweeper: Sendable {
    static let reportInterval: UInt64 = 10_000_000_000

    private let connections = Locked<[ObjectIdentifier: ConnectionState]>([:])
    private let timer: SendableDispatchTimer
    private let logger: Logger
    /// Counts at the last summary, and when it was logged (timer queue only; atomics so the type stays Sendable).
    private let reportedRefused = Atomic<Int>(0)
    private let reportedHeadTimeouts = Atomic<Int>(0)
    private let reportedBodyTimeouts = Atomic<Int>(0)
    private let reportedAt = Atomic<UInt64>(0)
    let accepted = Atomic<Int>(0)
    let headTimeouts = Atomic<Int>(0)
    let bodyTimeouts = Atomic<Int>(0)
    /// Connections libmicrohttpd refused at `connectionLimit` or `perIPConnectionLimit` (it reports them only in its
    /// log; see `MHDCallbacks.errorLogger`).
    let refused = Atomic<Int>(0)

    /// - Parameter tick: how often to sweep; a deadline is overshot by at most this.
    init(tick: Duration, logger: Logger) {
        self.logger = logger
        timer = .repeating(every: tick, minimum: .milliseconds(10), on: DispatchQueue(label: "http-server-connections"))
        timer.start { [weak self] in self?.sweep(now: SystemTime.monotonicNanoseconds()) }
    }

    deinit {
        timer.source.cancel()
    }

    /// The sweep interval for the given deadlines: a tenth of the shortest, between 50 ms and 1 s.
    static func tick(for deadlines: [Duration]) -> Duration {
        let shortest = deadlines.filter { $0 > .zero }.min() ?? .seconds(10)
        return min(max(shortest / 10, .milliseconds(50)), .seconds(1))
    }

    func opened(_ state: ConnectionState) {
        accepted.add(1, ordering: .relaxed)
        connections.withLock { $0[ObjectIdentifier(state)] = state }
    }

    func closed(_ state: ConnectionState) {
        state.markClosed()
        _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(state)) }
    }

    /// Connections open now (started and not yet reported closed by libmicrohttpd).
    var openCount: Int {
        connections.withLock { $0.count }
    }

    func cancel() {
        timer.source.cancel()
    }

    func sweep(now: UInt64) {
        let snapshot = connections.withLock { Array($0.values) }
        for state in snapshot {
            switch state.expireIfDue(now: now) {
            case .awaitingHead: headTimeouts.add(1, ordering: .relaxed)
            case .receivingBody: bodyTimeouts.add(1, ordering: .relaxed)
            default: break
            }
        }
        report(now: now)
    }

    private func report(now: UInt64) {
        guard now &- reportedAt.load(ordering: .relaxed) >= Self.reportInterval else { return }
        let refused = self.refused.load(ordering: .relaxed)
        let headTimeouts = self.headTimeouts.load(ordering: .relaxed)
        let bodyTimeouts = self.bodyTimeouts.load(ordering: .relaxed)
        let newlyRefused = refused - reportedRefused.exchange(refused, ordering: .relaxed)
        let newHeadTimeouts = headTimeouts - reportedHeadTimeouts.exchange(headTimeouts, ordering: .relaxed)
        let newBodyTimeouts = bodyTimeouts - reportedBodyTimeouts.exchange(bodyTimeouts, ordering: .relaxed)
        reportedAt.store(now, ordering: .relaxed)
        guard newlyRefused + newHeadTimeouts + newBodyTimeouts > 0 else { return }
        logger.warning(
            "connections refused at the connection limits or closed past their deadlines (slow or hostile clients)",
            ["refused": .int(newlyRefused), "head_timeouts": .int(newHeadTimeouts),
             "body_timeouts": .int(newBodyTimeouts), "open": .int(openCount),
             "seconds": .int(Int(Self.reportInterval / 1_000_000_000))])
    }
}
