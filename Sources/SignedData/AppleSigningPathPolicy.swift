import Crypto

/// Apple's shape of the certificate path that signs App Store data: one policy for both kinds of signed data, a JWS
/// (`AppleSignedDataVerifier`: `x5c` leaf → intermediate → a configured root) and a legacy receipt's PKCS#7 signer
/// (`ReceiptSignerPolicy.appStore`), judged on the path OpenSSL validated:
///
/// 1. exactly three certificates, leaf → intermediate → root (no leaf issued by the root, no extra CA between);
/// 2. the intermediate carries Apple's WWDR marker extension 1.2.840.113635.100.6.2.1;
/// 3. the leaf carries Apple's receipt-signing marker extension 1.2.840.113635.100.6.11.1;
/// 4. the leaf is an end-entity certificate, not a CA (basic constraints): OpenSSL's path validation accepts a CA as
///    the target certificate, and a CA under the WWDR intermediate is not Apple's signer. Apple's own libraries check
///    only the markers (issue 24, item 10: the JWS path accepted a CA leaf, the receipt path did not).
///
/// Presence only, as Apple's verifiers check the markers (their value is DER NULL).
public enum AppleSigningPathPolicy {
    /// The only accepted path length: leaf, intermediate, root.
    public static let pathLength = 3

    /// The first rule a path breaks, in the order above.
    public enum Violation: Sendable, Equatable {
        /// The path does not have exactly `pathLength` certificates (its count).
        case pathLength(Int)
        /// The intermediate (subject) lacks `AppleMarkerOID.wwdrIntermediate`.
        case intermediateMarkerMissing(subject: String)
        /// The leaf (subject) lacks `AppleMarkerOID.receiptSigning`.
        case leafMarkerMissing(subject: String)
        /// The leaf (subject) is a CA certificate.
        case leafIsCertificateAuthority(subject: String)
    }

    /// The first rule `path` (leaf first, root last, as validated) breaks, or nil when it has Apple's shape.
    public static func violation(of path: [Certificate]) -> Violation? {
        guard path.count == pathLength else { return .pathLength(path.count) }
        let leaf = path[0]
        let intermediate = path[1]
        guard intermediate.hasExtension(oid: AppleMarkerOID.wwdrIntermediate) else {
            return .intermediateMarkerMissing(subject: intermediate.subject)
        }
        guard leaf.hasExtension(oid: AppleMarkerOID.receiptSigning) else {
            return .leafMarkerMissing(subject: leaf.subject)
        }
        guard !leaf.isCertificateAuthority else { return .leafIsCertificateAuthority(subject: leaf.subject) }
        return nil
    }
}
