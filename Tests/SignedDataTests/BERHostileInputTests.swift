import Foundation
import SignedData
import Testing

@Suite("BER reader on hostile input")
struct BERHostileInputTests {
    @Test("a receipt truncated at every byte is an error, never a crash")
    func truncatedEverywhere() throws {
        for name in ["receipt-production.b64", "receipt-xcode-with-purchases.b64"] {
            let der = try SignedDataFixtures.base64File(name)
            var refused = 0
            for length in 0..<der.count {
                do {
                    _ = try AppReceipt.parse(der: Array(der.prefix(length)))
                } catch {
                    #expect(error.kind == .malformedReceipt)
                    refused += 1
                }
            }
            // Cutting inside the signed content or the certificates always breaks a length; only cuts in the trailing
            // end-of-contents octets of a BER receipt could leave the attributes readable.
            #expect(refused >= der.count - 16, "\(name): \(refused) of \(der.count) prefixes refused")
        }
    }

    @Test("huge, overlong and truncated length fields are errors")
    func hugeLengths() {
        let cases: [[UInt8]] = [
            [0x30, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00],  // 4 GiB claimed, 1 byte present
            [0x30, 0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],  // 8-octet length field
            [0x30, 0xff],  // reserved length octet
            [0x30, 0x82, 0x01],  // length field cut short
            [0x30], [], [0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00],  // tag number over 28 bits
            [0x04, 0x80, 0x00, 0x00],  // primitive with indefinite length
        ]
        for bytes in cases {
            let error = #expect(throws: SignedDataError.self) { try AppReceipt.parse(der: bytes) }
            #expect(error?.kind == .malformedReceipt, "\(bytes)")
        }
    }

    @Test("10,000 levels of nesting, definite or indefinite, stop at the depth limit")
    func deepNesting() {
        let depth = 10_000
        let indefinite = [UInt8](repeating: 0, count: 0) + Array([[UInt8]](repeating: [0x30, 0x80], count: depth).joined())
            + [UInt8](repeating: 0, count: 2 * depth)
        var definite: [UInt8] = [0x05, 0x00]
        for _ in 0..<depth {
            let count = definite.count
            definite = [0x24, 0x84, UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff),
                        UInt8(count & 0xff)] + definite
        }
        let wrappedOctets = [0x31, 0x80] + definite + [0x00, 0x00]
        for bytes in [indefinite, [UInt8](definite), wrappedOctets] {
            let error = #expect(throws: SignedDataError.self) { try AppReceipt.parse(der: bytes) }
            #expect(error?.kind == .malformedReceipt)
        }
        let payload = #expect(throws: SignedDataError.self) { try AppReceipt.parse(payload: [UInt8](definite)) }
        #expect(payload?.message.contains("deeper than") == true)
    }

    @Test("indefinite lengths without end-of-contents are errors")
    func unterminatedIndefinite() {
        let cases: [[UInt8]] = [
            [0x30, 0x80], [0x30, 0x80, 0x02, 0x01, 0x01], [0x30, 0x80, 0x30, 0x80, 0x00, 0x00],
            [0x30, 0x80, 0x00], Array(repeating: 0x30, count: 1) + [0x80] + Array(repeating: 0x31, count: 1) + [0x80],
        ]
        for bytes in cases {
            let error = #expect(throws: SignedDataError.self) { try AppReceipt.parse(der: bytes) }
            #expect(error?.kind == .malformedReceipt, "\(bytes)")
        }
    }

    @Test("random bytes and random corruptions of a real receipt are errors or readable receipts, never crashes")
    func randomInput() throws {
        var generator = SeededGenerator(seed: 0xBE12)
        let der = try SignedDataFixtures.base64File("receipt-production.b64")
        var refused = 0
        for round in 0..<2_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if round % 4 == 0 { bytes.insert(contentsOf: [0x30, 0x80], at: 0) }
            } else {
                bytes = der
                for _ in 0..<4 { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            }
            if (try? AppReceipt.parse(der: bytes)) == nil { refused += 1 }
        }
        #expect(refused >= 1_000)  // every random blob at least
    }
}
