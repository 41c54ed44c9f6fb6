import AppStoreServerAPI
import LedgerRules
import ServiceSupport

/// The refund responder's settings (`LEDGER_CONSUMPTION_*`, and the App Store Server API's `APPLE_*` as the
/// verifier reads them).
public struct ConsumptionSettings: Sendable {
    public var mode: ConsumptionRules.Mode
    public var policy: ConsumptionRules.Policy
    public var retryBaseMs: Int64
    /// The App Store Server API (key, URLs, pace); required under `send`.
    public var serverAPI: ServerAPISettings?

    public init(
        mode: ConsumptionRules.Mode = .off, policy: ConsumptionRules.Policy = ConsumptionRules.Policy(),
        retryBaseMs: Int64 = 5_000, serverAPI: ServerAPISettings? = nil
    ) {
        self.mode = mode
        self.policy = policy
        self.retryBaseMs = retryBaseMs
        self.serverAPI = serverAPI
    }

    static func fromEnvironment(_ settings: Settings) throws(ConfigurationError) -> ConsumptionSettings {
        let modeName = try settings.choice(
            "LEDGER_CONSUMPTION_RESPONSES", from: ConsumptionRules.Mode.allCases.map(\.rawValue), default: "off")
        let mode = ConsumptionRules.Mode(rawValue: modeName) ?? .off
        var policy = ConsumptionRules.Policy()
        if let path = settings.string("LEDGER_CONSUMPTION_POLICY_FILE") {
            do throws(ConsumptionPolicyFile.Invalid) {
                policy = try ConsumptionPolicyFile.load(path: path)
            } catch {
                throw ConfigurationError(variable: "LEDGER_CONSUMPTION_POLICY_FILE", problem: error.description)
            }
        }
        let retryBaseMs = Int64(
            try settings.int("LEDGER_CONSUMPTION_RETRY_BASE_MS", default: 5_000, range: 10...3_600_000))
        var serverAPI: ServerAPISettings?
        if mode == .send {
            let api = try ServerAPISettings.fromEnvironment(settings)
            guard api.hasCredentials else {
                throw ConfigurationError(
                    variable: "LEDGER_CONSUMPTION_RESPONSES",
                    problem: "send needs the App Store Server API key: set APPLE_ISSUER_ID, APPLE_KEY_ID and "
                        + "APPLE_PRIVATE_KEY_FILE, or use dry-run or off")
            }
            serverAPI = api
        }
        return ConsumptionSettings(mode: mode, policy: policy, retryBaseMs: retryBaseMs, serverAPI: serverAPI)
    }

    static let helpText = """
          LEDGER_CONSUMPTION_RESPONSES  off (default: requests are recorded, unanswered), dry-run (the answer is
                                    computed and recorded, not sent) or send (answered with Send Consumption
                                    Information; needs APPLE_ISSUER_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE and
                                    takes APPLE_SERVER_API_URL, APPLE_SERVER_API_SANDBOX_URL, APPLE_SERVER_API_MAX_RPS)
          LEDGER_CONSUMPTION_POLICY_FILE  the refund policy: ordered rules giving Apple's refundPreference
                                    (docs/CREDITING.md); unset: no preference is sent
          LEDGER_CONSUMPTION_RETRY_BASE_MS  first retry delay after Apple was busy, doubled per attempt, within the
                                    12-hour deadline (default 5000)
        """
}
