import Crypto
import Foundation
@_spi(Testing) import SignedData
import Testing
import TestPKI

@Suite("CompactJWS")
struct CompactJWSTests {
    @Test("parses a minted ES256 JWS into header, payload, signing input and a 64-byte signature")
    func parsesMinted() throws {
        let pki = try TestSigningPKI.mint()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs)
        let jws = try pki.sign(payload: payload)
        let parsed = try CompactJWS.parse(jws)
        #expect(parsed.header.alg == "ES256")
        #expect(parsed.header.x5c?.count == 3)
        #expect(parsed.payload == payload)
        #expect(parsed.signature.count == 64)
        #expect(parsed.signingInput == Array(jws.split(separator: ".").prefix(2).joined(separator: ".").utf8))
        #expect(CompactJWS.looksLikeES256(jws))
        #expect(try CompactJWS.unverifiedPayload(jws) == payload)
    }

    @Test("refuses anything that is not three strict base64url segments, before decoding oversized input")
    func refusesShapes() throws {
        let pki = try TestSigningPKI.mint()
        let jws = try pki.sign(payload: Array("{\"signedDate\":1}".utf8))
        let parts = jws.split(separator: ".").map(String.init)
        let bad = [
            "", "a.b", "a.b.c.d", parts[0] + ".." + parts[2], "." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + ".", parts[0] + "=." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "+/." + parts[2], parts[0] + "." + parts[1] + " ." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + "x",  // 87 characters: "x" carries non-zero unused bits
            "e30." + parts[1] + "." + parts[2],  // header {} has no alg
            "bnVsbA." + parts[1] + "." + parts[2],  // header null
        ]
        for text in bad {
            #expect(throws: SignedDataError.self, "\(text.prefix(40))") { try CompactJWS.parse(text) }
            #expect(!CompactJWS.looksLikeES256(text))
        }
        let huge = parts[0] + "." + String(repeating: "A", count: CompactJWS.maximumLength) + "." + parts[2]
        let error = #expect(throws: SignedDataError.self) { try CompactJWS.parse(huge) }
        #expect(error?.kind == .malformed)
        #expect(error?.message.contains("limit") == true)
    }

    @Test("refuses alg none, HS256, RS256 and a missing alg as unsupported algorithms")
    func refusesAlgorithms() throws {
        let pki = try TestSigningPKI.mint()
        let payload = JWSSigner.base64URL(Array("{\"signedDate\":1}".utf8))
        for header in ["{\"alg\":\"none\"}", "{\"alg\":\"HS256\"}", "{\"alg\":\"RS256\"}", "{\"alg\":\"es256\"}",
                       "{\"x5c\":[]}", "{\"alg\":\"ES256 \"}"] {
            let text = JWSSigner.base64URL(Array(header.utf8)) + "." + payload + ".AAAA"
            let error = #expect(throws: SignedDataError.self) { try CompactJWS.parse(text) }
            #expect(error?.kind == .unsupportedAlgorithm, "\(header)")
            #expect(!CompactJWS.looksLikeES256(text))
        }
        #expect(throws: SignedDataError.self) { try CompactJWS.parse(try pki.sign(payload: [1], defect: .algNone)) }
        #expect(throws: SignedDataError.self) { try CompactJWS.parse(try pki.sign(payload: [1], defect: .hs256)) }
    }
}
