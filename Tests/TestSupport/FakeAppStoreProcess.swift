import Foundation

/// The `fake-appstore` executable, started for a test (see Sources/FakeAppStore/README.md for its behaviour).
/// Killed when released; `stop()` ends it gracefully.
public final class FakeAppStoreProcess: Sendable {
    public let process: ManagedProcess
    /// `http://127.0.0.1:<port>`, from the first stdout line `FAKE_APPSTORE_URL=...`.
    public let url: String

    public var productionURL: String { url + "/verifyReceipt" }
    public var sandboxURL: String { url + "/sandbox/verifyReceipt" }

    /// The settings a verifier needs to use this fake (verifyReceipt and the App Store Server API URLs, its OCSP
    /// responder for revocation checks; the API key and the signing root come from wherever the fake's were minted,
    /// e.g. `fake-appstore mint-pki`). Data signed by another PKI needs `APPLE_REVOCATION_CHECK=off`: the fake's
    /// responder answers only about its own chain.
    public var environment: [String: String] {
        [
            "APPLE_VERIFY_RECEIPT_URL": productionURL, "APPLE_SANDBOX_VERIFY_RECEIPT_URL": sandboxURL,
            "APPLE_SERVER_API_URL": url, "APPLE_SERVER_API_SANDBOX_URL": url + "/sandbox",
            "APPLE_OCSP_RESPONDER_URL": url + "/ocsp", "APPLE_OCSP_TIMEOUT_MS": "2000",
        ]
    }

    /// Sets the fake's OCSP responder: `mode` answer, fail, try-later or hold; `revoked` the chain certificates
    /// answered revoked ("leaf", "intermediate"; empty for none). Nil leaves a switch as it is.
    public func setOCSP(mode: String? = nil, revoked: [String]? = nil) async throws {
        var query: [String] = []
        if let mode { query.append("mode=" + mode) }
        if let revoked { query.append("revoked=" + revoked.joined(separator: ",")) }
        let response = try await TestHTTPClient.send("POST", url + "/admin/ocsp?" + query.joined(separator: "&"))
        guard response.status == 200 else { throw TestSupportError("OCSP switch failed: \(response.text)") }
    }

    /// OCSP requests the fake's responder received.
    public func ocspRequests() async throws -> Int {
        let response = try await TestHTTPClient.send("GET", url + "/admin/ocsp")
        guard response.status == 200, let requests = response.jsonObject?["requests"] as? Int else {
            throw TestSupportError("unexpected OCSP state \(response.status): \(response.text)")
        }
        return requests
    }

    private init(process: ManagedProcess, url: String) {
        self.process = process
        self.url = url
    }

    /// Starts the fake on an ephemeral port and waits until it serves.
    /// - Parameter arguments: extra flags, e.g. `["--latency-ms", "100", "--jitter-ms", "10"]`.
    public static func start(arguments: [String] = [], environment: [String: String] = [:]) async throws
        -> FakeAppStoreProcess
    {
        let process = try ManagedProcess(
            executable: try TestBinaries.path("fake-appstore"), arguments: ["--port", "0"] + arguments,
            environment: environment)
        let line = try await process.waitForStdoutLine { $0.hasPrefix("FAKE_APPSTORE_URL=") }
        return FakeAppStoreProcess(process: process, url: String(line.dropFirst("FAKE_APPSTORE_URL=".count)))
    }

    /// Calls the fake received for a receipt (its scenario id, or the receipt data itself).
    public func calls(receipt: String) async throws -> (production: Int, sandbox: Int) {
        let encoded = receipt.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? receipt
        let response = try await TestHTTPClient.send("GET", url + "/admin/counters?receipt=" + encoded)
        guard response.status == 200, let json = response.jsonObject,
            let production = json["production"] as? Int, let sandbox = json["sandbox"] as? Int
        else {
            throw TestSupportError("unexpected counters answer \(response.status): \(response.text)")
        }
        return (production, sandbox)
    }

