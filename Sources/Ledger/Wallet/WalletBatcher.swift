import Foundation
import Postgres
import ServiceSupport

/// Group commit for spends and grants: requests wait in arrival order while the batch before them is applied, then
/// all of them (up to `maxBatch`) are applied in one transaction (`WalletBatch`) on the batcher's own database
/// connection and committed once, and each gets its answer. One commit per batch instead of one per spend is what
/// lets many concurrent spenders share a durable database (as bulk ledgers do).
///
/// A request whose key is already waiting or being applied in this process is answered 409
/// `idempotency_key_in_flight` at once (the draft's "request in flight"); in another instance it waits for the
/// first one's wallet lock and is then answered as its replay. A deadlock with the Kafka consumer's batch (which
/// PostgreSQL breaks by aborting one side), a serialization failure, or a key first used by another instance
/// meanwhile, applies the batch again. A database that does not answer gets every request of the batch 503: nothing
/// of it was committed, or if the commit went through unseen, the same key answers the same again.
///
/// `@unchecked Sendable`: every stored var is read and written only while `condition` is locked.
final class WalletBatcher: @unchecked Sendable {
    typealias Respond = @Sendable (WalletAnswer) -> Void

    private let database: DatabaseLink
    private let metrics: WalletMetrics
    private let logger: Logger
    private let maxBatch: Int
    private let nowMs: @Sendable () -> Int64
    private let condition = NSCondition()
    private var waiting: [(request: WalletRequest, respond: Respond)] = []
    private var inFlight: Set<WalletRequest.RequestId> = []
    private var stopping = false
    private var running = false
    private let loopEnded = Gate()

    /// How many times a batch is applied again after a deadlock, a serialization failure or a unique violation
    /// before its requests are answered 503.
    static let maxAttempts = 8

    init(
        database: DatabaseLink, metrics: WalletMetrics, logger: Logger, maxBatch: Int = 512,
        nowMs: @escaping @Sendable () -> Int64 = { SystemTime.wallMilliseconds() }
    ) {
        self.database = database
        self.metrics = metrics
        self.logger = logger
        self.maxBatch = maxBatch
        self.nowMs = nowMs
    }

    func start() {
        condition.lock()
        running = true
        condition.unlock()
        Thread.startNamed("ledger-wallet") { [self] in
            run()
            loopEnded.open()
        }
    }

    /// Queues `request`; `respond` is called once with its answer, on the batcher's thread (or at once).
    func submit(_ request: WalletRequest, respond: @escaping Respond) {
        condition.lock()
        if stopping || !running {
            condition.unlock()
            metrics.count(request.operation, .unavailable)
            respond(.error(503, "shutting_down", "the ledger is stopping; retry with the same Idempotency-Key", outcome: .unavailable))
            return
        }
        guard inFlight.insert(request.id).inserted else {
            condition.unlock()
            metrics.count(request.operation, .keyInFlight)
            respond(
                .error(
                    409, "idempotency_key_in_flight",
                    "a request with this Idempotency-Key is being applied; retry it once that one is answered",
                    outcome: .keyInFlight))
            return
        }
        waiting.append((request, respond))
        condition.signal()
        condition.unlock()
    }

    /// Stops taking requests, lets the batch being applied commit and answers what still waits 503, within `bound`.
    @discardableResult
    func drain(within bound: Duration) -> Bool {
        condition.lock()
        let wasRunning = running
        stopping = true
        condition.broadcast()
        condition.unlock()
        guard wasRunning else { return true }
        return loopEnded.wait(within: bound)
    }

    private func run() {
        while let batch = nextBatch() {
            let answers = apply(batch.map(\.request))
            condition.lock()
            for (request, _) in batch { inFlight.remove(request.id) }
            condition.unlock()
            for ((request, respond), answer) in zip(batch, answers) {
                metrics.count(request.operation, answer.outcome)
                respond(answer)
            }
        }
        condition.lock()
        let left = waiting
        waiting.removeAll()
        inFlight.removeAll()
        running = false
        condition.unlock()
        for (request, respond) in left {
            metrics.count(request.operation, .unavailable)
            respond(.error(503, "shutting_down", "the ledger is stopping; retry with the same Idempotency-Key", outcome: .unavailable))
        }
    }

    /// The requests waiting (at most `maxBatch`), waiting for one; nil once stopping.
    private func nextBatch() -> [(request: WalletRequest, respond: Respond)]? {
        condition.lock()
        defer { condition.unlock() }
        while waiting.isEmpty, !stopping { condition.wait() }
        guard !stopping else { return nil }
        let count = min(waiting.count, maxBatch)
        let batch = Array(waiting.prefix(count))
        waiting.removeFirst(count)
        return batch
    }

    /// The answers to `requests`, applied in one transaction (again after a conflict another transaction caused).
    private func apply(_ requests: [WalletRequest]) -> [WalletAnswer] {
        let started = SystemTime.monotonicNanoseconds()
        var attempt = 0
        while true {
            attempt += 1
            do {
                let answers = try database.withConnection { connection throws(PostgresError) in
                    try connection.transaction { session throws(PostgresError) in
                        try WalletBatch.apply(requests, in: session, nowMs: nowMs())
                    }
                }
                metrics.batchSeconds.observeSeconds(since: started)
                metrics.batchRequests.observe(Double(requests.count))
                return answers
            } catch {
                if (error.isTransactionRollback || error.isUniqueViolation), attempt < Self.maxAttempts {
                    metrics.batchRetries.increment()
                    continue
                }
                if !error.isConnectionBroken, !error.isTransactionRollback, requests.count > 1 {
                    // Something of one request the database refused: each on its own, so no other fails with it.
                    logger.warning(
                        "a spend batch failed; applying its requests one at a time",
                        ["requests": .int(requests.count), "error": .string(error.description)])
                    return requests.flatMap { apply([$0]) }
                }
                logger.error(
                    "cannot apply spends and grants", ["requests": .int(requests.count), "error": .string(error.description)])
                let answer = WalletAnswer.error(
                    503, "database_unavailable", "the ledger's database did not answer; retry with the same Idempotency-Key",
                    outcome: .unavailable)
                return requests.map { _ in answer }
            }
        }
    }
}
