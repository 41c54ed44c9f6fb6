import Crypto
import Foundation
import SignedData
import Testing
import TestPKI

/// Our JWSSigner + minted PKI against Apple's own Python verifier (app-store-server-library's SignedDataVerifier,
/// offline, validating at signedDate): both must accept the good JWS and refuse every broken one.
@Suite("Apple's Python library as an oracle")
struct OracleTests {
    @Test("Apple's SignedDataVerifier agrees with ours on a good JWS and every broken variant")
    func agreesOnEveryVariant() throws {
        let pki = try TestSigningPKI.mint()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs, bundleId: "com.example.oracle")
        var cases: [[String: String]] = [["name": "good", "jws": try pki.sign(payload: payload)]]
        for defect in TestSigningPKI.Defect.allCases {
            cases.append(["name": "\(defect)", "jws": try pki.sign(payload: payload, defect: defect)])
        }
        let answer = try SignedDataFixtures.oracle([
            "op": "verify-transactions", "root": Data(pki.rootCertificate.der).base64EncodedString(),
            "bundleId": "com.example.oracle", "cases": cases,
        ])
        let verifier = pki.verifier()
        // Where we are deliberately stricter than Apple's library, which checks the marker OIDs only: a CA
        // certificate as the leaf (issue 24, item 10; `AppleSigningPathPolicy`). Ours must refuse it whatever
        // Apple's answer.
        let stricter = ["\(TestSigningPKI.Defect.leafIsCertificateAuthority)"]
        for testCase in cases {
            let name = try #require(testCase["name"])
            let theirs = try #require(answer[name] as? String, "no oracle answer for \(name)")
            let ours = (try? verifier.verify(try #require(testCase["jws"]))) != nil
            if !stricter.contains(name) {
                #expect(ours == (theirs == "ok"), "\(name): ours \(ours ? "accepted" : "refused"), Apple's \(theirs)")
            }
            #expect((name == "good") == ours, "\(name)")
        }
    }
}
