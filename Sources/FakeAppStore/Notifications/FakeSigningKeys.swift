import Crypto
import Foundation
import Glibc
import SignedData

/// The keys the fake App Store signs with: an App Store-shaped test PKI (`TestSigningPKI`: root → intermediate with
/// Apple's WWDR marker → leaf with the receipt-signing marker), kept in a directory so other processes can trust
/// the same root (`APPLE_ROOT_CERTIFICATES=<directory>/apple-root.pem`) and `fake-appstore send-notification` can
/// sign with the same leaf as a running fake.
///
/// Files: `apple-root.pem` (the root to trust), `chain.pem` (leaf, intermediate, root) and `leaf-key.pem` (PKCS#8,
/// mode 0600). A directory without them, or whose leaf expires within a day, gets a freshly minted set (the leaf of
/// a minted PKI is valid for 30 days).
///
/// - Important: test and development keys only. Production verifies Apple's signatures and never signs.
public struct FakeSigningKeys: Sendable {
    public static let rootFileName = "apple-root.pem"
    public static let chainFileName = "chain.pem"
    public static let keyFileName = "leaf-key.pem"

    public let signer: JWSSigner
    /// The certificate verifiers must trust.
    public let rootCertificate: Certificate

    public init(signer: JWSSigner, rootCertificate: Certificate) {
        self.signer = signer
        self.rootCertificate = rootCertificate
    }

    /// A fresh PKI in memory.
    public static func mint() throws(CryptoError) -> FakeSigningKeys {
        let pki = try TestSigningPKI.mint()
        return FakeSigningKeys(signer: pki.signer, rootCertificate: pki.rootCertificate)
    }

    /// The keys in `directory` (created when missing), minting and writing a new set when there is none or the
    /// stored leaf expires within a day.
    /// - Throws: `FakeSigningKeysError` naming the file that could not be read or written.
    public static func loadOrMint(directory: String, now: Int64 = Int64(time(nil))) throws(FakeSigningKeysError)
        -> FakeSigningKeys
    {
        if let loaded = try load(directory: directory), loaded.signer.chain[0].notAfter > now + TestSigningPKI.day {
            return loaded
        }
        let keys: FakeSigningKeys
        do {
            keys = try mint()
        } catch {
            throw FakeSigningKeysError("cannot mint a signing PKI: \(error.message)")
        }
        try keys.write(to: directory)
        return keys
    }

    /// The keys in `directory`, or nil when it holds none.
    public static func load(directory: String) throws(FakeSigningKeysError) -> FakeSigningKeys? {
        let chainPath = directory + "/" + chainFileName
        let keyPath = directory + "/" + keyFileName
        guard access(chainPath, F_OK) == 0, access(keyPath, F_OK) == 0 else { return nil }
        do {
            let chain = try Certificate.load(path: chainPath)
            guard chain.count == 3 else {
                throw FakeSigningKeysError(
                    "\(chainPath) holds \(chain.count) certificates instead of leaf, intermediate, root")
            }
            let key = try ECPrivateKey.load(path: keyPath)
            return FakeSigningKeys(signer: JWSSigner(privateKey: key, chain: chain), rootCertificate: chain[2])
        } catch let error as FakeSigningKeysError {
            throw error
        } catch {
            throw FakeSigningKeysError("cannot read the signing keys in \(directory): \(error)")
        }
    }

    /// Writes the three files into `directory` (created when missing).
    public func write(to directory: String) throws(FakeSigningKeysError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let chainText = signer.chain.map(\.pem).joined()
            try Data(rootCertificate.pem.utf8).write(to: URL(fileURLWithPath: rootPath(in: directory)))
            try Data(chainText.utf8).write(to: URL(fileURLWithPath: directory + "/" + Self.chainFileName))
            let keyPath = directory + "/" + Self.keyFileName
            try Data(try signer.privateKey.pkcs8PEM().utf8).write(to: URL(fileURLWithPath: keyPath))
            chmod(keyPath, 0o600)
        } catch {
            throw FakeSigningKeysError("cannot write the signing keys to \(directory): \(error)")
        }
    }

    /// Where `write(to:)` puts the root certificate.
    public func rootPath(in directory: String) -> String {
        directory + "/" + Self.rootFileName
    }
}

/// The signing keys could not be read, minted or written.
public struct FakeSigningKeysError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
