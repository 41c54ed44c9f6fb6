import FakeAppStore
import Foundation
import ReceiptModel
import Testing

import TestSupport

/// `PRODUCT_CATALOG_FILE` in the running verifier process: results carry what to credit, unlisted products are
/// `unknown_product`, and the file is followed without a restart.
@Suite(.serialized) struct PipelineProductCatalogTests {
    static let gems = #""gems_100": {"type": "consumable", "credit": {"item": "gems", "amount": 100}}"#
    static let vip = #""vip": {"type": "non_consumable", "credit": {"entitlement": "vip"}}"#

    private func catalogFile() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent("catalog.json")
    }

    private func produce(_ pipeline: Pipeline, _ id: String, product: String, transactionId: String) async throws {
        let receipt = FakeReceipt.valid(id: id, transactions: [FakeTransaction(id: transactionId, product: product)])
        try await pipeline.produce(submission(id, receipt: receipt, expectedTransactionId: transactionId))
    }

    private func result(_ pipeline: Pipeline, _ id: String) async throws -> VerificationResult {
        #expect(await pipeline.waitForResults([id], timeout: .seconds(30)), "no result for \(id)")
        return try #require(try pipeline.results.results(for: id).first)
    }

    @Test func resultsCarryTheCatalogsCreditAndAChangedFileIsFollowedWithoutARestart() async throws {
        let file = try catalogFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(#"{"products": {\#(Self.gems)}}"#.utf8).write(to: file, options: .atomic)
        let pipeline = try await Pipeline.start(verifierSettings: ["PRODUCT_CATALOG_FILE": file.path])
        let verifier = try #require(pipeline.runningVerifiers.first)

        try await produce(pipeline, "catalog-gems", product: "gems_100", transactionId: "8000000000000001")
        try await produce(pipeline, "catalog-vip-1", product: "vip", transactionId: "8000000000000002")
        let gems = try await result(pipeline, "catalog-gems")
        #expect(gems.outcome == .verified)
        let gemsTransaction = try #require(gems.transactions.first)
        #expect(gemsTransaction.creditable)
        #expect(gemsTransaction.credit == .object(["item": .string("gems"), "amount": .integer(100)]))
        #expect(gemsTransaction.productType == .consumable)
        let unlisted = try await result(pipeline, "catalog-vip-1")
        #expect(unlisted.outcome == .rejected)
        #expect(unlisted.reason == .unknownProduct)
        #expect(unlisted.transactions.map(\.creditable) == [false])

        // An invalid file keeps the catalog in use.
        try Data(#"{"products": {"vip": {"type": "gift"}}}"#.utf8).write(to: file, options: .atomic)
        let refused = await eventually(timeout: .seconds(15), interval: .milliseconds(200)) {
            (await verifier.metricSum("appstore_product_catalog_reloads_total", labels: [#"result="invalid""#]) ?? 0)
                >= 1
        }
        #expect(refused, "the invalid catalog was not noticed")
        #expect(verifier.process.stderrLines.contains { $0.contains("keeping the previous catalog") })
        try await produce(pipeline, "catalog-gems-2", product: "gems_100", transactionId: "8000000000000003")
        #expect(try await result(pipeline, "catalog-gems-2").outcome == .verified)

        // A valid change is followed: vip is creditable now, with its own credit object.
        try Data(#"{"products": {\#(Self.gems), \#(Self.vip)}}"#.utf8).write(to: file, options: .atomic)
        let reloaded = await eventually(timeout: .seconds(15), interval: .milliseconds(200)) {
            await verifier.metricSum("appstore_product_catalog_products") == 2
        }
        #expect(reloaded, "the changed catalog was not re-read")
        try await produce(pipeline, "catalog-vip-2", product: "vip", transactionId: "8000000000000004")
        let vip = try await result(pipeline, "catalog-vip-2")
        #expect(vip.outcome == .verified)
        #expect(vip.transactions.first?.credit == .object(["entitlement": .string("vip")]))
        #expect(vip.transactions.first?.productType == .nonConsumable)
        await pipeline.shutdown()
    }

    @Test func anInvalidCatalogStopsTheVerifierAtStartNamingTheVariable() async throws {
        let file = try catalogFile()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(#"{"products": {"gems_100": {"type": "consumable"}}}"#.utf8).write(to: file, options: .atomic)
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-verifier"),
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "ALLOWED_BUNDLE_IDS": "com.example.game",
                "PRODUCT_CATALOG_FILE": file.path,
            ])
        #expect(await process.waitForExit(timeout: .seconds(20)) == 2)
        #expect(
            process.stderrLines.contains {
                $0.contains("PRODUCT_CATALOG_FILE") && $0.contains("has no \\\"credit\\\"")
            }, "\(process.stderrTail())")
    }
}
