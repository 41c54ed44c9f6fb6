/// An error that says which kind of failure it is, for the caller to branch on, and exactly what failed, for people
/// and logs (also its `description`): the shape of the signing layers' errors (`CryptoError`, `OCSPError`,
/// `PKCS7Error`, `SignedDataError`), each with a `Kind` of its own.
public struct KindedError<ErrorKind: Sendable & Equatable>: Error, Sendable, Equatable, CustomStringConvertible {
    public typealias Kind = ErrorKind

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
