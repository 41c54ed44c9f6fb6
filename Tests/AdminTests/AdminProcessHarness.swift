import FakeAppStore
import Foundation
@_spi(Testing) import SignedData
import Testing
import TestSupport

/// The real `fake-appstore` with a minted PKI and API key, and the real `receipt-admin` run against it with the
/// verifier's settings for those files.
final class AdminProcessHarness: Sendable {
    static let bundleId = "com.example.game"
    static let dayMs = 86_400_000

    let directory: String
    let minted: FakePKIFiles.Minted
    let fake: FakeAppStoreProcess

    private init(directory: String, minted: FakePKIFiles.Minted, fake: FakeAppStoreProcess) {
        self.directory = directory
        self.minted = minted
        self.fake = fake
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func start(fakeArguments: [String] = []) async throws -> AdminProcessHarness {
        let directory = NSTemporaryDirectory() + "receipt-admin-\(UUID().uuidString.prefix(8))"
        let minted = try FakePKIFiles.mint(into: directory + "/pki")
        let fake = try await FakeAppStoreProcess.start(
            arguments: minted.fakeArguments + ["--notification-retry-seconds", "none"] + fakeArguments)
        return AdminProcessHarness(directory: directory, minted: minted, fake: fake)
    }

    /// The settings `receipt-admin` runs with: the minted key and root, the fake's URLs, one app.
    var settings: [String: String] {
        minted.verifierSettings.merging(fake.environment) { $1 }.merging([
            "ALLOWED_BUNDLE_IDS": Self.bundleId, "APPLE_TIMEOUT_MS": "5000",
        ]) { $1 }
    }

    /// One run of `receipt-admin`.
    struct Run {
        let tool: ToolRun

        var status: Int32 { tool.status }
        var stdout: [String] { tool.stdoutLines }
        var stderr: [String] { tool.stderrLines }

        /// The `--json` object (fails the test when there is none).
        var json: [String: Any] {
            get throws { try #require(tool.lastJSONObject, "no JSON on stdout: \(stdout) \(stderr)") }
        }

        /// The `--json` object, empty when there is none (`json` fails the test instead).
        var object: [String: Any] { tool.lastJSONObject ?? [:] }

        /// Apple's `errorCode` and HTTP status in the `--json` object's `error`.
        var errorCode: Int? { (object["error"] as? [String: Any])?["error_code"] as? Int }
        var httpStatus: Int? { (object["error"] as? [String: Any])?["http_status"] as? Int }

        var text: String { tool.stdout }

        /// The audit lines, in order.
        var audit: [[String: Any]] {
            stderr.filter { $0.contains("\"audit\":\"app_store_server_api\"") }
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    func admin(_ arguments: [String], settings overrides: [String: String] = [:], timeout: Duration = .seconds(60))
        async throws -> Run
    {
        Run(
            tool: try await ToolRun.run(
                try TestBinaries.path("receipt-admin"), arguments: arguments,
                environment: settings.merging(overrides) { $1 }, timeout: timeout))
    }

    /// Registers transactions with the fake (`POST /admin/transactions`).
    func register(_ transactions: [[String: Any]]) async throws {
        try await fake.registerTransactions(transactions)
    }

    /// The fake's Server API requests per endpoint so far.
    func endpointCalls() async throws -> [String: Int] {
        let response = try await TestHTTPClient.send("GET", fake.url + "/admin/server-api/counters")
        return try #require(response.jsonObject?["endpoints"] as? [String: Int], "\(response.text)")
    }

    /// The payload of what the fake signs for `id` now (read unverified: the fake's own state).
    func currentPayload(_ id: String) async throws -> [String: Any] {
        let jws = try await fake.signedTransaction(id: id)
        return try #require(
            try JSONSerialization.jsonObject(with: Data(try CompactJWS.unverifiedPayload(jws))) as? [String: Any])
    }

    static var nowMs: Int { Int(Date().timeIntervalSince1970 * 1000) }

    /// An auto-renewable subscription period.
    static func subscription(
        _ id: String, original: String? = nil, product: String = "monthly", expiresInDays: Int = 20,
        extra: [String: Any] = [:]
    ) -> [String: Any] {
        var fields: [String: Any] = [
            "id": id, "original_id": original ?? id, "type": "Auto-Renewable Subscription", "product_id": product,
            "purchase_date_ms": nowMs - 10 * dayMs, "expires_date_ms": nowMs + expiresInDays * dayMs,
            "web_order_line_item_id": "7" + id.dropFirst(),
        ]
        fields.merge(extra) { $1 }
        return fields
    }
}
