import Crypto

/// Who may have signed a legacy app receipt, judged on the certificate path its PKCS#7 signature validated through.
///
/// A path that validates to Apple Inc. Root says only "someone Apple certified signed this": Apple issues every
/// developer's certificates under the same root. `appStore` is Apple's receipt signer and nothing else, checked on
/// the path OpenSSL built (at the receipt's creation date, from the certificates the receipt embeds), by
/// `AppleSigningPathPolicy`, the same policy a JWS's `x5c` path meets:
///
/// 1. exactly three certificates, signer → intermediate → configured root (not signed by an intermediate or root
///    itself, no extra CA in between);
/// 2. the intermediate carries Apple's WWDR marker extension 1.2.840.113635.100.6.2.1;
/// 3. the signer carries Apple's receipt-signing marker extension 1.2.840.113635.100.6.11.1 and is an end-entity
///    certificate (not a CA).
///
/// Apple's production receipts have exactly this shape ("Mac App Store and iTunes Store Receipt Signing" with
/// 6.11.1 → "Apple Worldwide Developer Relations Certification Authority" G5 with 6.2.1 → Apple Root CA; they embed
/// the root too, which the path then uses as the trusted root it is). Other embedded certificates play no part.
///
/// `xcodeStoreKitTesting` is the one exception, explicit and never chosen by a service: Xcode's StoreKit testing
/// receipts are signed directly by a self-signed "StoreKit" certificate generated on the developer's Mac (no
/// intermediate, no Apple markers). It accepts only a receipt signed directly by one of the trusted certificates
/// (the exported StoreKit Testing certificate) whose receipt type (attribute 0) is `Xcode`, and nothing signed by
/// Apple. It exists for local development and tests; the verifier service builds `appStore` only and refuses Xcode
/// receipts (`invalid_signature`, and `sandbox_not_allowed` for any receipt whose type says Xcode).
public enum ReceiptSignerPolicy: Sendable, Equatable {
    /// Apple's App Store receipt signer: signer (6.11.1) → WWDR intermediate (6.2.1) → configured root.
    case appStore
    /// Xcode's StoreKit testing receipts: signed directly by a trusted self-signed certificate, typed `Xcode`.
    case xcodeStoreKitTesting

    /// The receipt type (attribute 0) Xcode writes into StoreKit testing receipts.
    public static let xcodeReceiptType = "Xcode"

    /// Checks the validated `chain` (signer first, root last) of a receipt whose type is `receiptType`.
    ///
    /// - Throws: `SignedDataError.Kind.receiptSignatureInvalid` naming the rule that failed and the certificate's
    ///   role and subject (never receipt contents).
    public func check(_ chain: CertificateChain, receiptType: String?) throws(SignedDataError) {
        switch self {
        case .appStore: try Self.checkAppStore(chain)
        case .xcodeStoreKitTesting: try Self.checkXcode(chain, receiptType: receiptType)
        }
    }

    private static func checkAppStore(_ chain: CertificateChain) throws(SignedDataError) {
        let path = chain.certificates
        guard let signer = path.first else { throw refused("the signer's certificate path is empty") }
        switch AppleSigningPathPolicy.violation(of: path) {
        case nil:
            return
        case .pathLength:
            break
        case .intermediateMarkerMissing(let subject):
            throw refused(
                "the intermediate '\(subject)' lacks Apple's WWDR marker extension " + AppleMarkerOID.wwdrIntermediate)
        case .leafMarkerMissing(let subject):
            throw refused(
                "the signer '\(subject)' lacks Apple's receipt-signing marker extension " + AppleMarkerOID.receiptSigning)
        case .leafIsCertificateAuthority(let subject):
            throw refused("the signer '\(subject)' is a CA certificate; Apple's receipt signer is an end entity")
        }
        // The path length: say which wrong shape it is.
        switch path.count {
        case 1:
            throw refused(
                "the receipt is signed directly by the trusted self-signed certificate '\(signer.subject)', as Xcode's "
                    + "StoreKit testing receipts are; App Store receipts are signed by Apple's receipt-signing "
                    + "certificate under the WWDR intermediate (signer → intermediate → root)")
        case 2:
            throw refused(
                "the signer '\(signer.subject)' is issued directly by the root: the path has 2 certificates, not "
                    + "signer → WWDR intermediate → root (a receipt signed by an intermediate or a root-issued "
                    + "certificate is not Apple's receipt signer)")
        default:
            throw refused(
                "the signer's certificate path has \(path.count) certificates: \(path.count - 3) extra between the "
                    + "signer and the root; App Store receipts have exactly signer → WWDR intermediate → root")
        }
    }

    private static func checkXcode(_ chain: CertificateChain, receiptType: String?) throws(SignedDataError) {
        guard chain.certificates.count == 1, let signer = chain.certificates.first, signer.isSelfIssued else {
            throw refused(
                "the StoreKit testing policy accepts only a receipt signed directly by a trusted self-signed "
                    + "StoreKit certificate; this signer's path has \(chain.certificates.count) certificates")
        }
        guard receiptType == xcodeReceiptType else {
            throw refused(
                "a receipt signed by the StoreKit testing certificate '\(signer.subject)' must have the receipt "
                    + "type \(xcodeReceiptType) (attribute 0); this one has " + (receiptType == nil ? "none" : "another"))
        }
    }

    private static func refused(_ rule: String) -> SignedDataError {
        SignedDataError(.receiptSignatureInvalid, "receipt signer policy: \(rule)")
    }
}
