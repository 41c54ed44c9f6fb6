/// Apple's marker extensions on the certificates that sign App Store data. Apple's own verifiers check their
/// presence only (the value is DER NULL), and so does this project.
public enum AppleMarkerOID {
    /// On Apple Worldwide Developer Relations intermediates (the G5 that issues receipt signers, the G6 of JWS).
    public static let wwdrIntermediate = "1.2.840.113635.100.6.2.1"
    /// On Apple's "Mac App Store and iTunes Store Receipt Signing" leaves: receipts' PKCS#7 signer and the JWS leaf.
    public static let receiptSigning = "1.2.840.113635.100.6.11.1"
}
