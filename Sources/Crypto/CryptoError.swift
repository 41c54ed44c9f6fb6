/// An error from the Crypto layer: what failed, and what the caller can do about it.
///
/// `message` names the input or operation and, for failures inside OpenSSL, ends with OpenSSL's own error queue text.
/// It never contains key material or the bytes being signed or verified.
public struct CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// An argument was refused before reaching OpenSSL (wrong length, wrong curve, empty input).
        case invalidArgument
        /// Bytes that should hold an X.509 certificate (DER or PEM) could not be read as one.
        case unreadableCertificate
        /// Bytes that should hold a key (PKCS#8 PEM, SubjectPublicKeyInfo DER) could not be read as one.
        case unreadableKey
        /// The key is readable but not of the type or curve the operation needs.
        case unsupportedKey
        /// A file could not be opened or read.
        case unreadableFile
        /// OpenSSL failed an operation that should not fail on valid input (allocation, signing).
        case operationFailed
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// An error whose message is `context` followed by (and clearing) this thread's OpenSSL error queue.
    package static func openSSL(_ kind: Kind, _ context: String) -> CryptoError {
        CryptoError(kind, OpenSSLErrorQueue.describe(context))
    }
}
