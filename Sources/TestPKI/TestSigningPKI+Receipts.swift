import Crypto
import SignedData

/// Legacy (PKCS#7) app receipts signed by the test PKI, and the forged signers `ReceiptSignerPolicy.appStore` refuses.
///
/// ```swift
/// let pki = try TestSigningPKI.mint(referenceTime: creationDate)
/// let good = try pki.signReceipt(content: attributeSet)
/// let forged = try pki.signReceipt(content: attributeSet, defect: .leafMissingMarker)
/// let verifier = AppReceiptVerifier(trustedRoots: [pki.rootCertificate])
/// ```
///
/// - Important: test and development only (tests, the fake App Store, `make dev`).
extension TestSigningPKI {
    /// A way for a receipt's signer to be wrong while its signature and chain to the trusted root are fine.
    public enum ReceiptSignerDefect: Sendable, CaseIterable {
        /// The signer lacks 1.2.840.113635.100.6.11.1: any certificate the intermediate issues (a developer's own).
        case leafMissingMarker
        /// The intermediate lacks 1.2.840.113635.100.6.2.1 (another CA under the same root); the signer has its marker.
        case intermediateMissingMarker
        /// root → intermediate → an extra CA → signer, every CA with the WWDR marker and the signer with its own.
        case extraCertificateInPath
        /// Signed with the WWDR intermediate's own key and certificate (path intermediate → root).
        case signedByIntermediate
        /// The signer carries the receipt-signing marker but is a CA certificate.
        case signerIsCertificateAuthority
        /// A well-formed chain minted under another root (same names, other keys).
        case untrustedRoot
    }

    /// A receipt whose content is `content` (the attribute SET, DER), signed the way Apple signs receipts: this PKI's
    /// leaf, with the intermediate and the root embedded; or signed with `defect`.
    ///
    /// Sign content whose creation date (attribute 12) is near `referenceTime`: that is when the chain is validated.
    public func signReceipt(content: [UInt8], defect: ReceiptSignerDefect? = nil) throws(CryptoError) -> [UInt8] {
        let rootCertificate = root.authority.certificate
        let intermediateCertificate = intermediate.authority.certificate
        let leafWindow = (leaf.certificate.notBefore, leaf.certificate.notAfter)
        let caWindow = (intermediateCertificate.notBefore, intermediateCertificate.notAfter)
        guard let defect else {
            return try PKCS7SignedData.sign(
                content: content, signer: leaf, intermediates: [intermediateCertificate, rootCertificate])
        }
        switch defect {
        case .leafMissingMarker:
            let developer = try intermediate.issueLeaf(
                commonName: "Test Developer Certificate", notBefore: leafWindow.0, notAfter: leafWindow.1,
                markerOIDs: [])
            return try PKCS7SignedData.sign(content: content, signer: developer, intermediates: [intermediateCertificate])
        case .intermediateMissingMarker:
            let other = try root.issueIntermediate(
                commonName: "Test Other Intermediate CA", notBefore: caWindow.0, notAfter: caWindow.1, markerOIDs: [])
            let signer = try other.issueLeaf(notBefore: leafWindow.0, notAfter: leafWindow.1)
            return try PKCS7SignedData.sign(
                content: content, signer: signer, intermediates: [other.authority.certificate])
        case .extraCertificateInPath:
            let outer = try root.issueIntermediate(
                commonName: "Test Outer WWDR CA", notBefore: caWindow.0, notAfter: caWindow.1, maximumPathLength: 1)
            let inner = try outer.issueIntermediate(
                commonName: "Test Inner WWDR CA", notBefore: caWindow.0, notAfter: caWindow.1)
            let signer = try inner.issueLeaf(notBefore: leafWindow.0, notAfter: leafWindow.1)
            return try PKCS7SignedData.sign(
                content: content, signer: signer,
                intermediates: [inner.authority.certificate, outer.authority.certificate])
        case .signedByIntermediate:
            return try PKCS7SignedData.sign(content: content, signer: intermediate.authority)
        case .signerIsCertificateAuthority:
            let authority = try intermediate.issueIntermediate(
                commonName: "Test Receipt Signing CA", notBefore: leafWindow.0, notAfter: leafWindow.1,
                markerOIDs: [CertificateAuthority.leafMarkerOID])
            return try PKCS7SignedData.sign(
                content: content, signer: authority.authority, intermediates: [intermediateCertificate])
        case .untrustedRoot:
            return try TestSigningPKI.mint(referenceTime: referenceTime).signReceipt(content: content)
        }
    }
}
