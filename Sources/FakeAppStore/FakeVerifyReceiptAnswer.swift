/// The fake's verifyReceipt answers without its server, for benchmarks that hand the verifier's own parsing and rules
/// the bytes an HTTP client would have received (bench/verifier-path-bench).
public enum FakeVerifyReceiptAnswer {
    /// The body the fake's verifyReceipt endpoint of the receipt's own environment answers a valid-scenario receipt
    /// with (status 0 and its transactions, byte for byte what the server sends); nil for a receipt that is not a
    /// valid scenario (those answers depend on call counts, outages and redirects).
    public static func validBody(for receiptData: String) -> [UInt8]? {
        guard let scenario = FakeReceipt.decode(receiptData), scenario.scenario == .valid,
            scenario.failFirst == nil
        else { return nil }
        let endpoint = scenario.isSandbox ? "Sandbox" : "Production"
        return FakeAppStoreResponses.valid(scenario, environment: scenario.reportedEnvironment(endpoint: endpoint)).body
    }
}
