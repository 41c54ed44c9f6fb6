/// The NIST curves this layer works with: P-256 for ES256 signatures and App Store keys, P-384 for test roots
/// (Apple Root CA - G3 is P-384).
public enum ECCurve: String, Sendable, Hashable, CaseIterable {
    case p256 = "P-256"
    case p384 = "P-384"

    /// Size in bytes of one coordinate, and of each of r and s in a raw signature.
    public var coordinateByteCount: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        }
    }
}
