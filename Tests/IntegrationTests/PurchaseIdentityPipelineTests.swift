import FakeAppStore
import Foundation
import ReceiptModel
import Testing

import TestSupport

/// One purchase, one `credit_key`, through the real processes (ingest -> Kafka -> verifier -> fake App Store): a
/// non-consumable bought on one device and restored on another (Apple mints a new transaction id for the restore)
/// ends in one creditable key; two periods of one subscription stay two.
@Suite(.serialized) struct PurchaseIdentityPipelineTests {
    static let original = "3000000000000001"
    static let restore = "3000000000000002"

    @Test func aPurchaseAndItsRestoreAreOneCreditKey() async throws {
        let pipeline = try await Pipeline.start(withIngest: true)
        let bought = FakeReceipt.valid(
            id: "bought", transactions: [FakeTransaction(id: Self.original, product: "premium_unlock")])
        let restored = FakeReceipt.valid(
            id: "restored",
            transactions: [FakeTransaction(id: Self.restore, product: "premium_unlock", originalId: Self.original)])
        let renewals = FakeReceipt.valid(
            id: "renewals",
            transactions: [
                FakeTransaction(id: "3000000000000010", product: "pro_monthly", expiresMs: 1_700_000_000_000),
                FakeTransaction(
                    id: "3000000000000011", product: "pro_monthly", originalId: "3000000000000010",
                    expiresMs: 1_702_600_000_000),
            ], subscription: true)

        let boughtId = try await pipeline.submitThroughIngest([
            "receipt_data": bought, "user_id": "u-1", "expected_transaction_id": Self.original,
        ])
        let restoredId = try await pipeline.submitThroughIngest([
            "receipt_data": restored, "user_id": "u-1", "expected_transaction_id": Self.restore,
        ])
        let renewalsId = try await pipeline.submitThroughIngest(["receipt_data": renewals, "user_id": "u-2"])
        let answered = await pipeline.waitForResults([boughtId, restoredId, renewalsId], timeout: .seconds(60))
        #expect(answered, "missing results; verifier stderr:\n\(pipeline.runningVerifiers.first?.process.stderrTail() ?? "")")

        let boughtResult = try #require(try pipeline.results.results(for: boughtId).first)
        let restoredResult = try #require(try pipeline.results.results(for: restoredId).first)
        #expect(boughtResult.outcome == .verified && restoredResult.outcome == .verified)
        #expect(restoredResult.transactions.map(\.transactionId) == [Self.restore])
        let creditable = (boughtResult.transactions + restoredResult.transactions).filter(\.creditable)
        #expect(creditable.count == 2, "both transactions are genuine and creditable")
        #expect(Set(creditable.map(\.creditKey)) == ["apple:production:\(Self.original)"], "one purchase, one key")

        let renewalsResult = try #require(try pipeline.results.results(for: renewalsId).first)
        #expect(renewalsResult.outcome == .verified)
        let periods = renewalsResult.transactions.map(\.creditKey)
        #expect(periods.count == 2 && Set(periods).count == 2, "two periods, two keys: \(periods)")
        #expect(periods.allSatisfy { $0.hasPrefix("apple:production:period:") }, "\(periods)")
        await pipeline.shutdown()
    }
}
