import Testing

@testable import Crypto

/// The raw `r || s` ⇄ DER conversion on fixed vectors: a random signature has a short `r` or `s` (fewer than 32
/// bytes) about once in 128 signatures and a 33-byte INTEGER (leading zero) about half the time, so minted
/// signatures exercise the padding only by chance. These vectors exercise it every run.
@Suite("ECDSA signature encoding")
struct ECDSASignatureTests {
    /// A P-256 key generated once with `openssl ecparam -name prime256v1 -genkey` (SubjectPublicKeyInfo, DER).
    static let publicKeyInfo = bytes(
        "3059301306072a8648ce3d020106082a8648ce3d03010703420004f1943d075d5d2a2af6c49d9ec2d8b3a41ec41930c4c14f74d1c9d2"
            + "9202771b179a9d534decff794efc388bd2af1145dd5e7b4588c42d81c6cea27d631846f385")
    /// `openssl dgst -sha256 -sign` of "header.payload" with that key, picked for its 31-byte `r` and 33-byte `s`
    /// (68 bytes of DER where the common case is 70 to 72).
    static let derSignature = bytes(
        "3044021f1931f69fd4a7458aaf5fad774154d0caa8ffadb287289b8b9f01106948249e022100fc84856daa322dae00cb0365bb99383c"
            + "608acf12ec3aace4b64755009d5d78f6")
    /// The same signature as JOSE writes it: `r` left-padded to 32 bytes, `s` without its DER sign byte.
    static let rawSignature = bytes(
        "001931f69fd4a7458aaf5fad774154d0caa8ffadb287289b8b9f01106948249e"
            + "fc84856daa322dae00cb0365bb99383c608acf12ec3aace4b64755009d5d78f6")

    @Test("pads a short r to 32 bytes and drops s's sign byte, and encodes the raw form back to the same DER")
    func shortAndLongHalves() throws {
        #expect(try ECDSASignature.raw(fromDER: Self.derSignature, width: 32) == Self.rawSignature)
        #expect(try ECDSASignature.der(fromRaw: Self.rawSignature, width: 32) == Self.derSignature)
    }

    @Test("verifies the fixed short-r signature through the public ES256 API, and not over other bytes")
    func verifiesShortR() throws {
        let key = try ECPublicKey(subjectPublicKeyInfo: Self.publicKeyInfo)
        #expect(key.verifyES256(signature: Self.rawSignature, message: Array("header.payload".utf8)))
        #expect(!key.verifyES256(signature: Self.rawSignature, message: Array("header.payloaD".utf8)))
        // Without the padding byte the halves shift: 63 bytes are refused, never read as another signature.
        #expect(!key.verifyES256(signature: Array(Self.rawSignature.dropFirst()), message: Array("header.payload".utf8)))
    }

    @Test("refuses a DER half that does not fit 32 bytes and a raw signature of the wrong length")
    func refusals() {
        // r = 0x01 followed by 32 bytes: 33 significant bytes.
        let wide: [UInt8] = [0x30, 0x26, 0x02, 0x21, 0x01] + [UInt8](repeating: 0x11, count: 32) + [0x02, 0x01, 0x01]
        #expect(throws: CryptoError.self) { try ECDSASignature.raw(fromDER: wide, width: 32) }
        #expect(throws: CryptoError.self) { try ECDSASignature.raw(fromDER: [0x30, 0x00], width: 32) }
        #expect(throws: CryptoError.self) { try ECDSASignature.der(fromRaw: [UInt8](repeating: 1, count: 63), width: 32) }
    }

    private static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var high: UInt8?
        for character in hex.utf8 {
            let nibble = character <= 57 ? character - 48 : character - 87
            if let value = high {
                result.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return result
    }
}
