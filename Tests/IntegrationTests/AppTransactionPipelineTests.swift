import FakeAppStore
import Foundation
import ReceiptModel
import Testing

import TestSupport

/// `signed_app_transaction` through the real executables (issue 29 item 2): the app transaction a StoreKit 2 app
/// sends, submitted at the ingest, verified by receipt-verifier (chain, signature, bundle, environment, then Get App
/// Transaction Info at the fake App Store), and answered with its `app_transaction` and no transactions.
@Suite(.serialized) struct AppTransactionPipelineTests {
    @Test func anAppTransactionSubmittedAtTheIngestComesBackVerifiedWithItsAppTransaction() async throws {
        let keys = try ServerAPIPipelineTests.Keys()
        let pipeline = try await Pipeline.start(
            fakeArguments: ["--latency-ms", "5"] + keys.minted.fakeArguments, withIngest: true,
            verifierSettings: keys.minted.verifierSettings)
        try await pipeline.fake.registerAppTransactions([
            ["id": "705000000000001", "original_application_version": "1.4", "application_version": "9",
             "original_purchase_date_ms": 1_500_000_000_000],
            ["id": "705000000000002", "environment": "Sandbox"],
            ["id": "705000000000003", "bundle_id": "com.other.app"],
        ])
        let production = try await pipeline.fake.signedAppTransaction(id: "705000000000001")
        let sandbox = try await pipeline.fake.signedAppTransaction(id: "705000000000002")
        let otherApp = try await pipeline.fake.signedAppTransaction(id: "705000000000003")
        let submitted = [
            try await pipeline.submitThroughIngest(
                ["signed_app_transaction": production, "submission_id": "app-1", "user_id": "u-1"]),
            try await pipeline.submitThroughIngest(["signed_app_transaction": sandbox, "submission_id": "app-sandbox"]),
            try await pipeline.submitThroughIngest(["signed_app_transaction": otherApp, "submission_id": "app-other"]),
            try await pipeline.submitThroughIngest(
                ["signed_app_transaction": try ServerAPIPipelineTests.forged(production), "submission_id": "app-forged"]),
        ]
        #expect(await pipeline.waitForResults(submitted), "results: \(pipeline.results.answeredIds())")

        let verified = try #require(try pipeline.results.results(for: "app-1").first)
        #expect(verified.outcome == .verified && verified.reason == nil)
        #expect(verified.source == .serverAPI)
        #expect(verified.environment == .production && verified.bundleId == "com.example.game")
        #expect(verified.transactions.isEmpty)
        #expect(verified.userId == "u-1")
        let app = try #require(verified.appTransaction)
        #expect(app.appTransactionId == "705000000000001")
        #expect(app.originalApplicationVersion == "1.4" && app.applicationVersion == "9")
        #expect(app.originalPurchaseDateMs == 1_500_000_000_000)
        #expect(app.environment == .production && app.bundleId == "com.example.game")
        #expect(try await pipeline.fake.serverAPICalls(appTransaction: "705000000000001") == (1, 0))

        // The ingest answers the verdict with the same object (once its index has read the result).
        let ingest = try #require(pipeline.ingest)
        let url = ingest.url("/v1/receipts/app-1")
        #expect(await eventually(timeout: .seconds(30), interval: .milliseconds(100)) {
            (try? await TestHTTPClient.send("GET", url))?.status == 200
        })
        let answer = try await TestHTTPClient.send("GET", url)
        #expect(answer.status == 200)
        let object = try #require(answer.jsonObject?["app_transaction"] as? [String: Any])
        #expect(object["original_application_version"] as? String == "1.4")
        #expect(object["app_transaction_id"] as? String == "705000000000001")
        #expect((answer.jsonObject?["transactions"] as? [Any])?.isEmpty == true)

        let inSandbox = try #require(try pipeline.results.results(for: "app-sandbox").first)
        #expect(inSandbox.outcome == .verified && inSandbox.environment == .sandbox)
        #expect(inSandbox.appTransaction?.environment == .sandbox)
        #expect(try await pipeline.fake.serverAPICalls(appTransaction: "705000000000002") == (0, 1))

        let other = try #require(try pipeline.results.results(for: "app-other").first)
        #expect(other.outcome == .rejected && other.reason == .bundleMismatch && other.appTransaction == nil)

        let forged = try #require(try pipeline.results.results(for: "app-forged").first)
        #expect(forged.outcome == .rejected && forged.reason == .invalidSignature)
        #expect(forged.message?.contains("app transaction") == true)
        await pipeline.shutdown()
    }
}
