import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import Testing

import TestSupport

/// Apple answering 21002 ("malformed receipt data, or a temporary issue") for every receipt at once, with the whole
/// pipeline as separate processes: it is an outage (breaker open, partitions paused, lag), never a rejection.
@Suite(.serialized) struct PipelineStatus21002BurstTests {
    /// One submission's retry budget for 21002 is two answers about 0.1 s apart, and its rounds (three, one second
    /// apart, then `failed`) would be spent in seconds too: the burst lasts until six probes of the open breaker
    /// failed (0.5 s doubling to 2 s apart, about 10 s; `BreakerProbes`), twice a submission's rounds.
    ///
    /// The burst is called at the first 21002 (one answer, one receipt): when the consumer hands the verifier one
    /// partition's records before the others', a receipt could otherwise be answered twice before any other receipt
    /// is, which no detector can tell from a malformed receipt. The thresholds themselves, and the rule that holds a
    /// verdict while a burst may be forming, are `MalformedReceiptBurstDetectorTests` and `ReceiptVerifierTests`.
    static let verifierSettings = [
        "APPLE_RETRY_MAX_ATTEMPTS": "3", "APPLE_RETRY_21002_MAX_ATTEMPTS": "2",
        "APPLE_RETRY_BASE_DELAY_MS": "100", "APPLE_RETRY_MAX_DELAY_MS": "300",
        "APPLE_21002_BURST_WINDOW": "20", "APPLE_21002_BURST_MIN_ANSWERS": "1", "APPLE_21002_BURST_SHARE": "0.5",
        "APPLE_21002_BURST_MIN_RECEIPTS": "1",
        "VERIFIER_RETRY_ROUNDS": "3", "VERIFIER_RETRY_BACKOFF_MS": "1000", "VERIFIER_RETRY_MAX_BACKOFF_MS": "2000",
        "VERIFIER_BREAKER_WINDOW": "10", "VERIFIER_BREAKER_MIN_CALLS": "5", "VERIFIER_BREAKER_PROBE_MS": "500",
        "VERIFIER_BREAKER_MAX_PROBE_MS": "2000",
    ]

    @Test func aBurstOf21002ForEveryReceiptRejectsNothingAndEverySubmissionVerifiesAfterIt() async throws {
        let pipeline = try await Pipeline.start(
            verifiers: 0, fakeArguments: ["--latency-ms", "5"], verifierSettings: Self.verifierSettings)
        try await pipeline.fake.setOutage(true, mode: "status21002")
        // Produced before the verifier starts, so that its first fetch sends them to Apple together.
        var ids: [String] = []
        for index in 0..<30 {
            let id = "burst21002-\(index)"
            let transactionId = String(4_000_000_000_000_000 + index)
            let receipt = FakeReceipt.valid(
                id: id, transactions: [FakeTransaction(id: transactionId, product: "gems_100")])
            try await pipeline.produce(submission(id, receipt: receipt, expectedTransactionId: transactionId))
            ids.append(id)
        }
        let verifier = try await pipeline.startVerifier()

        let opened = await eventually(timeout: .seconds(45), interval: .milliseconds(200)) {
            await verifier.metricSum("verifier_breaker_open") == 1
        }
        #expect(opened, "the breaker did not open during the 21002 burst")
        let paused = await eventually(timeout: .seconds(20), interval: .milliseconds(200)) {
            (await verifier.metricSum("verifier_paused_partitions") ?? 0) >= 1
        }
        #expect(paused, "no partition was paused while Apple answered 21002 for everything")
        let beforeProbes = try #require(await verifier.unavailableRoundsWithNothingAtApple())
        let probed = await eventually(timeout: .seconds(45), interval: .milliseconds(100)) {
            await verifier.unavailableRounds() >= beforeProbes + 6
        }
        #expect(probed, "six probes did not fail while the breaker was open")

        // The end of the burst: the topics' offsets say what was written until now, and all of it was read.
        #expect(try await pipeline.results.readEverythingWrittenSoFar())
        #expect(try await pipeline.deadLetters.readEverythingWrittenSoFar())
        for kind in ["result", "dlq"] {
            let written = await verifier.metricSum("verifier_records_published_total", labels: ["kind=\"\(kind)\""])
            #expect(written == 0, "\(kind) records acknowledged during the burst")
        }
        let duringBurst = try pipeline.results.results()
        #expect(duringBurst.isEmpty, "results during the burst: \(duringBurst.map { ($0.outcome, $0.reason) })")
        #expect(pipeline.deadLetters.messages.isEmpty, "DLQ records during the burst")
        #expect((await verifier.metricSum("appstore_21002_outage_answers_total") ?? 0) > 0)
        #expect(await verifier.metricSum("appstore_21002_burst") == 1)
        #expect((try await pipeline.fake.calls(receipt: "burst21002-0")).production >= 2)

        try await pipeline.fake.setOutage(false)
        #expect(await pipeline.waitForResults(ids, timeout: .seconds(90)))
        let results = try pipeline.results.results()
        let notVerified = results.filter { $0.outcome != .verified }
        #expect(notVerified.isEmpty, "\(notVerified.map { ($0.submissionId, $0.outcome, $0.reason, $0.message) })")
        #expect(Set(results.map(\.submissionId)) == Set(ids))
        #expect(results.allSatisfy { $0.transactions.allSatisfy(\.creditable) })
        #expect(pipeline.deadLetters.messages.isEmpty)
        #expect(
            (await verifier.metricSum("verifier_results_total", labels: ["outcome=\"rejected\""]) ?? 0) == 0)
        await pipeline.shutdown()
    }
}
