import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import Testing

import TestSupport

/// Every verdict path through the real processes: ingest -> Kafka -> verifier -> fake App Store -> results / DLQ.
@Suite(.serialized) struct PipelineScenarioTests {
    struct Scenario {
        let name: String
        let receipt: String
        var transactionId: String? = "1000000000000001"
        var productId: String? = nil
        let outcome: Outcome
        let reason: Reason?
        var environment: AppStoreEnvironment? = nil
    }

    static let scenarios: [Scenario] = [
        Scenario(
            name: "production", receipt: FakeReceipt.valid(id: "production"), productId: "gems_100",
            outcome: .verified, reason: nil, environment: .production),
        Scenario(
            name: "sandbox", receipt: FakeReceipt.valid(id: "sandbox", environment: "Sandbox"), outcome: .verified,
            reason: nil, environment: .sandbox),
        Scenario(
            name: "bundle", receipt: FakeReceipt.valid(id: "bundle", bundleId: "com.other.app"), outcome: .rejected,
            reason: .bundleMismatch),
        Scenario(
            name: "missing", receipt: FakeReceipt.valid(id: "missing"), transactionId: "1999999999999999",
            outcome: .rejected, reason: .transactionNotFound),
        Scenario(
            name: "product", receipt: FakeReceipt.valid(id: "product"), productId: "gems_9999", outcome: .rejected,
            reason: .productMismatch),
        Scenario(
            name: "refunded",
            receipt: FakeReceipt.valid(
                id: "refunded",
                transactions: [FakeTransaction(id: "1000000000000001", product: "gems_100", refundedMs: 1_700_000_000_000)]),
            outcome: .rejected, reason: .refunded),
        Scenario(
            name: "empty", receipt: FakeReceipt.valid(id: "empty", transactions: []), transactionId: nil,
            outcome: .rejected, reason: .noPurchases),
        Scenario(
            name: "invalid", receipt: FakeReceipt.status(21003, id: "invalid"), outcome: .rejected,
            reason: .invalidReceipt),
        Scenario(
            name: "flaky", receipt: FakeReceipt.failingFirst(2, id: "flaky"), outcome: .verified, reason: nil,
            environment: .production),
        Scenario(
            name: "secret", receipt: FakeReceipt.status(21004, id: "secret"), outcome: .failed, reason: .configError),
    ]

