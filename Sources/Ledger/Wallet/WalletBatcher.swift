import Foundation
import Postgres
import ServiceSupport

/// Group commit for spends and grants: requests wait in arrival order while the batches before them are applied,
/// then all of them (up to `maxBatch`) are applied in one transaction (`WalletBatch`) and committed once, and each
/// gets its answer. One commit per batch instead of one per spend is what lets many concurrent spenders share a
/// durable database (as bulk ledgers do).
///
/// Batches are applied in lanes: each lane is a thread with a database connection of its own that takes what waits
/// whenever it is free, so one batch is read, decided and written while the other's commit flushes (PostgreSQL
/// flushes concurrent commits together): a spend that arrives while a batch commits is taken by the other lane then,
/// not after that commit (one slow commit was the p99: docs/BENCHMARKS.md, "Spends' p99 above 25 ms"). A lane
/// takes no request whose wallet the other lane is applying: it would only wait for that batch's lock and hold up the
/// rest of its own batch meanwhile; such a request waits here instead (a wallet's requests are applied in arrival
/// order) and goes with the next batch once that batch committed. Across instances and with the Kafka consumer's
/// batches, the wallet's lock (its `balances` row, taken first, in key order) orders them: everything a batch
/// decides on is read after it holds the lock.
///
/// A request whose key is already waiting or being applied in this process (in either lane) is answered 409
/// `idempotency_key_in_flight` at once (the draft's "request in flight"); in another instance it waits for the
/// first one's wallet lock and is then answered as its replay. A deadlock with the Kafka consumer's batch (which
/// PostgreSQL breaks by aborting one side), a serialization failure, or a key first used by another instance
/// meanwhile, applies the batch again. A database that does not answer gets every request of the batch 503: nothing
/// of it was committed, or if the commit went through unseen, the same key answers the same again.
///
/// `@unchecked Sendable`: every stored var is read and written only while `condition` is locked.
final class WalletBatcher: @unchecked Sendable {
    typealias Respond = @Sendable (WalletAnswer) -> Void

    /// Batches applied at once, each over a connection of its own (`LedgerService` opens one per lane). Two are
    /// what the overlap needs: while one lane commits, the other applies the next batch. A third would mostly wait
    /// for the commit flush the two already share, split the waiting requests into smaller batches (more commits,
    /// each with its round trips) and hold one more connection; one would make every spend wait for the commit
    /// before its batch again. Not a setting: no deployment is better served by another number.
    static let lanes = 2

    private let databases: [DatabaseLink]
    private let metrics: WalletMetrics
    private let logger: Logger
    private let maxBatch: Int
    private let nowMs: @Sendable () -> Int64
    private let condition = NSCondition()
    private var waiting: [(request: WalletRequest, respond: Respond)] = []
    private var inFlight: Set<WalletRequest.RequestId> = []
    /// The wallets of the batches being applied: what waits for one of them stays waiting until that batch is
    /// answered.
    private var walletsApplied: Set<WalletKey> = []
    private var stopping = false
    private var running = false
    private var lanesRunning = 0
    private let lanesEnded = Gate()

    /// How many times a batch is applied again after a deadlock, a serialization failure or a unique violation
    /// before its requests are answered 503.
    static let maxAttempts = 8

    /// - Parameter databases: one connection per lane (`lanes` in service; one lane applies batches one at a time).
    init(
        databases: [DatabaseLink], metrics: WalletMetrics, logger: Logger, maxBatch: Int = 512,
        nowMs: @escaping @Sendable () -> Int64 = { SystemTime.wallMilliseconds() }
    ) {
        precondition(!databases.isEmpty, "a wallet batcher needs a database connection for each lane")
        self.databases = databases
        self.metrics = metrics
        self.logger = logger
        self.maxBatch = maxBatch
        self.nowMs = nowMs
    }

    func start() {
        condition.lock()
        running = true
        lanesRunning = databases.count
        condition.unlock()
        for (index, database) in databases.enumerated() {
            Thread.startNamed("ledger-wallet-\(index + 1)") { [self] in
                run(on: database)
                laneEnded()
            }
        }
    }

    /// Queues `request`; `respond` is called once with its answer, on a lane's thread (or at once).
    func submit(_ request: WalletRequest, respond: @escaping Respond) {
        condition.lock()
        if stopping || !running {
            condition.unlock()
            metrics.count(request.operation, .unavailable)
            respond(Self.shuttingDown)
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

    /// Stops taking requests and answers what still waits 503 at once; lets the batches being applied (one per lane)
    /// commit and answers them, within `bound`.
    @discardableResult
    func drain(within bound: Duration) -> Bool {
        condition.lock()
        let wasRunning = running
        stopping = true
        let left = waiting
        waiting.removeAll()
        for (request, _) in left { inFlight.remove(request.id) }
        condition.broadcast()
        condition.unlock()
        for (request, respond) in left {
            metrics.count(request.operation, .unavailable)
            respond(Self.shuttingDown)
        }
        guard wasRunning else { return true }
        return lanesEnded.wait(within: bound)
    }

    private static let shuttingDown = WalletAnswer.error(
        503, "shutting_down", "the ledger is stopping; retry with the same Idempotency-Key", outcome: .unavailable)

    /// One lane: takes a batch whenever one waits, applies it over `database`, answers it.
    private func run(on database: DatabaseLink) {
        while let batch = nextBatch() {
            let answers = apply(batch.map(\.request), on: database)
            condition.lock()
            for (request, _) in batch {
                inFlight.remove(request.id)
                walletsApplied.remove(request.wallet)
            }
            // What waited for these wallets may go now, in whichever lane is free.
            condition.broadcast()
            condition.unlock()
            for ((request, respond), answer) in zip(batch, answers) {
                metrics.count(request.operation, answer.outcome)
                respond(answer)
            }
        }
    }

    private func laneEnded() {
        condition.lock()
        lanesRunning -= 1
        let last = lanesRunning == 0
        if last { running = false }
        condition.unlock()
        if last { lanesEnded.open() }
    }

    /// The requests waiting (at most `maxBatch`) whose wallets no other lane is applying, in arrival order, waiting
    /// for one; nil once stopping. A wallet's later requests stay behind its first one that stays.
    private func nextBatch() -> [(request: WalletRequest, respond: Respond)]? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            guard !stopping else { return nil }
            var batch: [(request: WalletRequest, respond: Respond)] = []
            var left: [(request: WalletRequest, respond: Respond)] = []
            for entry in waiting {
                if batch.count < maxBatch, !walletsApplied.contains(entry.request.wallet) {
                    batch.append(entry)
                } else {
                    left.append(entry)
                }
            }
            if !batch.isEmpty {
                waiting = left
                for (request, _) in batch { walletsApplied.insert(request.wallet) }
                return batch
            }
            condition.wait()
        }
    }

    /// The answers to `requests`, applied in one transaction (again after a conflict another transaction caused).
    private func apply(_ requests: [WalletRequest], on database: DatabaseLink) -> [WalletAnswer] {
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
                    return requests.flatMap { apply([$0], on: database) }
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
