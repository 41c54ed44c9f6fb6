/// Whether the certificates of App Store signing chains are checked for revocation (`APPLE_REVOCATION_CHECK`).
public enum RevocationCheckPolicy: String, Sendable, CaseIterable {
    /// No check: for air-gapped deployments that cannot reach Apple's OCSP responder (nor a mirror of it). Chains
    /// are still validated at each payload's `signedDate`; a revoked Apple certificate would go unnoticed.
    case off
    /// OCSP for the leaf (issuer: the intermediate) and the intermediate (issuer: the root) of every verified chain,
    /// hard-fail as Apple's libraries with online checks: revoked refuses, no answer retries later.
    case ocsp
}
