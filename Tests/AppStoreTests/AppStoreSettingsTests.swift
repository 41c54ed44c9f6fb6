import Foundation
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

    static let minimal = ["ALLOWED_BUNDLE_IDS": "com.example.game"]

    @Test(arguments: [
        "https://buy.itunes.apple.com/verifyReceipt", "https://10.0.0.1/verifyReceipt",
        "http://127.0.0.1:8090/verifyReceipt", "http://127.9.8.7/verifyReceipt", "http://localhost:8090/x",
        "http://LOCALHOST/x", "http://[::1]:8090/verifyReceipt", "http://[0:0:0:0:0:0:0:1]/x",
        "http://user:pw@127.0.0.1:1/x", "http://127.0.0.1?x=1",
    ])
    func appleEndpointsAreHTTPSOrLoopback(url: String) throws {
        var environment = Self.minimal
        environment["APPLE_VERIFY_RECEIPT_URL"] = url
        environment["APPLE_SANDBOX_VERIFY_RECEIPT_URL"] = url
        let settings = try AppStoreSettings.fromEnvironment(Settings(environment: environment))
        #expect(settings.endpoints == .init(production: url, sandbox: url))
    }

    @Test(arguments: [
        "http://buy.itunes.apple.com/verifyReceipt", "http://fake-appstore:8090/verifyReceipt", "http://10.0.0.1/x",
        "http://127.0.0.1.evil.example/x", "http://127.0.0.1@evil.example/x", "http://[::2]/x",
        "http://[::ffff:8.8.8.8]/x", "http://128.0.0.1/x", "http://127.0.0/x", "http://localhost.evil.example/x",
    ])
    func plainHTTPElsewhereIsAConfigurationErrorNamingTheVariable(url: String) {
        for variable in ["APPLE_VERIFY_RECEIPT_URL", "APPLE_SANDBOX_VERIFY_RECEIPT_URL"] {
            var environment = Self.minimal
            environment[variable] = url
            #expect {
                try AppStoreSettings.fromEnvironment(Settings(environment: environment))
            } throws: { error in
                let error = error as? ConfigurationError
                return error?.variable == variable && error?.problem.contains("https://") == true
            }
        }
    }

    @Test func readsThe21002BurstSettings() throws {
        let defaults = try AppStoreSettings.fromEnvironment(Settings(environment: Self.minimal))
        #expect(defaults.malformedBurst == MalformedReceiptBurstDetector.Configuration())
        let settings = try AppStoreSettings.fromEnvironment(
            Settings(
                environment: Self.minimal.merging([
                    "APPLE_21002_BURST_WINDOW": "30", "APPLE_21002_BURST_MIN_ANSWERS": "6",
                    "APPLE_21002_BURST_SHARE": "0.8", "APPLE_21002_BURST_MIN_RECEIPTS": "2",
                ]) { $1 }))
        #expect(settings.malformedBurst.windowSize == 30)
        #expect(settings.malformedBurst.minimumAnswers == 6)
        #expect(settings.malformedBurst.burstShare == 0.8)
        #expect(settings.malformedBurst.minimumReceipts == 2)
        for (variable, value) in [
            ("APPLE_21002_BURST_SHARE", "0"), ("APPLE_21002_BURST_SHARE", "1.5"), ("APPLE_21002_BURST_WINDOW", "0"),
            ("APPLE_21002_BURST_MIN_RECEIPTS", "0"),
        ] {
            #expect {
                try AppStoreSettings.fromEnvironment(
                    Settings(environment: Self.minimal.merging([variable: value]) { $1 }))
            } throws: { error in
                (error as? ConfigurationError)?.variable == variable
            }
        }
        // The minimum sample cannot exceed the window.
        #expect {
            try AppStoreSettings.fromEnvironment(
                Settings(
                    environment: Self.minimal.merging([
                        "APPLE_21002_BURST_WINDOW": "10", "APPLE_21002_BURST_MIN_ANSWERS": "11",
                    ]) { $1 }))
        } throws: { error in
            (error as? ConfigurationError)?.variable == "APPLE_21002_BURST_MIN_ANSWERS"
        }
    }

    @Test func aProductCatalogThatCannotBeUsedStopsTheStartNamingTheProblem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("catalog.json").path
        func settings() throws -> AppStoreSettings {
            try AppStoreSettings.fromEnvironment(
                Settings(environment: Self.minimal.merging(["PRODUCT_CATALOG_FILE": path]) { $1 }))
        }
        for (content, problem) in [
            (nil, "cannot be read"), ("{not json", "not valid JSON"), (#"{"items":{}}"#, "no \"products\""),
            (#"{"products":{"p":{"type":"coins","credit":{}}}}"#, "type 'coins'"),
            (#"{"products":{"p":{"type":"consumable"}}}"#, "no \"credit\""),
        ] as [(String?, String)] {
            if let content { try Data(content.utf8).write(to: URL(fileURLWithPath: path)) }
            #expect {
                try settings()
            } throws: { error in
                let error = error as? ConfigurationError
                return error?.variable == "PRODUCT_CATALOG_FILE" && error?.problem.contains(path) == true
                    && error?.problem.contains(problem) == true
            }
        }
        try Data(#"{"products":{"p":{"type":"consumable","credit":{"n":1}}}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        #expect(try settings().productCatalogFile == path)
        #expect(try AppStoreSettings.fromEnvironment(Settings(environment: Self.minimal)).productCatalogFile == nil)
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
