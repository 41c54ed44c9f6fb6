import Crypto
import Foundation
import Testing
import TestPKI

@Suite("EC keys")
struct ECKeyTests {
    @Test("signs ES256 as 64 raw bytes that verify with the public key and not over other bytes")
    func signAndVerify() throws {
        let key = try ECPrivateKey.generate(curve: .p256)
        let message = Array("header.payload".utf8)
        let signature = try key.signES256(message: message)
        #expect(signature.count == 64)
        let publicKey = try key.publicKey
        #expect(publicKey.verifyES256(signature: signature, message: message))
        #expect(!publicKey.verifyES256(signature: signature, message: Array("header.payloaD".utf8)))
        var flipped = signature
        flipped[10] ^= 0x40
        #expect(!publicKey.verifyES256(signature: flipped, message: message))
        #expect(!(try ECPrivateKey.generate().publicKey).verifyES256(signature: signature, message: message))
    }

    @Test("refuses signatures of the wrong length, all-zero signatures and keys on other curves")
    func refusals() throws {
        let key = try ECPrivateKey.generate(curve: .p256)
        let message = Array("m".utf8)
        let signature = try key.signES256(message: message)
        let publicKey = try key.publicKey
        #expect(!publicKey.verifyES256(signature: Array(signature.dropLast()), message: message))
        #expect(!publicKey.verifyES256(signature: signature + [0], message: message))
        #expect(!publicKey.verifyES256(signature: [], message: message))
        #expect(!publicKey.verifyES256(signature: [UInt8](repeating: 0, count: 64), message: message))
        #expect(!publicKey.verifyES256(signature: [UInt8](repeating: 0xff, count: 64), message: message))
        let p384 = try ECPrivateKey.generate(curve: .p384)
        #expect(p384.curve == .p384)
        let error = #expect(throws: CryptoError.self) { try p384.signES256(message: message) }
        #expect(error?.kind == .unsupportedKey)
        #expect(!(try p384.publicKey).verifyES256(signature: signature, message: message))
    }

    @Test("verifies the ES256 example of RFC 7515 appendix A.3")
    func rfc7515Example() throws {
        func base64URL(_ text: String) throws -> [UInt8] {
            var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while standard.count % 4 != 0 { standard += "=" }
            return try #require(Data(base64Encoded: standard).map(Array.init))
        }
        let x = try base64URL("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU")
        let y = try base64URL("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0")
        // SubjectPublicKeyInfo of an uncompressed P-256 point: fixed 26-byte prefix, 0x04, x, y.
        let prefix: [UInt8] = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
                               0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04]
        let key = try ECPublicKey(subjectPublicKeyInfo: prefix + x + y)
        let signingInput = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        let signature = try base64URL(
            "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q")
        #expect(key.verifyES256(signature: signature, message: signingInput.utf8))
        #expect(!key.verifyES256(signature: signature, message: (signingInput + "x").utf8))
    }

    @Test("exports PKCS#8 PEM that reads back as the same key, and refuses text that is not a key")
    func pemRoundTrip() throws {
        let key = try ECPrivateKey.generate(curve: .p256)
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let reread = try ECPrivateKey(pem: pem)
        #expect(try reread.publicKey.subjectPublicKeyInfo() == key.publicKey.subjectPublicKeyInfo())
        let signature = try reread.signES256(message: Array("x".utf8))
        #expect(try key.publicKey.verifyES256(signature: signature, message: Array("x".utf8)))
        let error = #expect(throws: CryptoError.self) { try ECPrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        #expect(error?.kind == .unreadableKey)
        #expect(error?.message.contains("AAAA") == false)
        #expect(throws: CryptoError.self) { try ECPublicKey(subjectPublicKeyInfo: [0x30, 0x00]) }
    }

    @Test("verifies concurrently with one shared key from many threads")
    func concurrentUse() async throws {
        let key = try ECPrivateKey.generate()
        let publicKey = try key.publicKey
        let message = Array("concurrent".utf8)
        let signature = try key.signES256(message: message)
        let results = await withTaskGroup(of: [Bool].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    (0..<50).map { index in
                        let good = publicKey.verifyES256(signature: signature, message: message)
                        let bad = publicKey.verifyES256(signature: signature, message: Array("concurrent\(worker)\(index)".utf8))
                        return good && !bad
                    }
                }
            }
            var all: [Bool] = []
            for await part in group { all += part }
            return all
        }
        #expect(results.count == 400)
        #expect(results.allSatisfy { $0 })
    }
}