    /// Switches the global outage on (every verifyReceipt call answers 503) or off.
    public func setOutage(_ on: Bool, mode: String = "http503") async throws {
        let response = try await TestHTTPClient.send(
            "POST", url + "/admin/outage?on=\(on ? 1 : 0)&mode=\(mode)")
        guard response.status == 200 else { throw TestSupportError("outage switch failed: \(response.text)") }
    }

    /// Registers Server API transactions (`POST /admin/transactions`; the README lists the fields).
    public func registerTransactions(_ transactions: [[String: Any]]) async throws {
        let body = try JSONSerialization.data(withJSONObject: transactions)
        let response = try await TestHTTPClient.send(
            "POST", url + "/admin/transactions", headers: ["Content-Type": "application/json"], body: body)
        guard response.status == 200 else { throw TestSupportError("registering failed: \(response.text)") }
    }

    /// The signed transaction a device would hold for `id` (`GET /admin/signed-transaction`).
    public func signedTransaction(id: String) async throws -> String {
        let response = try await TestHTTPClient.send("GET", url + "/admin/signed-transaction?id=" + id)
        guard response.status == 200, let jws = response.jsonObject?["signed_transaction"] as? String else {
            throw TestSupportError("no signed transaction for \(id): \(response.status) \(response.text)")
        }
        return jws
    }

    /// Registers app transactions (`POST /admin/app-transactions`, snake_case objects as in the fake's README).
    public func registerAppTransactions(_ appTransactions: [[String: Any]]) async throws {
        let body = try JSONSerialization.data(withJSONObject: appTransactions)
        let response = try await TestHTTPClient.send(
            "POST", url + "/admin/app-transactions", headers: ["Content-Type": "application/json"], body: body)
        guard response.status == 200 else { throw TestSupportError("registering failed: \(response.text)") }
    }

    /// The app transaction a device would hold for `id` (`GET /admin/signed-app-transaction`).
    public func signedAppTransaction(id: String) async throws -> String {
        let response = try await TestHTTPClient.send("GET", url + "/admin/signed-app-transaction?id=" + id)
        guard response.status == 200, let jws = response.jsonObject?["signed_app_transaction"] as? String else {
            throw TestSupportError("no signed app transaction for \(id): \(response.status) \(response.text)")
        }
        return jws
    }

    /// The Send Consumption Information bodies the fake accepted for transaction `id`, in order.
    public func consumptionAnswers(transaction id: String) async throws -> [[String: Any]] {
        let response = try await TestHTTPClient.send("GET", url + "/admin/consumption?transaction=" + id)
        guard response.status == 200, let answers = response.jsonObject?["answers"] as? [[String: Any]] else {
            throw TestSupportError("unexpected consumption answer \(response.status): \(response.text)")
        }
        return answers.compactMap { $0["body"] as? [String: Any] }
    }

    /// Server API calls the fake received about transaction `id`, by environment.
    /// Get App Transaction Info calls the fake answered about app transaction `id`, by environment.
    public func serverAPICalls(appTransaction id: String) async throws -> (production: Int, sandbox: Int) {
        let response = try await TestHTTPClient.send("GET", url + "/admin/server-api/counters?app_transaction=" + id)
        guard response.status == 200, let json = response.jsonObject,
            let production = json["production"] as? Int, let sandbox = json["sandbox"] as? Int
        else {
            throw TestSupportError("unexpected Server API counters answer \(response.status): \(response.text)")
        }
        return (production, sandbox)
    }

    public func serverAPICalls(transaction id: String) async throws -> (production: Int, sandbox: Int) {
        let response = try await TestHTTPClient.send("GET", url + "/admin/server-api/counters?transaction=" + id)
        guard response.status == 200, let json = response.jsonObject,
            let production = json["production"] as? Int, let sandbox = json["sandbox"] as? Int
        else {
            throw TestSupportError("unexpected Server API counters answer \(response.status): \(response.text)")
        }
        return (production, sandbox)
    }

    /// SIGTERM and wait; returns the exit status (nil when it had to be killed).
    @discardableResult
    public func stop() async -> Int32? {
        await process.terminate(grace: .seconds(5))
    }
}
