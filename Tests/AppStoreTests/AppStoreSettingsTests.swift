import ServiceSupport
import Testing

@testable import AppStore

@Suite struct AppStoreSettingsTests {
    @Test func defaultsFollowTheContract() throws {
        let settings = try AppStoreSettings.fromEnvironment(Settings(environment: ["ALLOWED_BUNDLE_IDS": "a, b"]))
        #expect(settings.endpoints.production == "https://buy.itunes.apple.com/verifyReceipt")
        #expect(settings.endpoints.sandbox == "https://sandbox.itunes.apple.com/verifyReceipt")
        #expect(settings.sharedSecret == nil)
        #expect(settings.timeoutMs == 30_000)
        #expect(settings.maxInFlight == 512)
        #expect(settings.verdictPolicy == VerdictPolicy(allowedBundleIds: ["a", "b"], sandboxPolicy: .accept))
        #expect(settings.caBundlePath == nil)
    }

    @Test func readsEverySetting() throws {
        let settings = try AppStoreSettings.fromEnvironment(
            Settings(environment: [
                "ALLOWED_BUNDLE_IDS": "com.example.game",
                "APPLE_VERIFY_RECEIPT_URL": "http://127.0.0.1:1/verifyReceipt",
                "APPLE_SANDBOX_VERIFY_RECEIPT_URL": "http://127.0.0.1:1/sandbox/verifyReceipt",
                "APPLE_SHARED_SECRET": "s3cr3t", "APPLE_TIMEOUT_MS": "1500", "SANDBOX_POLICY": "REJECT",
                "VERIFIER_MAX_IN_FLIGHT": "64", "APPLE_RETRY_MAX_ATTEMPTS": "7",
            ]))
        #expect(settings.endpoints.sandbox == "http://127.0.0.1:1/sandbox/verifyReceipt")
        #expect(settings.sharedSecret == "s3cr3t")
        #expect(settings.timeoutMs == 1_500)
        #expect(settings.verdictPolicy.sandboxPolicy == .reject)
        #expect(settings.maxInFlight == 64)
        #expect(settings.retryPolicy.maxAttempts == 7)
        #expect(settings.httpClientConfiguration.maxInFlight == 64)
        #expect(!settings.description.contains("s3cr3t"))
    }

    @Test(arguments: [
        ([:], "ALLOWED_BUNDLE_IDS"),
        (["ALLOWED_BUNDLE_IDS": " , "], "ALLOWED_BUNDLE_IDS"),
        (["ALLOWED_BUNDLE_IDS": "a", "APPLE_TIMEOUT_MS": "soon"], "APPLE_TIMEOUT_MS"),
        (["ALLOWED_BUNDLE_IDS": "a", "APPLE_TIMEOUT_MS": "0"], "APPLE_TIMEOUT_MS"),
        (["ALLOWED_BUNDLE_IDS": "a", "SANDBOX_POLICY": "maybe"], "SANDBOX_POLICY"),
        (["ALLOWED_BUNDLE_IDS": "a", "VERIFIER_MAX_IN_FLIGHT": "0"], "VERIFIER_MAX_IN_FLIGHT"),
        (["ALLOWED_BUNDLE_IDS": "a", "APPLE_VERIFY_RECEIPT_URL": "ftp://x"], "APPLE_VERIFY_RECEIPT_URL"),
        (["ALLOWED_BUNDLE_IDS": "a", "APPLE_SANDBOX_VERIFY_RECEIPT_URL": "nope"], "APPLE_SANDBOX_VERIFY_RECEIPT_URL"),
        (["ALLOWED_BUNDLE_IDS": "a", "APPLE_CA_BUNDLE": "/nonexistent/ca.pem"], "APPLE_CA_BUNDLE"),
        (
            ["ALLOWED_BUNDLE_IDS": "a", "APPLE_RETRY_BASE_DELAY_MS": "900", "APPLE_RETRY_MAX_DELAY_MS": "10"],
            "APPLE_RETRY_MAX_DELAY_MS"
        ),
    ])
    func namesTheBadVariable(environment: [String: String], variable: String) {
        #expect(throws: ConfigurationError.self) {
            try AppStoreSettings.fromEnvironment(Settings(environment: environment))
        }
        do {
            _ = try AppStoreSettings.fromEnvironment(Settings(environment: environment))
        } catch {
            #expect(error.variable == variable)
        }
    }

    @Test func theRequestBodySendsThePasswordOnlyWhenSet() {
        let without = String(
            decoding: VerifyReceiptRequestBody.make(
                receiptData: "QUJD", sharedSecret: nil, excludeOldTransactions: false), as: UTF8.self)
        #expect(without == #"{"receipt-data":"QUJD"}"#)
        let with = String(
            decoding: VerifyReceiptRequestBody.make(
                receiptData: "QUJD", sharedSecret: "p\"w", excludeOldTransactions: true), as: UTF8.self)
        #expect(with == #"{"receipt-data":"QUJD","password":"p\"w","exclude-old-transactions":true}"#)
    }
}
