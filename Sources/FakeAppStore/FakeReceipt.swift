import Foundation

/// Builds receipts for the fake App Store (base64 of a `FakeReceiptScenario`), for tests, benchmarks and `make dev`.
public enum FakeReceipt {
    /// The receipt data for `scenario`.
    public static func encode(_ scenario: FakeReceiptScenario) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a plain Codable struct of strings and numbers cannot fail.
        let json = (try? encoder.encode(scenario)) ?? Data("{}".utf8)
        return json.base64EncodedString()
    }

    /// The scenario a receipt encodes, or nil for anything else (the fake answers those 21002, like Apple).
    public static func decode(_ receiptData: String) -> FakeReceiptScenario? {
        guard let json = Data(base64Encoded: receiptData) else { return nil }
        return try? JSONDecoder().decode(FakeReceiptScenario.self, from: json)
    }

    /// A valid receipt of `environment` ("Production" or "Sandbox") holding `transactions`.
    /// - Parameter reportedEnvironment: the `environment` the answer's body names instead of the endpoint's
    ///   (`"omit"`: none).
    public static func valid(
        id: String? = nil, environment: String = "Production", bundleId: String = "com.example.game",
        transactions: [FakeTransaction] = [FakeTransaction(id: "1000000000000001", product: "gems_100")],
        subscription: Bool = false, delayMs: Int? = nil, reportedEnvironment: String? = nil
    ) -> String {
        encode(
            FakeReceiptScenario(
                scenario: .valid, id: id, env: environment, bundleId: bundleId, transactions: transactions,
                subscription: subscription ? true : nil, delayMs: delayMs, reportedEnv: reportedEnvironment))
    }

    /// A valid receipt with `count` generated transactions (ids `2000000000000000 + n`), megabytes for large counts.
    public static func huge(
        id: String? = nil, count: Int, environment: String = "Production", bundleId: String = "com.example.game"
    ) -> String {
        encode(
            FakeReceiptScenario(
                scenario: .valid, id: id, env: environment, bundleId: bundleId, transactions: [], generate: count,
                subscription: true))
    }

    /// A receipt always answered with verifyReceipt `status`.
    public static func status(
        _ status: Int, id: String? = nil, isRetryable: Bool? = nil, hyphenatedRetryFlag: Bool = false,
        environment: String? = nil
    ) -> String {
        encode(
            FakeReceiptScenario(
                scenario: .status, id: id, env: environment, status: status, isRetryable: isRetryable,
                hyphenatedRetryFlag: hyphenatedRetryFlag ? true : nil))
    }

    /// A receipt answered with HTTP `httpStatus` and a body of kind `body` (html, empty or json).
    public static func httpError(_ httpStatus: Int, body: String = "html", id: String? = nil) -> String {
        encode(FakeReceiptScenario(scenario: .http, id: id, httpStatus: httpStatus, body: body))
    }

    /// A receipt that is never answered.
    public static func hang(id: String? = nil) -> String {
        encode(FakeReceiptScenario(scenario: .hang, id: id))
    }

    /// A valid receipt whose first `failures` calls fail with `status` or, when given, HTTP `httpStatus`.
    public static func failingFirst(
        _ failures: Int, status: Int = 21005, httpStatus: Int? = nil, id: String? = nil,
        environment: String = "Production", bundleId: String = "com.example.game",
        transactions: [FakeTransaction] = [FakeTransaction(id: "1000000000000001", product: "gems_100")]
    ) -> String {
        encode(
            FakeReceiptScenario(
                scenario: .valid, id: id, env: environment, bundleId: bundleId, transactions: transactions,
                failFirst: failures, failStatus: status, failHttpStatus: httpStatus))
    }

    /// The counters key of `receiptData`: the scenario's `id`, else `fnv-` and the FNV-1a 64-bit hash in hex.
    public static func counterKey(_ receiptData: String) -> String {
        if let id = decode(receiptData)?.id { return id }
        return counterKey(hashing: receiptData)
    }

    static func counterKey(hashing receiptData: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in receiptData.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "fnv-" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
