import Foundation
import Testing

@testable import SignedData

@Suite("Base64 (strict JWS decoding)")
struct Base64Tests {
    @Test("decodes what Foundation encodes, at every length, in both alphabets")
    func roundTrips() throws {
        var generator = SeededGenerator(seed: 0xBA5E_64)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let standard = Data(bytes).base64EncodedString()
            #expect(Base64.decodeStandard(Array(standard.utf8)) == bytes, "length \(length)")
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64.decodeURL(Array(url.utf8)) == bytes, "length \(length)")
            #expect(Base64.decodeURL(Array(url.utf8)[...]) == bytes)
            #expect(Base64.encodeURL(bytes) == url)
        }
    }

    @Test("refuses characters outside the alphabet, impossible lengths and non-zero unused bits")
    func refusals() {
        #expect(Base64.decodeURL(Array("QUJD".utf8)) == Array("ABC".utf8))
        for text in ["QUJ*", "QU JD", "Q", "QUJDR", "QR", "QUK", "QUJD+A", "QUJD/A", "QUJD=="] {
            #expect(Base64.decodeURL(Array(text.utf8)) == nil, "\(text)")
        }
        // "QR" and "QUK" carry non-zero bits past the last byte: a second spelling of "A" and "AB".
        #expect(Base64.decodeURL(Array("QQ".utf8)) == [0x41])
        #expect(Base64.decodeURL(Array("QUI".utf8)) == [0x41, 0x42])
        #expect(Base64.decodeStandard(Array("QUJD-A==".utf8)) == nil)
        #expect(Base64.decodeStandard(Array("QUI".utf8)) == nil)
        #expect(Base64.decodeStandard(Array("QQ==".utf8)) == [0x41])
    }
}
