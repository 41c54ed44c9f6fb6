import Crypto
import Testing
import TestPKI

@Suite("CertificateChain")
struct CertificateChainTests {
    let now = CryptoFixtures.april2023

    @Test("validates a minted leaf through its intermediate to the given root, and reports the path and its window")
    func validChain() throws {
        let pki = try CryptoFixtures.PKI()
        let chain = try CertificateChain.verify(
            leaf: pki.leaf.certificate, intermediates: [pki.intermediate.authority.certificate],
            trustedRoots: [pki.root.authority.certificate], atEpochSeconds: now)
        #expect(chain.certificates == [pki.leaf.certificate, pki.intermediate.authority.certificate,
                                       pki.root.authority.certificate])
        #expect(chain.validFrom == pki.leaf.certificate.notBefore)
        #expect(chain.validUntil == pki.leaf.certificate.notAfter)
        #expect(chain.isValid(atEpochSeconds: chain.validFrom))
        #expect(chain.isValid(atEpochSeconds: chain.validUntil - 1))
        #expect(!chain.isValid(atEpochSeconds: chain.validUntil))
        #expect(!chain.isValid(atEpochSeconds: chain.validFrom - 1))
    }

    @Test("refuses a leaf outside its validity window at the given time as expired or not yet valid")
    func validityWindow() throws {
        let pki = try CryptoFixtures.PKI()
        let leaf = pki.leaf.certificate
        let expired = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: leaf, intermediates: [pki.intermediate.authority.certificate],
                                        trustedRoots: [pki.root.authority.certificate], atEpochSeconds: leaf.notAfter)
        }
        #expect(expired?.kind == .expired)
        #expect(expired?.depth == 0)
        #expect(expired?.message.contains("Test App Store Signing") == true)
        let early = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: leaf, intermediates: [pki.intermediate.authority.certificate],
                                        trustedRoots: [pki.root.authority.certificate], atEpochSeconds: leaf.notBefore - 1)
        }
        #expect(early?.kind == .notYetValid)
        // OpenSSL's window is [notBefore, notAfter): the first second is valid, notAfter itself is expired.
        for time in [leaf.notBefore, leaf.notAfter - 1] {
            _ = try CertificateChain.verify(leaf: leaf, intermediates: [pki.intermediate.authority.certificate],
                                            trustedRoots: [pki.root.authority.certificate], atEpochSeconds: time)
        }
    }

    @Test("refuses a chain that ends at a root the caller did not give, or when no root is given")
    func untrustedRoot() throws {
        let pki = try CryptoFixtures.PKI()
        let other = try CryptoFixtures.PKI()
        let error = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: pki.leaf.certificate, intermediates: [pki.intermediate.authority.certificate],
                                        trustedRoots: [other.root.authority.certificate], atEpochSeconds: now)
        }
        #expect(error?.kind == .untrustedRoot)
        let missingIntermediate = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: pki.leaf.certificate, intermediates: [],
                                        trustedRoots: [pki.root.authority.certificate], atEpochSeconds: now)
        }
        #expect(missingIntermediate?.kind == .untrustedRoot)
        let none = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: pki.leaf.certificate, intermediates: [pki.intermediate.authority.certificate],
                                        trustedRoots: [], atEpochSeconds: now)
        }
        #expect(none?.kind == .untrustedRoot)
        // A self-signed leaf presented as its own root is not trusted either.
        let selfSigned = try CertificateAuthority.makeRoot(curve: .p256, notBefore: now - 10, notAfter: now + 10)
        #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: selfSigned.authority.certificate, intermediates: [],
                                        trustedRoots: [pki.root.authority.certificate], atEpochSeconds: now)
        }
    }

    @Test("refuses a leaf whose signature bytes were altered as a bad signature")
    func badSignature() throws {
        let pki = try CryptoFixtures.PKI()
        var der = pki.leaf.der
        // The certificate ends with the issuer's ECDSA signature: flip a bit inside its last INTEGER.
        der[der.count - 3] ^= 0x01
        let tampered = try Certificate(der: der)
        let error = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: tampered, intermediates: [pki.intermediate.authority.certificate],
                                        trustedRoots: [pki.root.authority.certificate], atEpochSeconds: now)
        }
        #expect(error?.kind == .badSignature)
    }

    @Test("refuses a path through a leaf certificate used as an issuer")
    func leafAsIssuer() throws {
        let pki = try CryptoFixtures.PKI()
        let fakeAuthority = CertificateAuthority(authority: pki.leaf)
        let grandchild = try fakeAuthority.issueLeaf(notBefore: now - 10, notAfter: now + 10)
        let error = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(
                leaf: grandchild.certificate,
                intermediates: [pki.leaf.certificate, pki.intermediate.authority.certificate],
                trustedRoots: [pki.root.authority.certificate], atEpochSeconds: now)
        }
        #expect(error?.kind == .invalidIssuer)
    }

    @Test("validates Apple's real 2021 receipt-signing chain against Apple Root CA - G3 only inside its window")
    func realAppleChain() throws {
        let leaf = try CryptoFixtures.certificate("apple-receipt-signing-leaf-2021.cer")
        let intermediate = try CryptoFixtures.certificate("AppleWWDRCAG6.cer")
        let root = try CryptoFixtures.certificate("AppleRootCA-G3.cer")
        let chain = try CertificateChain.verify(leaf: leaf, intermediates: [intermediate], trustedRoots: [root],
                                                atEpochSeconds: now)
        #expect(chain.certificates.count == 3)
        #expect(chain.validUntil == leaf.notAfter)
        let expired = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: leaf, intermediates: [intermediate], trustedRoots: [root],
                                        atEpochSeconds: 1_735_689_600)  // 2025-01-01
        }
        #expect(expired?.kind == .expired)
        let incRoot = try CryptoFixtures.certificate("AppleIncRootCertificate.cer")
        let wrongRoot = #expect(throws: CertificateChainError.self) {
            try CertificateChain.verify(leaf: leaf, intermediates: [intermediate], trustedRoots: [incRoot],
                                        atEpochSeconds: now)
        }
        #expect(wrongRoot?.kind == .untrustedRoot)
    }
}
