import AppStore
import FakeAppStore
import Foundation
import ReceiptModel
import ServiceSupport
import SignedData
import Testing
import TestPKI

/// Issue 41 item 8: Apple's production Server API answers 401 until an app's first release, so App Review's
/// purchases of a new app are looked up in the sandbox, as after 4040010, by every lookup that falls back on 4040010
/// (`transaction_id`, and a receipt that names no environment); each move is counted in
/// `appstore_server_api_sandbox_fallbacks_total{reason}`. A purchase the sandbox does not know after a production
/// 401 is a configuration error, never `transaction_not_found`: production never said "not found". The fake answers
/// 401 in production only for a transaction registered with `production_unauthorized`.
@Suite(.serialized) struct ProductionUnauthorizedTests {
    static func fallbacks(_ registry: MetricsRegistry, _ reason: String) -> Int {
        let prefix = #"appstore_server_api_sandbox_fallbacks_total{reason="\#(reason)"} "#
        let line = registry.render().split(separator: "\n").first { $0.hasPrefix(prefix) }
        return line.flatMap { Int(Double($0.dropFirst(prefix.count)) ?? -1) } ?? -1
    }

    @Test func anAppWithoutAReleaseIsFoundInTheSandboxAndTheFallbackCounted() async throws {
        let harness = try ServerAPIHarness()
        let metrics = MetricsRegistry()
        let backend = harness.backend(metrics: metrics)
        harness.fake.register(
            FakeServerTransaction(id: "1000000000004101", environment: "Sandbox", productionUnauthorized: true))
        let verdict = try #require(await harness.verify(.transactionId("1000000000004101"), with: backend).verdict)
        #expect(verdict.outcome == .verified && verdict.environment == .sandbox)
        #expect(Self.fallbacks(metrics, "production_unauthorized") == 1)
        #expect(Self.fallbacks(metrics, "not_found") == 0)
        // The 4040010 fallback is counted under its own reason.
        harness.fake.register(FakeServerTransaction(id: "1000000000004102", environment: "Sandbox"))
        let sandbox = try #require(await harness.verify(.transactionId("1000000000004102"), with: backend).verdict)
        #expect(sandbox.outcome == .verified && sandbox.environment == .sandbox)
        #expect(Self.fallbacks(metrics, "not_found") == 1)
        #expect(Self.fallbacks(metrics, "production_unauthorized") == 1)
    }

    @Test func aPurchaseTheSandboxDoesNotKnowAfterAProduction401IsAConfigurationErrorNotARejection() async throws {
        let harness = try ServerAPIHarness()
        let metrics = MetricsRegistry()
        // Production refuses the key (401); the sandbox has never heard of the id (4040010).
        harness.fake.register(
            FakeServerTransaction(id: "1000000000004103", environment: "Production", productionUnauthorized: true))
        let outcome = await harness.verify(.transactionId("1000000000004103"), with: harness.backend(metrics: metrics))
        #expect(outcome.verdict == nil, "production never said not found: no verdict")
        #expect(outcome.isConfigurationError)
        let failure = try #require(outcome.failure)
        #expect(failure.message.contains("the sandbox does not know transaction 1000000000004103"))
        #expect(harness.fake.serverAPICalls(transaction: "1000000000004103") == (2, 1))
        #expect(Self.fallbacks(metrics, "production_unauthorized") == 1)
    }

    @Test func aSandbox401IsAConfigurationErrorWhateverTheRelease() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeServerTransaction(
                id: "1000000000004104", environment: "Sandbox",
                failures: [.init(httpStatus: 401, environment: "Sandbox", times: 2)], productionUnauthorized: true))
        let outcome = await harness.verify(.transactionId("1000000000004104"), with: harness.backend())
        #expect(outcome.isConfigurationError)
        #expect(try #require(outcome.failure).message.contains("Sandbox"))
        // Production: the 401 and its retry with a fresh token; the sandbox: the same.
        #expect(harness.fake.serverAPICalls(transaction: "1000000000004104") == (2, 2))
    }

    @Test func aReceiptNamingNoEnvironmentFallsBackOnAProduction401Too() async throws {
        let harness = try ServerAPIHarness()
        let metrics = MetricsRegistry()
        let receiptPKI = try TestSigningPKI.mint()
        let backend = harness.backend(receiptRoots: [receiptPKI.rootCertificate], metrics: metrics)
        harness.fake.register(
            FakeServerTransaction(id: "1000000000004111", environment: "Sandbox", productionUnauthorized: true))
        let unnamed = try MintedReceipt.base64(
            pki: receiptPKI, bundleId: ServerAPIHarness.bundleId, receiptType: nil, transactionIds: ["1000000000004111"])
        let verdict = try #require(await harness.verify(.receipt(unnamed), with: backend).verdict)
        #expect(verdict.outcome == .verified && verdict.environment == .sandbox)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:sandbox:1000000000004111"])
        #expect(Self.fallbacks(metrics, "production_unauthorized") == 1)

        // Not in the sandbox either: a configuration error, not transaction_not_found.
        harness.fake.register(
            FakeServerTransaction(id: "1000000000004112", environment: "Production", productionUnauthorized: true))
        let lost = try MintedReceipt.base64(
            pki: receiptPKI, bundleId: ServerAPIHarness.bundleId, receiptType: nil, transactionIds: ["1000000000004112"])
        let outcome = await harness.verify(.receipt(lost), with: backend)
        #expect(outcome.isConfigurationError && outcome.verdict == nil)

        // A receipt that names Production is a released app's: its 401 is the key's, and the sandbox is not asked.
        harness.fake.register(
            FakeServerTransaction(id: "1000000000004113", environment: "Sandbox", productionUnauthorized: true))
        let production = try MintedReceipt.base64(
            pki: receiptPKI, bundleId: ServerAPIHarness.bundleId, receiptType: "Production",
            transactionIds: ["1000000000004113"])
        #expect(await harness.verify(.receipt(production), with: backend).isConfigurationError)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000004113").sandbox == 0)
    }
}