    @Test func everyVerdictPathEndsInTheContractResult() async throws {
        let pipeline = try await Pipeline.start(withIngest: true)
        var idsByScenario: [String: String] = [:]
        for scenario in Self.scenarios {
            var body: [String: Any] = [
                "receipt_data": scenario.receipt, "order_id": "order-\(scenario.name)", "user_id": "user-\(scenario.name)",
            ]
            if let transactionId = scenario.transactionId { body["expected_transaction_id"] = transactionId }
            if let productId = scenario.productId { body["expected_product_id"] = productId }
            idsByScenario[scenario.name] = try await pipeline.submitThroughIngest(body)
        }
        // Straight to the topic, as a high-volume backend may: one unreadable receipt, one message that is not JSON.
        try await pipeline.produceRaw(
            #"{"schema_version":1,"submission_id":"malformed-1","receipt_data":"%%%","order_id":"o-m"}"#, key: "o-m")
        try await pipeline.produceRaw("this is not json", key: "garbage")

        let answered = await pipeline.waitForResults(Array(idsByScenario.values) + ["malformed-1"], timeout: .seconds(60))
        #expect(answered, "missing results; verifier stderr:\n\(pipeline.runningVerifiers.first?.process.stderrTail() ?? "")")

        for scenario in Self.scenarios {
            let id = try #require(idsByScenario[scenario.name])
            let results = try pipeline.results.results(for: id)
            let result = try #require(results.first, "no result for \(scenario.name)")
            #expect(result.outcome == scenario.outcome, "\(scenario.name): \(result)")
            #expect(result.reason == scenario.reason, "\(scenario.name): \(result)")
            #expect(result.orderId == "order-\(scenario.name)")
            #expect(result.userId == "user-\(scenario.name)")
            if let environment = scenario.environment {
                #expect(result.environment == environment, "\(scenario.name)")
            }
            if scenario.outcome == .verified {
                let transaction = try #require(result.transactions.first)
                #expect(result.transactions.count == 1)
                #expect(transaction.transactionId == "1000000000000001")
                #expect(transaction.creditKey == "apple:\(result.environment!.rawValue.lowercased()):1000000000000001")
                #expect(result.bundleId == "com.example.game")
                #expect(result.appleStatus == 0)
            }
        }

        // The sandbox receipt went to production first (21007), then to the sandbox; the flaky one needed 3 calls.
        let sandboxCalls = try await pipeline.fake.calls(receipt: "sandbox")
        #expect(sandboxCalls.production == 1 && sandboxCalls.sandbox == 1)
        #expect(try pipeline.results.results(for: try #require(idsByScenario["flaky"])).first?.attempts == 3)

        // Results are keyed like their submission and carry the routing headers.
        let productionMessage = try #require(
            pipeline.results.messages.first {
                $0.headers.contains { $0.name == MessageHeaders.submissionId && $0.stringValue == idsByScenario["production"] }
            })
        #expect(productionMessage.key == Array("user-production".utf8))
        #expect(productionMessage.headers.contains { $0.name == MessageHeaders.outcome && $0.stringValue == "verified" })

        // Unprocessable messages are on the DLQ with their reason and original bytes; the one with an id also
        // has a failed result.
        let malformed = try #require(try pipeline.results.results(for: "malformed-1").first)
        #expect(malformed.outcome == .failed && malformed.reason == .malformedSubmission)
        // The DLQ records were acknowledged with the results but reach this collector on their own schedule.
        let expectedDeadLetters = 3
        #expect(await eventually(timeout: .seconds(20)) { pipeline.deadLetters.messages.count >= expectedDeadLetters })
        let deadLetters = try pipeline.deadLetters.messages.map { try MessageCoding.decode(DeadLetterRecord.self, from: $0.value) }
        #expect(deadLetters.count == expectedDeadLetters, "\(deadLetters)")
        #expect(deadLetters.contains { $0.submissionId == "malformed-1" && $0.reason == .malformedSubmission })
        #expect(
            deadLetters.contains {
                $0.submissionId == nil && $0.reason == .malformedSubmission
                    && Base64.decode($0.originalValue) == Array("this is not json".utf8)
            })
        #expect(deadLetters.contains { $0.submissionId == idsByScenario["secret"] && $0.reason == .configError })

        await pipeline.shutdown()
    }
}

/// Every metric family the running services expose is described for operators in docs/OPERATIONS.md.
@Suite(.serialized) struct MetricsDocumentationTests {
    private static let operationsGuide = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/OPERATIONS.md")

    private func families(at url: String) async throws -> Set<String> {
        let response = try await TestHTTPClient.send("GET", url)
        try #require(response.status == 200)
        return Set(
            response.text.split(separator: "\n").compactMap { line -> String? in
                let parts = line.split(separator: " ")
                return parts.count >= 3 && parts[0] == "#" && parts[1] == "TYPE" ? String(parts[2]) : nil
            })
    }

    @Test func everyExportedMetricIsInTheOperatorsGuide() async throws {
        let pipeline = try await Pipeline.start(withIngest: true)
        let guide = try String(contentsOf: Self.operationsGuide, encoding: .utf8)
        let ingest = try #require(pipeline.ingest)
        let verifier = try #require(pipeline.runningVerifiers.first)
        let exported = try await families(at: ingest.url("/metrics"))
            .union(try await families(at: verifier.url("/metrics")))
        #expect(exported.count > 20, "too few metric families: \(exported.sorted())")
        // The name itself, not a longer one it prefixes: followed by a closing backtick or its labels.
        let undocumented = exported.filter { !guide.contains("`\($0)`") && !guide.contains("`\($0){") }.sorted()
        #expect(undocumented.isEmpty, "metrics missing from docs/OPERATIONS.md: \(undocumented)")
        await pipeline.shutdown()
    }
}
