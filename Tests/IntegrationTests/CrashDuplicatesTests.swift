import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import Testing

import TestSupport

/// What a crash costs: every submission a SIGKILLed verifier's successor redoes is another Apple call and a duplicate
/// result. With offsets committed promptly it is about the in-flight window, not what finished since the last
/// periodic auto-commit.
@Suite(.serialized) struct CrashDuplicatesTests {
    /// Apple calls in flight per verifier. At the fake's 100 ms a verifier finishes at most 640 submissions/s, so a
    /// commit interval of 100 ms adds at most ~64 more redone submissions per crash.
    static let inFlight = 64

    @Test func aKilledVerifiersSuccessorRedoesAboutTheInFlightWindowNotTheWorkSinceTheLastAutoCommit() async throws {
        // Auto-commit every 5 s, as librdkafka's default: whatever is redone beyond the in-flight window would be
        // the seconds of results since the last auto-commit.
        let pipeline = try await Pipeline.start(
            verifiers: 1, fakeArguments: ["--latency-ms", "100"],
            verifierSettings: [
                "VERIFIER_MAX_IN_FLIGHT": String(Self.inFlight), "KAFKA_AUTO_COMMIT_INTERVAL_MS": "5000",
            ])
        let count = 12_000
        let ids = try await produceConcurrently(pipeline, count: count)
        let kills = 3
        for kill in 1...kills {
            // Kill while loaded: the successor (or the first verifier) has been delivering results for a while.
            let before = pipeline.results.messages.count
            let loaded = await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
                pipeline.results.messages.count >= before + 1_500
            }
            try #require(loaded, "kill \(kill): the verifier delivered no steady load")
            #expect(pipeline.results.messages.count < count, "kill \(kill): the load finished before the crash")
            let victim = try #require(pipeline.runningVerifiers.first)
            await pipeline.crash(victim)
            try await pipeline.startVerifier(name: "receipt-verifier-after-kill-\(kill)")
        }
        let everyResult = await eventually(timeout: .seconds(180), interval: .milliseconds(500)) {
            Set(pipeline.results.messages.compactMap { $0.headers.value(named: MessageHeaders.submissionId) }).count
                >= count
        }
        #expect(everyResult, "not every submission got a result")

        let results = try pipeline.results.results()
        let byId = Dictionary(grouping: results, by: \.submissionId)
        #expect(Set(byId.keys) == Set(ids))
        for (id, copies) in byId where copies.count > 1 {
            #expect(copies.allSatisfy { $0.outcome == copies[0].outcome && $0.outcome == .verified }, "\(id) disagrees")
        }
        let duplicates = results.count - byId.count
        // The in-flight window (published, offset not yet stored) plus one commit interval of results (at most
        // another window at this latency), twice over for margin. Committing only on the auto-commit redid ~1,000
        // per kill here (measured with the previous verifier); prompt commits ~70.
        let bound = kills * 4 * Self.inFlight
        #expect(
            duplicates <= bound,
            "\(duplicates) duplicate results after \(kills) SIGKILLs (\(duplicates / kills) per kill; bound \(bound))")
        print("crash duplicates: \(duplicates) after \(kills) SIGKILLs (\(duplicates / kills) per kill, bound \(bound))")
        await pipeline.shutdown()
    }

    /// Produces `count` valid submissions straight to the submissions topic, many sends in flight at once.
    private func produceConcurrently(_ pipeline: Pipeline, count: Int) async throws -> [String] {
        let ids = (0..<count).map { "dup-\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in stride(from: 0, to: count, by: 500) {
                group.addTask {
                    for index in chunk..<min(chunk + 500, count) {
                        let transactionId = String(4_000_000_000_000_000 + index)
                        let receipt = FakeReceipt.valid(
                            id: ids[index], transactions: [FakeTransaction(id: transactionId, product: "gems_100")])
                        try await pipeline.produce(
                            submission(ids[index], receipt: receipt, expectedTransactionId: transactionId))
                    }
                }
            }
            try await group.waitForAll()
        }
        return ids
    }
}
