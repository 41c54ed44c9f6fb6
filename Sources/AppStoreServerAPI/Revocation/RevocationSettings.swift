import ServiceSupport
import SignedData

/// `APPLE_REVOCATION_CHECK` and the OCSP settings of the signed-data verifiers, read and checked at start.
public struct RevocationSettings: Sendable, Equatable, CustomStringConvertible {
    /// `APPLE_REVOCATION_CHECK`: `ocsp` (default) or `off`.
    public var policy: RevocationCheckPolicy
    /// `APPLE_OCSP_RESPONDER_URL`, `APPLE_OCSP_MAX_AGE_SECONDS`, `APPLE_OCSP_TIMEOUT_MS`.
    public var checker: RevocationChecker.Configuration

    /// Apple's libraries check revocation whenever online checks are on, and a production verifier already reaches
    /// Apple (the Server API, verifyReceipt): the default checks. Air-gapped deployments say `off`.
    public static let defaultPolicy = RevocationCheckPolicy.ocsp

    public init(policy: RevocationCheckPolicy = RevocationSettings.defaultPolicy,
                checker: RevocationChecker.Configuration = RevocationChecker.Configuration()) {
        self.policy = policy
        self.checker = checker
    }

    /// Reads and checks the settings.
    ///
    /// - Throws: `ConfigurationError` naming the first invalid variable.
    public static func fromEnvironment(_ settings: Settings) throws(ConfigurationError) -> RevocationSettings {
        let name = try settings.choice(
            "APPLE_REVOCATION_CHECK", from: RevocationCheckPolicy.allCases.map(\.rawValue),
            default: defaultPolicy.rawValue)
        let policy = RevocationCheckPolicy(rawValue: name) ?? defaultPolicy
        var responderURL: String?
        if let url = settings.string("APPLE_OCSP_RESPONDER_URL") {
            let lower = url.lowercased()
            // Plain http is OCSP's usual transport (Apple's responder is http): the answers are signed, no secret
            // travels with the request.
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), !url.contains(" "), url.count > 8 else {
                throw ConfigurationError(
                    variable: "APPLE_OCSP_RESPONDER_URL", problem: "'\(url)' is not an http or https URL")
            }
            responderURL = url
        }
        let maxAge = try settings.int(
            "APPLE_OCSP_MAX_AGE_SECONDS", default: Int(RevocationChecker.Configuration.defaultMaxAgeSeconds),
            range: 60...604_800)
        let timeout = try settings.int(
            "APPLE_OCSP_TIMEOUT_MS", default: RevocationChecker.Configuration.defaultTimeoutMs, range: 100...60_000)
        return RevocationSettings(
            policy: policy,
            checker: RevocationChecker.Configuration(
                responderURL: responderURL, maxAgeSeconds: Int64(maxAge), timeoutMs: timeout))
    }

    /// For logs.
    public var description: String {
        switch policy {
        case .off: "revocation_check=off"
        case .ocsp:
            "revocation_check=ocsp ocsp_responder=\(checker.responderURL ?? "certificate AIA") "
                + "ocsp_max_age_s=\(checker.maxAgeSeconds) ocsp_timeout_ms=\(checker.timeoutMs)"
        }
    }
}
