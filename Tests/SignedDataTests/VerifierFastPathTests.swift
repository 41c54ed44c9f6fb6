import Crypto
import Foundation
@_spi(Testing) import SignedData
import Testing
import TestPKI

/// The verifier's fast paths (header cache, one-pass payload decoding, block base64) accept and refuse exactly what
/// the plain path does.
@Suite("AppleSignedDataVerifier fast paths")
struct VerifierFastPathTests {
    @Test("a header seen before still needs a good signature, a valid chain at the new signedDate and a payload")
    func headerCacheNeverWidens() throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs)
        _ = try verifier.verify(try pki.sign(payload: payload))
        // Same header bytes from here on.
        for defect in [TestSigningPKI.Defect.tamperedPayload, .wrongSignature] {
            let error = #expect(throws: SignedDataError.self) {
                try verifier.verify(try pki.sign(payload: payload, defect: defect))
            }
            #expect(error?.kind == .invalidSignature, "\(defect)")
        }
        let late = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs + 40 * 86_400_000)
        let expired = #expect(throws: SignedDataError.self) { try verifier.verify(try pki.sign(payload: late)) }
        #expect(expired?.kind == .certificateNotValidAtSignedDate)
        let parts = try pki.sign(payload: payload).split(separator: ".").map(String.init)
        let badPayload = #expect(throws: SignedDataError.self) {
            try verifier.verify(parts[0] + ".*." + parts[2])
        }
        #expect(badPayload?.kind == .malformed)
        let shortSignature = #expect(throws: SignedDataError.self) {
            try verifier.verify(parts[0] + "." + parts[1] + ".AAAA")
        }
        #expect(shortSignature?.kind == .invalidSignature)
        // A header that failed its checks is never cached: it fails the same way every time.
        let two = try pki.sign(payload: payload, defect: .chainOfTwo)
        for _ in 0..<2 {
            #expect((#expect(throws: SignedDataError.self) { try verifier.verify(two) })?.kind == .invalidChainLength)
        }
    }

    @Test("decoding in one pass returns the payload and validates the chain at the signedDate it read")
    func decodeOnce() throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let jws = try pki.sign(payload: SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs + 7))
        let (transaction, verified) = try verifier.verify(jws, as: JWSTransactionPayload.self) { $0.signedDate }
        #expect(transaction.transactionId == "2000000123456789")
        #expect(verified.signedDateMs == pki.signedDateMs + 7)
        #expect(verified.payload == (try verifier.verify(jws)).payload)

        let undated = try pki.sign(payload: Array("{\"transactionId\":\"1\"}".utf8))
        let missing = #expect(throws: SignedDataError.self) {
            try verifier.verify(undated, as: JWSTransactionPayload.self) { $0.signedDate }
        }
        #expect(missing?.kind == .missingSignedDate)
        let array = try pki.sign(payload: Array("[1]".utf8))
        let notObject = #expect(throws: SignedDataError.self) {
            try verifier.verify(array, as: JWSTransactionPayload.self) { $0.signedDate }
        }
        #expect(notObject?.kind == .payloadNotJSON)
        let late = try pki.sign(
            payload: SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs + 40 * 86_400_000))
        let expired = #expect(throws: SignedDataError.self) {
            try verifier.verify(late, as: JWSTransactionPayload.self) { $0.signedDate }
        }
        #expect(expired?.kind == .certificateNotValidAtSignedDate)
    }

    @Test("base64url segments of every length decode as Foundation decodes them, and non-canonical text is refused")
    func base64AgreesWithFoundation() throws {
        let pki = try TestSigningPKI.mint()
        var generator = SeededGenerator(seed: 0x1A75)
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // A JWS whose payload is these bytes: the payload segment is their base64url.
            let segment = JWSSigner.base64URL(bytes)
            var standard = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while standard.count % 4 != 0 { standard += "=" }
            #expect(Data(base64Encoded: standard).map(Array.init) == bytes, "length \(length)")
            let jws = try pki.signer.sign(payload: bytes)
            guard length > 0 else { continue }
            #expect(try CompactJWS.unverifiedPayload(jws) == bytes, "length \(length)")
        }
        // "QQ" is canonical for "A"; "QR" carries non-zero unused bits and must be refused.
        let header = try pki.signer.sign(payload: Array("{}".utf8)).split(separator: ".")[0]
        #expect(try CompactJWS.unverifiedPayload(header + ".QQ.QQ") == [0x41])
        #expect(throws: SignedDataError.self) { try CompactJWS.unverifiedPayload(header + ".QR.QQ") }
        #expect(throws: SignedDataError.self) { try CompactJWS.unverifiedPayload(header + ".QUJ.QQ") }
        #expect(try CompactJWS.unverifiedPayload(header + ".QUI.QQ") == [0x41, 0x42])
    }
}
