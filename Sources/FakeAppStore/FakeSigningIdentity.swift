import Crypto
import Foundation
import SignedData
import TestPKI

/// What the fake App Store signs transactions with: an App Store-shaped chain (leaf with
/// 1.2.840.113635.100.6.11.1, intermediate with 1.2.840.113635.100.6.2.1, root) and the leaf's key. Verifiers that
/// trust `rootCertificate` (`APPLE_ROOT_CERTIFICATES`) accept what it signs.
public struct FakeSigningIdentity: Sendable {
    public let signer: JWSSigner
    /// The trust anchor to give verifiers.
    public let rootCertificate: Certificate
    /// Answers OCSP requests about the chain's leaf and intermediate (`POST /ocsp`); nil when the intermediate's
    /// and root's keys are unknown.
    public let ocspResponder: TestOCSPResponder?

    public init(signer: JWSSigner, rootCertificate: Certificate, ocspResponder: TestOCSPResponder? = nil) {
        self.signer = signer
        self.rootCertificate = rootCertificate
        self.ocspResponder = ocspResponder
    }

    /// A fresh test PKI minted in memory (the fake's default; the root is served at `GET /admin/signing-root`).
    public static func mint() throws(CryptoError) -> FakeSigningIdentity {
        let pki = try TestSigningPKI.mint()
        return FakeSigningIdentity(
            signer: pki.signer, rootCertificate: pki.rootCertificate, ocspResponder: pki.ocspResponder())
    }

    /// Keys written by `fake-appstore mint-pki`: the leaf's PEM private key and a PEM chain, leaf first, root last.
    /// When `intermediate-key.pem` and `root-key.pem` lie next to the chain (mint-pki writes them), the fake also
    /// answers OCSP requests about the chain.
    public static func load(keyPath: String, chainPath: String) throws(CryptoError) -> FakeSigningIdentity {
        let key = try ECPrivateKey.load(path: keyPath)
        let chain = try Certificate.load(path: chainPath)
        guard chain.count == 3 else {
            throw CryptoError(
                .invalidArgument, "\(chainPath) holds \(chain.count) certificates; expected leaf, intermediate, root")
        }
        let directory = chainPath.contains("/") ? String(chainPath[..<chainPath.lastIndex(of: "/")!]) : "."
        let intermediateKeyPath = directory + "/" + FakePKIFiles.intermediateKeyFile
        let rootKeyPath = directory + "/" + FakePKIFiles.rootKeyFile
        var responder: TestOCSPResponder?
        if FileManager.default.isReadableFile(atPath: intermediateKeyPath),
            FileManager.default.isReadableFile(atPath: rootKeyPath)
        {
            let intermediateKey = try ECPrivateKey.load(path: intermediateKeyPath)
            let rootKey = try ECPrivateKey.load(path: rootKeyPath)
            let intermediate = CertificateAuthority(
                authority: MintedCertificate(certificate: chain[1], privateKey: intermediateKey))
            let root = CertificateAuthority(authority: MintedCertificate(certificate: chain[2], privateKey: rootKey))
            responder = TestOCSPResponder(authorities: [intermediate, root])
        }
        return FakeSigningIdentity(
            signer: JWSSigner(privateKey: key, chain: chain), rootCertificate: chain[2], ocspResponder: responder)
    }
}

/// `fake-appstore mint-pki --out DIR`: a signing PKI and an App Store Server API key for `make dev` and benchmarks,
/// written as files (test and development only; nothing Apple would trust).
public enum FakePKIFiles {
    /// The files written, by name.
    public static let rootFile = "root.pem"
    public static let intermediateFile = "intermediate.pem"
    public static let leafFile = "leaf.pem"
    public static let chainFile = "chain.pem"
    public static let signingKeyFile = "signing-key.pem"
    /// The CA keys, for the fake's OCSP responder (`POST /ocsp`).
    public static let intermediateKeyFile = "intermediate-key.pem"
    public static let rootKeyFile = "root-key.pem"
    public static let apiKeyFile = "api-key.p8"
    public static let settingsFile = "settings.env"

    /// What `mint` wrote.
    public struct Minted: Sendable {
        public let directory: String
        public let issuerId: String
        public let keyId: String

        public func path(_ file: String) -> String { directory + "/" + file }

        /// The verifier settings that use these files (`KEY=value` lines).
        public var verifierSettings: [String: String] {
            [
                "APPLE_ROOT_CERTIFICATES": path(FakePKIFiles.rootFile), "APPLE_ISSUER_ID": issuerId,
                "APPLE_KEY_ID": keyId, "APPLE_PRIVATE_KEY_FILE": path(FakePKIFiles.apiKeyFile),
            ]
        }

        /// The fake's arguments that use these files.
        public var fakeArguments: [String] {
            [
                "--signing-key", path(FakePKIFiles.signingKeyFile), "--signing-chain", path(FakePKIFiles.chainFile),
                "--api-key", path(FakePKIFiles.apiKeyFile), "--issuer-id", issuerId, "--key-id", keyId,
            ]
        }
    }

    /// Mints a root (P-384, ±5 years), an intermediate (±3 years), a leaf (±2 years) around now and a P-256 API key,
    /// and writes them into `directory` (created if needed), with `settings.env` holding the verifier's settings.
    public static func mint(into directory: String) throws -> Minted {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let now = Int64(Date().timeIntervalSince1970)
        let year: Int64 = 365 * 86_400
        let root = try CertificateAuthority.makeRoot(
            commonName: "Fake App Store Root CA", notBefore: now - 5 * year, notAfter: now + 5 * year)
        let intermediate = try root.issueIntermediate(
            commonName: "Fake Worldwide Developer Relations CA", notBefore: now - 3 * year, notAfter: now + 3 * year)
        let leaf = try intermediate.issueLeaf(
            commonName: "Fake App Store Receipt Signing", notBefore: now - 2 * year, notAfter: now + 2 * year)
        let apiKey = try ECPrivateKey.generate(curve: .p256)
        let keyId = String(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10))
        let minted = Minted(directory: directory, issuerId: UUID().uuidString.lowercased(), keyId: keyId)
        func write(_ file: String, _ text: String, secret: Bool = false) throws {
            let path = minted.path(file)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            if secret { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path) }
        }
        try write(rootFile, root.authority.pem)
        try write(intermediateFile, intermediate.authority.pem)
        try write(leafFile, leaf.pem)
        try write(chainFile, leaf.pem + intermediate.authority.pem + root.authority.pem)
        try write(signingKeyFile, try leaf.privateKey.pkcs8PEM(), secret: true)
        try write(intermediateKeyFile, try intermediate.authority.privateKey.pkcs8PEM(), secret: true)
        try write(rootKeyFile, try root.authority.privateKey.pkcs8PEM(), secret: true)
        try write(apiKeyFile, try apiKey.pkcs8PEM(), secret: true)
        try write(
            settingsFile,
            minted.verifierSettings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)\n" }.joined())
        return minted
    }
}
