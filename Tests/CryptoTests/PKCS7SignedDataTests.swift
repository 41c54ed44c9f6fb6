import Crypto
import Testing
import TestPKI

@Suite("PKCS7SignedData")
struct PKCS7SignedDataTests {
    let now = CryptoFixtures.april2023
    let content = Array("receipt payload bytes: the content Apple signs".utf8)

    @Test("returns the content of a minted SignedData whose signer chains to the given root")
    func roundTrip() throws {
        let pki = try CryptoFixtures.PKI()
        let der = try PKCS7SignedData.sign(content: content, signer: pki.leaf,
                                           intermediates: [pki.intermediate.authority.certificate])
        let verified = try PKCS7SignedData.verify(der: der, trustedRoots: [pki.root.authority.certificate],
                                                  atEpochSeconds: now)
        #expect(verified.content == content)
        #expect(verified.signer == pki.leaf.certificate)
        #expect(verified.chain.certificates.count == 3)
    }

    @Test("refuses altered content as a bad signature")
    func tamperedContent() throws {
        let pki = try CryptoFixtures.PKI()
        var der = try PKCS7SignedData.sign(content: content, signer: pki.leaf,
                                           intermediates: [pki.intermediate.authority.certificate])
        let start = try #require(firstRange(of: Array("Apple signs".utf8), in: der))
        der[start] = UInt8(ascii: "a")
        let error = #expect(throws: PKCS7Error.self) {
            try PKCS7SignedData.verify(der: der, trustedRoots: [pki.root.authority.certificate], atEpochSeconds: now)
        }
        #expect(error?.kind == .badSignature)
    }

    @Test("refuses a signer that chains to another root, or was not valid at the given time")
    func untrustedSigner() throws {
        let pki = try CryptoFixtures.PKI()
        let der = try PKCS7SignedData.sign(content: content, signer: pki.leaf,
                                           intermediates: [pki.intermediate.authority.certificate])
        let other = try CryptoFixtures.PKI()
        let wrongRoot = #expect(throws: PKCS7Error.self) {
            try PKCS7SignedData.verify(der: der, trustedRoots: [other.root.authority.certificate], atEpochSeconds: now)
        }
        #expect(wrongRoot?.kind == .untrustedSigner(.untrustedRoot))
        let expired = #expect(throws: PKCS7Error.self) {
            try PKCS7SignedData.verify(der: der, trustedRoots: [pki.root.authority.certificate],
                                       atEpochSeconds: pki.leaf.certificate.notAfter + 1)
        }
        #expect(expired?.kind == .untrustedSigner(.expired))
        let missingIntermediate = try PKCS7SignedData.sign(content: content, signer: pki.leaf)
        #expect(throws: PKCS7Error.self) {
            try PKCS7SignedData.verify(der: missingIntermediate, trustedRoots: [pki.root.authority.certificate],
                                       atEpochSeconds: now)
        }
    }

    @Test("refuses bytes that are not SignedData, truncated SignedData and trailing garbage")
    func malformed() throws {
        let pki = try CryptoFixtures.PKI()
        let der = try PKCS7SignedData.sign(content: content, signer: pki.leaf,
                                           intermediates: [pki.intermediate.authority.certificate])
        let roots = [pki.root.authority.certificate]
        for bad in [[], Array("garbage".utf8), Array(der.prefix(der.count / 2)), der + [0x30, 0x00], pki.leaf.der] {
            let error = #expect(throws: PKCS7Error.self) {
                try PKCS7SignedData.verify(der: bad, trustedRoots: roots, atEpochSeconds: now)
            }
            #expect(error?.kind == .malformed)
        }
    }

    private func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
