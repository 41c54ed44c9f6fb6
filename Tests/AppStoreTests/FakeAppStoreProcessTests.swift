import AppStore
import FakeAppStore
import Foundation
import ReceiptModel
import ServiceSupport
import TestSupport
import Testing

/// The `fake-appstore` executable as tests, benchmarks and `make dev` use it.
@Suite(.serialized) struct FakeAppStoreProcessTests {
    @Test func servesBothEnvironmentsCountsCallsAndSwitchesOutages() async throws {
        let fake = try await FakeAppStoreProcess.start(arguments: ["--latency-ms", "5", "--jitter-ms", "5"])
        #expect(fake.url.hasPrefix("http://127.0.0.1:"))
        let settings = try AppStoreSettings.fromEnvironment(
            Settings(
                environment: fake.environment.merging([
                    "ALLOWED_BUNDLE_IDS": "com.example.game", "APPLE_TIMEOUT_MS": "3000",
                    "APPLE_RETRY_MAX_ATTEMPTS": "2",
                    "APPLE_RETRY_BASE_DELAY_MS": "5", "APPLE_RETRY_MAX_DELAY_MS": "10",
                ]) { _, new in new }))
        let verifier = try ReceiptVerifier.verifyReceipt(
            settings: settings, logger: Logger(label: "t", threshold: .error))

        let receipt = FakeReceipt.valid(id: "proc-sandbox", environment: "Sandbox")
        let outcome = await verifier.verify(
            receiptData: receipt, expectations: .init(), deadline: .now() + .seconds(10))
        guard case .verdict(let verdict) = outcome else {
            Issue.record("no verdict: \(outcome)")
            return
        }
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .sandbox)
        #expect(try await fake.calls(receipt: "proc-sandbox") == (1, 1))
        #expect(try await fake.calls(receipt: receipt) == (1, 1))

        try await fake.setOutage(true)
        let during = await verifier.verify(
            receiptData: FakeReceipt.valid(id: "proc-outage"), expectations: .init(), deadline: .now() + .seconds(10))
        guard case .unavailable(let failure) = during else {
            Issue.record("not unavailable: \(during)")
            return
        }
        #expect(failure.attempts == 2)
        #expect(try await fake.calls(receipt: "proc-outage") == (2, 0))
        try await fake.setOutage(false)

        #expect(await fake.stop() == 0)
        #expect(fake.process.stderrLines.contains { $0.contains("\"outage on\"") })
        #expect(!fake.process.stderrLines.joined().contains(receipt), "receipt contents are never logged")
    }

    @Test func writesTheEnvironmentLikeAppleAndAnswers21002ForEveryReceiptOnRequest() async throws {
        let fake = try await FakeAppStoreProcess.start()
        func post(_ path: String, _ receipt: String) async throws -> [String: Any] {
            let response = try await TestHTTPClient.postJSON(fake.url + path, ["receipt-data": receipt])
            return try #require(response.jsonObject)
        }
        let production = FakeReceipt.valid(id: "env-prod")
        #expect(try await post("/verifyReceipt", production)["environment"] as? String == "Production")
        let sandbox = FakeReceipt.valid(id: "env-sandbox", environment: "Sandbox")
        #expect(try await post("/sandbox/verifyReceipt", sandbox)["environment"] as? String == "Sandbox")
        let redirected = try await post("/verifyReceipt", sandbox)
        #expect(redirected["status"] as? Int == 21007)
        #expect(try await post("/verifyReceipt", FakeReceipt.valid(reportedEnvironment: "omit"))["environment"] == nil)
        let lying = FakeReceipt.valid(environment: "Sandbox", reportedEnvironment: "Production")
        #expect(try await post("/sandbox/verifyReceipt", lying)["environment"] as? String == "Production")

        try await fake.setOutage(true, mode: "status21002")
        let during = try await post("/verifyReceipt", production)
        #expect(during["status"] as? Int == 21002)
        #expect(during["environment"] as? String == "Production")
        try await fake.setOutage(false)
        #expect(try await post("/verifyReceipt", production)["status"] as? Int == 0)

        let badMode = try await TestHTTPClient.send("POST", fake.url + "/admin/outage?on=1&mode=status21003")
        #expect(badMode.status == 400)
        #expect(badMode.text.contains("status21002"))
        #expect(await fake.stop() == 0)
    }

    @Test func rejectsUnknownFlags() async throws {
        let process = try ManagedProcess(executable: try TestBinaries.path("fake-appstore"), arguments: ["--bogus"])
        #expect(await process.waitForExit(timeout: .seconds(10)) == 2)
        #expect(process.stderrLines.contains { $0.contains("unknown argument --bogus") })
    }
}
