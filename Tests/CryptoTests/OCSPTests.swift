import Crypto
import Testing
import TestPKI

@Suite("OCSP")
struct OCSPTests {
    let now = CryptoFixtures.april2023
    let hour: Int64 = 3_600

    private func verify(
        _ der: [UInt8], _ pki: CryptoFixtures.PKI, certificate: Certificate? = nil, issuer: Certificate? = nil,
        at time: Int64? = nil
    ) throws(OCSPError) -> OCSPStatusAnswer {
        try OCSPResponse.verify(
            der: der, certificate: certificate ?? pki.leaf.certificate,
            issuer: issuer ?? pki.intermediate.authority.certificate, trustedRoots: [pki.root.authority.certificate],
            atEpochSeconds: time ?? now)
    }

    /// Expects `body` to throw an `OCSPError` of `kind`.
    private func expectRefused(
        _ kind: OCSPError.Kind, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> OCSPStatusAnswer
    ) throws {
        do {
            let answer = try body()
            Issue.record("expected \(kind), got \(answer)", sourceLocation: sourceLocation)
        } catch {
            #expect((error as? OCSPError)?.kind == kind, "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("a good answer signed by the issuer verifies, with its thisUpdate and nextUpdate")
    func good() throws {
        let pki = try CryptoFixtures.PKI()
        let der = try OCSPResponseSigner(authority: pki.intermediate).sign(
            [(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + 12 * hour)
        let answer = try verify(der, pki)
        #expect(answer == OCSPStatusAnswer(status: .good, thisUpdate: now - hour, nextUpdate: now + 12 * hour))
    }

    @Test("the intermediate's status, signed by the root (its issuer), verifies")
    func intermediateByRoot() throws {
        let pki = try CryptoFixtures.PKI()
        let intermediate = pki.intermediate.authority.certificate
        let der = try OCSPResponseSigner(authority: pki.root).sign(
            [(intermediate, .good)], thisUpdate: now - hour, nextUpdate: nil)
        let answer = try verify(der, pki, certificate: intermediate, issuer: pki.root.authority.certificate)
        #expect(answer.status == .good)
        #expect(answer.nextUpdate == nil)
    }

    @Test("a revoked answer carries the revocation time and reason; an unknown one says unknown")
    func revokedAndUnknown() throws {
        let pki = try CryptoFixtures.PKI()
        let signer = OCSPResponseSigner(authority: pki.intermediate)
        let revoked = try signer.sign(
            [(pki.leaf.certificate, .revoked(revokedAt: now - 2 * hour, reason: 1))], thisUpdate: now - hour,
            nextUpdate: now + hour)
        #expect(try verify(revoked, pki).status == .revoked(revokedAt: now - 2 * hour, reason: 1))
        let withoutReason = try signer.sign(
            [(pki.leaf.certificate, .revoked(revokedAt: now - 2 * hour, reason: nil))], thisUpdate: now - hour,
            nextUpdate: now + hour)
        #expect(try verify(withoutReason, pki).status == .revoked(revokedAt: now - 2 * hour, reason: nil))
        let unknown = try signer.sign(
            [(pki.leaf.certificate, .unknown)], thisUpdate: now - hour, nextUpdate: now + hour)
        #expect(try verify(unknown, pki).status == .unknown)
    }

    @Test("a responder the issuer delegated (ocspSigning) is accepted; one without the extended key usage is not")
    func delegatedResponder() throws {
        let pki = try CryptoFixtures.PKI()
        let responder = try pki.intermediate.issueOCSPResponder(notBefore: now - 10 * hour, notAfter: now + 10 * hour)
        let delegated = try OCSPResponseSigner(responder: responder, issuer: pki.intermediate.authority.certificate)
            .sign([(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        #expect(try verify(delegated, pki).status == .good)

        let sibling = try pki.intermediate.issueLeaf(notBefore: now - 10 * hour, notAfter: now + 10 * hour)
        let undelegated = try OCSPResponseSigner(responder: sibling, issuer: pki.intermediate.authority.certificate)
            .sign([(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        let error = #expect(throws: OCSPError.self) { try verify(undelegated, pki) }
        #expect(error?.kind == .untrustedSigner)
    }

    @Test("a response signed by another authority, or by an expired responder, is refused as an untrusted signer")
    func wrongSigner() throws {
        let pki = try CryptoFixtures.PKI()
        let other = try CryptoFixtures.PKI()
        // Another PKI's intermediate, answering with a CertID that names our intermediate.
        let foreign = try OCSPResponseSigner(responder: other.intermediate.authority,
                                             issuer: pki.intermediate.authority.certificate)
            .sign([(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        try expectRefused(.untrustedSigner) { try verify(foreign, pki) }
        // The root answering about the leaf: not its issuer, not delegated.
        let root = try OCSPResponseSigner(responder: pki.root.authority, issuer: pki.intermediate.authority.certificate)
            .sign([(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        try expectRefused(.untrustedSigner) { try verify(root, pki) }
        // A delegated responder whose certificate had expired at the time of the check.
        let expired = try pki.intermediate.issueOCSPResponder(notBefore: now - 10 * hour, notAfter: now - 5 * hour)
        let stale = try OCSPResponseSigner(responder: expired, issuer: pki.intermediate.authority.certificate)
            .sign([(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        try expectRefused(.untrustedSigner) { try verify(stale, pki) }
    }

    @Test("an answer whose nextUpdate has passed, or whose thisUpdate is ahead, is not valid at the time of the check")
    func validityInterval() throws {
        let pki = try CryptoFixtures.PKI()
        let signer = OCSPResponseSigner(authority: pki.intermediate)
        let stale = try signer.sign([(pki.leaf.certificate, .good)], thisUpdate: now - 48 * hour,
                                    nextUpdate: now - 24 * hour)
        let staleError = #expect(throws: OCSPError.self) { try verify(stale, pki) }
        #expect(staleError?.kind == .notValidAtTime)
        #expect(staleError?.message.contains("stale") == true)
        let future = try signer.sign(
            [(pki.leaf.certificate, .good)], thisUpdate: now + hour, nextUpdate: now + 2 * hour)
        try expectRefused(.notValidAtTime) { try verify(future, pki) }
        // Within the allowed skew (5 minutes) both ends are tolerated.
        let edge = try signer.sign([(pki.leaf.certificate, .good)], thisUpdate: now + 60, nextUpdate: now - 60)
        #expect(try verify(edge, pki).status == .good)
    }

    @Test("a response about another certificate holds no answer about ours")
    func otherCertificate() throws {
        let pki = try CryptoFixtures.PKI()
        let sibling = try pki.intermediate.issueLeaf(notBefore: now - hour, notAfter: now + hour)
        let der = try OCSPResponseSigner(authority: pki.intermediate).sign(
            [(sibling.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        try expectRefused(.noMatchingResponse) { try verify(der, pki) }
    }

    @Test("garbage, trailing bytes and a non-successful status are refused as such")
    func malformedAndUnsuccessful() throws {
        let pki = try CryptoFixtures.PKI()
        try expectRefused(.malformed) { try verify([0x30, 0x03, 0x0a, 0x01], pki) }
        try expectRefused(.malformed) { try verify(Array("<html>".utf8), pki) }
        try expectRefused(.malformed) { try verify([], pki) }
        let good = try OCSPResponseSigner(authority: pki.intermediate).sign(
            [(pki.leaf.certificate, .good)], thisUpdate: now - hour, nextUpdate: now + hour)
        try expectRefused(.malformed) { try verify(good + [0], pki) }
        let tryLater = try OCSPResponseSigner.unsuccessful(.tryLater)
        let error = #expect(throws: OCSPError.self) { try verify(tryLater, pki) }
        #expect(error?.kind == .unsuccessful)
        #expect(error?.message.contains("trylater") == true)
    }

    @Test("a request names the certificate's serial and its issuer; the issuer's responder answers it, others do not")
    func requestRoundTrip() throws {
        let pki = try CryptoFixtures.PKI()
        let request = try OCSPRequest.der(
            certificate: pki.leaf.certificate, issuer: pki.intermediate.authority.certificate)
        var asked: [String] = []
        let response = try #require(
            try OCSPResponseSigner(authority: pki.intermediate).respond(
                toRequest: request, thisUpdate: now - hour, nextUpdate: now + hour
            ) { serial in
                asked.append(serial)
                return .revoked(revokedAt: now - hour, reason: nil)
            })
        #expect(asked == [pki.leaf.certificate.serialNumberHex])
        #expect(try verify(response, pki).status == .revoked(revokedAt: now - hour, reason: nil))
        // The root's responder does not know the intermediate's certificates.
        let unanswered = try OCSPResponseSigner(authority: pki.root).respond(
            toRequest: request, thisUpdate: now, nextUpdate: nil) { _ in .good }
        #expect(unanswered == nil)
        #expect(throws: CryptoError.self) {
            try OCSPResponseSigner(authority: pki.root).respond(
                toRequest: [1, 2, 3], thisUpdate: now, nextUpdate: nil
            ) { _ in .good }
        }
    }

    @Test("the Authority Information Access OCSP URL is read from minted and real Apple certificates")
    func responderURLs() throws {
        let pki = try CryptoFixtures.PKI()
        #expect(pki.leaf.certificate.ocspResponderURLs == [])
        let leaf = try pki.intermediate.issueLeaf(
            notBefore: now - hour, notAfter: now + hour, ocspURL: "http://127.0.0.1:8080/ocsp")
        #expect(leaf.certificate.ocspResponderURLs == ["http://127.0.0.1:8080/ocsp"])
        let wwdr = try CryptoFixtures.certificate("AppleWWDRCAG6.cer")
        #expect(wwdr.ocspResponderURLs == ["http://ocsp.apple.com/ocsp03-applerootcag3"])
        #expect(wwdr.serialNumberHex == "22C1A1470A747369EF538612C9C69F3D38F36CD7")
        let appleLeaf = try CryptoFixtures.certificate("apple-receipt-signing-leaf-2021.cer")
        #expect(appleLeaf.ocspResponderURLs == ["http://ocsp.apple.com/ocsp03-wwdrg602"])
        #expect(appleLeaf.serialNumberHex == "68FA0F95DBE94A8107D2506B8C33EFF6")
    }
}
