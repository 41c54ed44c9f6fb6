import Crypto

/// Verifies a legacy app receipt's PKCS#7 signature before anything in it is used.
///
/// The signer certificate embedded in the receipt must chain, through the receipt's other embedded certificates
/// (Apple's WWDR intermediate), to one of the trusted roots (Apple Inc. Root in production) at the receipt's own
/// creation date (attribute 12); the path must then satisfy `signerPolicy` (`ReceiptSignerPolicy.appStore`: exactly
/// Apple's receipt signer → WWDR intermediate → root, both marker extensions), and the signature must verify over
/// the content. Only then are the contents returned, read from the bytes OpenSSL verified. Safe to share between
/// threads.
public final class AppReceiptVerifier: Sendable {
    public let trustedRoots: [Certificate]
    /// Who may have signed the receipts accepted; the services use `.appStore` only.
    public let signerPolicy: ReceiptSignerPolicy

    public init(trustedRoots: [Certificate], signerPolicy: ReceiptSignerPolicy = .appStore) {
        self.trustedRoots = trustedRoots
        self.signerPolicy = signerPolicy
    }

    /// A verifier of App Store receipts (`ReceiptSignerPolicy.appStore`) trusting the certificates in the files at
    /// `rootCertificatePaths` (DER or PEM).
    public convenience init(rootCertificatePaths: [String]) throws(CryptoError) {
        self.init(trustedRoots: try AppleRootCertificates.load(paths: rootCertificatePaths))
    }

    /// A verifier of Xcode's StoreKit testing receipts only (`ReceiptSignerPolicy.xcodeStoreKitTesting`): receipts
    /// signed directly by `storeKitCertificate` (the certificate Xcode exports from a StoreKit configuration,
    /// Editor > Save Public Certificate) whose type is `Xcode`. For local development and tests; never for money.
    @_spi(Testing) public static func storeKitTesting(certificate storeKitCertificate: Certificate) -> AppReceiptVerifier {
        AppReceiptVerifier(trustedRoots: [storeKitCertificate], signerPolicy: .xcodeStoreKitTesting)
    }

    /// Verifies a DER/BER receipt and returns its contents.
    ///
    /// - Throws: `SignedDataError` `.malformedReceipt` (not a receipt, no creation date) or
    ///   `.receiptSignatureInvalid` (signature, signer chain, validity at the creation date, signer policy).
    public func verify(der: [UInt8]) throws(SignedDataError) -> AppReceipt {
        let claimed = try AppReceipt.parse(der: der)
        guard let creationDate = claimed.creationDate else {
            throw SignedDataError(.malformedReceipt,
                                  "the receipt has no creation date (attribute 12), so its signer cannot be validated")
        }
        let verified: PKCS7SignedData.Verified
        do {
            verified = try PKCS7SignedData.verify(der: der, trustedRoots: trustedRoots, atEpochSeconds: creationDate)
        } catch {
            if error.kind == .malformed { throw SignedDataError(.malformedReceipt, error.message) }
            throw SignedDataError(.receiptSignatureInvalid, error.message)
        }
        let receipt = try AppReceipt.parse(payload: verified.content)
        guard receipt == claimed else {
            throw SignedDataError(.receiptSignatureInvalid, "the signed content differs from the receipt's content")
        }
        try signerPolicy.check(verified.chain, receiptType: receipt.receiptType)
        return receipt
    }

    /// Verifies a base64 receipt (`receipt_data`).
    public func verify(base64: String) throws(SignedDataError) -> AppReceipt {
        guard let der = Base64.decodeStandard(base64.utf8) else {
            throw SignedDataError(.malformedReceipt, "the receipt is not standard base64")
        }
        return try verify(der: der)
    }
}
