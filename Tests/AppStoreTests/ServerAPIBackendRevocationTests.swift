import Crypto
import FakeAppStore
import ReceiptModel
import SignedData
import Testing

@testable import AppStore
import TestPKI

/// Revocation checks at the Server API backend: a revoked signing certificate is `invalid_signature`, an unavailable
/// revocation status is retryable (an outage, `apple_unavailable` once the round's budget is spent), never a verdict.
@Suite(.serialized) struct ServerAPIBackendRevocationTests {
    private func signedData(_ harness: ServerAPIHarness, _ responder: TestOCSPResponder) -> AppleSignedDataVerifier {
        AppleSignedDataVerifier(
            trustedRoots: [harness.pki.rootCertificate],
            revocation: RevocationChecker(
                trustedRoots: [harness.pki.rootCertificate], transport: responder,
                configuration: RevocationChecker.Configuration(
                    responderURL: "http://ocsp.test/", retryIntervalSeconds: 0)))
    }

    @Test func aSignedTransactionIsRetryableWhileTheRevocationStatusIsUnavailable() async throws {
        let harness = try ServerAPIHarness()
        let responder = harness.pki.ocspResponder()
        responder.mode = .fail
        let backend = harness.backend(withClient: false, signedData: signedData(harness, responder))
        let jws = try harness.signedTransaction("1000000000000801")

        let answer = await harness.answer(.signedTransaction(jws), with: backend)
        #expect(answer.result == .retryable(.transient))
        #expect(answer.message?.contains("revocation status unavailable") == true)

        let outcome = await harness.verify(.signedTransaction(jws), with: backend)
        guard case .unavailable(let failure) = outcome else {
            Issue.record("expected no verdict, got \(outcome)")
            return
        }
        #expect(failure.reason == .appleUnavailable)
        #expect(failure.message.contains("OCSP"))
        #expect(responder.requestCount >= 3, "each in-round attempt asked again")

        responder.mode = .answer
        let verdict = try #require(await harness.verify(.signedTransaction(jws), with: backend).verdict)
        #expect(verdict.outcome == .verified)
    }

    @Test func aSignedTransactionSignedByARevokedLeafIsRejectedAsInvalidSignature() async throws {
        let harness = try ServerAPIHarness()
        let responder = harness.pki.ocspResponder()
        responder.setRevoked(harness.pki.leaf.certificate.serialNumberHex)
        let backend = harness.backend(withClient: false, signedData: signedData(harness, responder))
        let jws = try harness.signedTransaction("1000000000000802")
        let verdict = try #require(await harness.verify(.signedTransaction(jws), with: backend).verdict)
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .invalidSignature)
        #expect(verdict.message?.contains("revoked") == true)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000802") == (0, 0))
    }
}
