import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import Testing

import TestSupport

/// Crashes, rebalances and outages with real processes: every submission still ends with one agreeing verdict.
@Suite(.serialized) struct PipelineResilienceTests {
    /// Every result of one submission agrees (at-least-once duplicates are the same verdict).
    private func expectResultsAgree(_ pipeline: Pipeline, ids: [String]) throws {
        let byId = Dictionary(grouping: try pipeline.results.results(), by: \.submissionId)
        for id in ids {
            let results = try #require(byId[id], "no result for \(id)")
            let first = try #require(results.first)
            for other in results.dropFirst() {
                #expect(other.outcome == first.outcome && other.reason == first.reason, "\(id) disagrees")
                #expect(other.transactions.map(\.creditKey) == first.transactions.map(\.creditKey), "\(id) disagrees")
            }
        }
    }

    private func produceValid(_ pipeline: Pipeline, count: Int, prefix: String) async throws -> [String] {
        var ids: [String] = []
        for index in 0..<count {
            let id = "\(prefix)-\(index)"
            let transactionId = String(3_000_000_000_000_000 + index)
            let receipt = FakeReceipt.valid(
                id: id, transactions: [FakeTransaction(id: transactionId, product: "gems_100")])
            try await pipeline.produce(submission(id, receipt: receipt, expectedTransactionId: transactionId))
            ids.append(id)
        }
        return ids
    }

    @Test func twoVerifiersShareThePartitions() async throws {
        let pipeline = try await Pipeline.start(verifiers: 2, fakeArguments: ["--latency-ms", "20"])
        // Both members must own partitions before the load, or one could take it all.
        let balanced = await eventually(timeout: .seconds(30)) {
            var owned: [Double] = []
            for verifier in pipeline.runningVerifiers {
                owned.append(await verifier.metricSum("kafka_consumer_assigned_partitions") ?? 0)
            }
            return owned.count == 2 && owned.allSatisfy { $0 > 0 }
        }
        #expect(balanced, "the two verifiers did not split the partitions")
        let ids = try await produceValid(pipeline, count: 200, prefix: "shared")
        #expect(await pipeline.waitForResults(ids))
        try expectResultsAgree(pipeline, ids: ids)
        #expect(pipeline.runningVerifiers.count == 2, "a verifier died during the load")
        for verifier in pipeline.runningVerifiers {
            let verified = await verifier.metricSum("verifier_results_total", labels: ["outcome=\"verified\""]) ?? 0
            #expect(verified > 0, "a verifier produced no result")
        }
        #expect(try pipeline.results.results().allSatisfy { $0.outcome == .verified })
        await pipeline.shutdown()
    }

    @Test func aVerifierKilledMidLoadIsReplacedAndNothingIsLost() async throws {
        // 16 calls in flight at 100 ms: about 160 results/s, so the 400 take seconds and the crash lands mid-load.
        let pipeline = try await Pipeline.start(
            verifiers: 1, fakeArguments: ["--latency-ms", "100"], verifierSettings: ["VERIFIER_MAX_IN_FLIGHT": "16"])
        let ids = try await produceValid(pipeline, count: 400, prefix: "crash")
        let someDone = await eventually(timeout: .seconds(30)) { pipeline.results.answeredIds().count >= 50 }
        #expect(someDone)
        let victim = try #require(pipeline.runningVerifiers.first)
        await pipeline.crash(victim)
        #expect(pipeline.results.answeredIds().count < ids.count, "the load finished before the crash")

        try await pipeline.startVerifier(name: "receipt-verifier-restarted")
        #expect(await pipeline.waitForResults(ids, timeout: .seconds(90)))
        try expectResultsAgree(pipeline, ids: ids)
        #expect(try pipeline.results.results().allSatisfy { $0.outcome == .verified })
        await pipeline.shutdown()
    }

    /// The outage lasts until the breaker opened and then four probes failed (1 + 2 + 4 + 8 s of holding work back,
    /// about 20 s with the first rounds): measured by what the verifier did, not by a clock (`BreakerProbes`). At that moment the
    /// results topic's offsets say what was written during the outage, and it is all read before it is judged.
    @Test func anAppleOutageThroughFourFailedProbesProducesLagNotFailures() async throws {
        let pipeline = try await Pipeline.start(
            verifiers: 1, fakeArguments: ["--latency-ms", "5"],
            verifierSettings: [
                "VERIFIER_RETRY_BACKOFF_MS": "2000", "VERIFIER_RETRY_MAX_BACKOFF_MS": "5000",
                "VERIFIER_BREAKER_MIN_CALLS": "5", "VERIFIER_BREAKER_WINDOW": "10",
            ])
        try await pipeline.fake.setOutage(true)
        let ids = try await produceValid(pipeline, count: 40, prefix: "outage")
        let verifier = try #require(pipeline.runningVerifiers.first)
        let opened = await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            (await verifier.metricSum("verifier_breaker_transitions_total", labels: ["to=\"open\""]) ?? 0) >= 1
        }
        #expect(opened, "the breaker did not open during the outage")
        let beforeProbes = try #require(await verifier.unavailableRoundsWithNothingAtApple())
        let probesFailed = await eventually(timeout: .seconds(60), interval: .milliseconds(100)) {
            await verifier.unavailableRounds() >= beforeProbes + 4
        }
        #expect(probesFailed, "four probes did not fail while the breaker was open")
        #expect(await verifier.metricSum("verifier_breaker_open") == 1, "the breaker closed while Apple was down")
        #expect(try await pipeline.results.readEverythingWrittenSoFar(), "the results written so far were not read")
        #expect(try pipeline.results.results().allSatisfy { $0.outcome != .failed }, "failed results during the outage")
        #expect(
            (await verifier.metricSum("verifier_results_total", labels: ["outcome=\"failed\""]) ?? 0) == 0,
            "the verifier wrote failed results during the outage")
        try await pipeline.fake.setOutage(false)

        #expect(await pipeline.waitForResults(ids, timeout: .seconds(90)))
        let results = try pipeline.results.results()
        #expect(results.allSatisfy { $0.outcome == .verified }, "\(results.filter { $0.outcome != .verified })")
        #expect(pipeline.deadLetters.messages.isEmpty)
        await pipeline.shutdown()
    }

    @Test func aFrozenBrokerLosesNothing() async throws {
        let pipeline = try await Pipeline.start(verifiers: 1, fakeArguments: ["--latency-ms", "20"])
        let before = try await produceValid(pipeline, count: 100, prefix: "broker-a")
        // Freeze the whole cluster for a few seconds while the verifier is busy with it.
        pipeline.kafka.process.send(signal: SIGSTOP)
        try await Task.sleep(for: .seconds(4))
        pipeline.kafka.process.send(signal: SIGCONT)
        let after = try await produceValid(pipeline, count: 100, prefix: "broker-b")

        #expect(await pipeline.waitForResults(before + after, timeout: .seconds(90)))
        try expectResultsAgree(pipeline, ids: before + after)
        #expect(pipeline.runningVerifiers.count == 1, "the verifier did not survive the broker outage")
        await pipeline.shutdown()
    }
}
