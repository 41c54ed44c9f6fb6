@_spi(Testing) import Crypto
import Foundation
import Testing
import TestPKI

@Suite("Certificate")
struct CertificateTests {
    @Test("reads Apple Root CA - G3 from DER with its names, validity, curve and published fingerprint")
    func appleRootG3() throws {
        let root = try CryptoFixtures.certificate("AppleRootCA-G3.cer")
        #expect(root.subject.contains("CN=Apple Root CA - G3"))
        #expect(root.subject == root.issuer)
        #expect(root.isSelfIssued)
        #expect(root.notBefore == 1_398_881_946)  // 2014-04-30T18:19:06Z
        #expect(root.notAfter == 2_187_800_346)  // 2039-04-30T18:19:06Z
        #expect(root.fingerprintText
            == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(try root.publicKey().curve == .p384)
        #expect(!root.hasExtension(oid: CertificateAuthority.intermediateMarkerOID))
    }

    @Test("finds Apple's WWDR marker extension on the G6 intermediate by dotted OID")
    func markerExtension() throws {
        let intermediate = try CryptoFixtures.certificate("AppleWWDRCAG6.cer")
        #expect(intermediate.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(!intermediate.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(intermediate.hasExtension(oid: "2.5.29.19"))  // basicConstraints
        let leaf = try CryptoFixtures.certificate("apple-receipt-signing-leaf-2021.cer")
        #expect(leaf.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(try leaf.publicKey().curve == .p256)
    }

    @Test("round-trips through PEM, and loads a file of several PEM certificates in order")
    func pemRoundTrip() throws {
        let root = try CryptoFixtures.certificate("AppleRootCA-G3.cer")
        let intermediate = try CryptoFixtures.certificate("AppleWWDRCAG6.cer")
        #expect(root.pem.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(try Certificate(pem: root.pem) == root)
        let path = NSTemporaryDirectory() + "crypto-tests-\(UUID().uuidString).pem"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try (root.pem + intermediate.pem).write(toFile: path, atomically: true, encoding: .utf8)
        let loaded = try Certificate.load(path: path)
        #expect(loaded.map(\.der) == [root.der, intermediate.der])
    }

    @Test("refuses bytes that are not exactly one certificate, naming the problem")
    func unreadable() throws {
        let root = try CryptoFixtures.certificate("AppleRootCA-G3.cer")
        #expect(throws: CryptoError.self) { try Certificate(der: Array("not a certificate".utf8)) }
        #expect(throws: CryptoError.self) { try Certificate(der: Array(root.der.dropLast())) }
        let trailing = #expect(throws: CryptoError.self) { try Certificate(der: root.der + [0x00]) }
        #expect(trailing?.message.contains("1 unexpected bytes") == true)
        #expect(throws: CryptoError.self) { try Certificate(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") }
        let missing = #expect(throws: CryptoError.self) { try Certificate.load(path: "/nonexistent/root.cer") }
        #expect(missing?.kind == .unreadableFile)
        #expect(missing?.message.contains("/nonexistent/root.cer") == true)
    }

    @Test("mints certificates with the requested names, validity windows and marker extensions")
    func minting() throws {
        let pki = try CryptoFixtures.PKI()
        let root = pki.root.authority.certificate
        #expect(root.isSelfIssued)
        #expect(try root.publicKey().curve == .p384)
        #expect(pki.intermediate.authority.certificate.hasExtension(oid: CertificateAuthority.intermediateMarkerOID))
        #expect(pki.leaf.certificate.hasExtension(oid: CertificateAuthority.leafMarkerOID))
        #expect(!pki.leaf.certificate.hasExtension(oid: CertificateAuthority.intermediateMarkerOID))
        #expect(pki.leaf.certificate.notBefore == CryptoFixtures.april2023 - 30 * CryptoFixtures.day)
        #expect(pki.leaf.certificate.issuer == pki.intermediate.authority.certificate.subject)
        let bare = try pki.intermediate.issueLeaf(notBefore: 0, notAfter: 1, markerOIDs: [])
        #expect(!bare.certificate.hasExtension(oid: CertificateAuthority.leafMarkerOID))
        #expect(throws: CryptoError.self) { try pki.intermediate.issueLeaf(notBefore: 2, notAfter: 1) }
        #expect(throws: CryptoError.self) { try pki.intermediate.issueLeaf(notBefore: 0, notAfter: 1, markerOIDs: ["x"]) }
        // The minted DER is what OpenSSL's own reader accepts.
        #expect(try Certificate(der: pki.leaf.der) == pki.leaf.certificate)
    }

    @Test("tells certificate authorities from end entities, for Apple's certificates and minted ones")
    func certificateAuthorityFlag() throws {
        #expect(try CryptoFixtures.certificate("AppleRootCA-G3.cer").isCertificateAuthority)
        #expect(try CryptoFixtures.certificate("AppleIncRootCertificate.cer").isCertificateAuthority)
        #expect(try CryptoFixtures.certificate("AppleWWDRCAG6.cer").isCertificateAuthority)
        #expect(!(try CryptoFixtures.certificate("apple-receipt-signing-leaf-2021.cer").isCertificateAuthority))
        let pki = try CryptoFixtures.PKI()
        #expect(pki.root.authority.certificate.isCertificateAuthority)
        #expect(pki.intermediate.authority.certificate.isCertificateAuthority)
        #expect(!pki.leaf.certificate.isCertificateAuthority)
    }

    @Test("mints intermediates with path length 0 by default, a chosen one or none, and refuses a negative one")
    func intermediatePathLength() throws {
        let pki = try CryptoFixtures.PKI()
        let now = CryptoFixtures.april2023
        let root = pki.root.authority.certificate
        func path(outerPathLength: Int?) throws -> [Certificate] {
            let outer = try pki.root.issueIntermediate(
                commonName: "Outer", notBefore: now - 10, notAfter: now + 10, maximumPathLength: outerPathLength)
            let inner = try outer.issueIntermediate(commonName: "Inner", notBefore: now - 10, notAfter: now + 10)
            let leaf = try inner.issueLeaf(notBefore: now - 10, notAfter: now + 10)
            return try CertificateChain.verify(
                leaf: leaf.certificate, intermediates: [inner.authority.certificate, outer.authority.certificate],
                trustedRoots: [root], atEpochSeconds: now
            ).certificates
        }
        #expect(try path(outerPathLength: 1).count == 4)
        #expect(try path(outerPathLength: nil).count == 4)
        // Apple's shape: a WWDR intermediate may issue leaves only.
        let exceeded = #expect(throws: CertificateChainError.self) { try path(outerPathLength: 0) }
        #expect(exceeded?.kind == .invalidIssuer)
        let negative = #expect(throws: CryptoError.self) {
            try pki.root.issueIntermediate(notBefore: now, notAfter: now + 1, maximumPathLength: -1)
        }
        #expect(negative?.kind == .invalidArgument)
    }
}
