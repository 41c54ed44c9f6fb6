import Crypto
import Foundation
@_spi(Testing) import SignedData
import Testing
import TestPKI

@Suite("AppleSignedDataVerifier")
struct AppleSignedDataVerifierTests {
    @Test("accepts a JWS signed by a minted App Store-shaped chain and returns its payload and signedDate")
    func acceptsValid() throws {
        let pki = try TestSigningPKI.mint()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs + 789)
        let verified = try pki.verifier().verify(try pki.sign(payload: payload))
        #expect(verified.payload == payload)
        #expect(verified.signedDateMs == pki.signedDateMs + 789)
        #expect(verified.leafFingerprint == pki.leaf.certificate.sha256Fingerprint)
        let transaction = try verified.decode(JWSTransactionPayload.self)
        #expect(transaction.transactionId == "2000000123456789")
        #expect(transaction.environment == .sandbox)
    }

    @Test("refuses every broken variant with the error that names what is wrong", arguments: [
        (TestSigningPKI.Defect.untrustedRoot, SignedDataError.Kind.untrustedChain),
        (.leafMissingMarker, .leafMarkerMissing),
        (.intermediateMissingMarker, .intermediateMarkerMissing),
        (.chainOfTwo, .invalidChainLength),
        (.leafIsCertificateAuthority, .leafIsCertificateAuthority),
        (.leafExpired, .certificateNotValidAtSignedDate),
        (.leafNotYetValid, .certificateNotValidAtSignedDate),
        (.tamperedPayload, .invalidSignature),
        (.wrongSignature, .invalidSignature),
        (.algNone, .unsupportedAlgorithm),
        (.hs256, .unsupportedAlgorithm),
    ])
    func refusesDefects(defect: TestSigningPKI.Defect, expected: SignedDataError.Kind) throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs)
        // A good JWS first, so the defective one also meets a warm cache.
        _ = try verifier.verify(try pki.sign(payload: payload))
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(try pki.sign(payload: payload, defect: defect)) }
        #expect(error?.kind == expected)
        #expect(error?.contractReason == "invalid_signature")
        #expect(error?.message.contains("2000000123456789") == false)  // never quotes the payload
    }

    @Test("refuses a payload without a readable signedDate, and one that is not a JSON object, saying so")
    func refusesPayloads() throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let cases: [(String, SignedDataError.Kind)] = [
            ("{\"transactionId\":\"1\"}", .missingSignedDate),
            ("{\"signedDate\":\"yesterday\"}", .missingSignedDate),
            ("{\"signedDate\":null}", .missingSignedDate),
            ("[1,2,3]", .payloadNotJSON),
            ("not json", .payloadNotJSON),
        ]
        for (payload, kind) in cases {
            let error = #expect(throws: SignedDataError.self) { try verifier.verify(try pki.sign(payload: Array(payload.utf8))) }
            #expect(error?.kind == kind, "\(payload)")
        }
        let missing = #expect(throws: SignedDataError.self) {
            try verifier.verify(try pki.sign(payload: Array("{}".utf8)))
        }
        #expect(missing?.message.contains("signedDate") == true)
    }

    @Test("refuses x5c entries that are not standard base64 DER, and chains of 1 or 4")
    func refusesCertificates() throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs)
        let signer = pki.signer
        let leafBase64 = Data(pki.leaf.der).base64EncodedString()
        let intermediateBase64 = Data(pki.intermediate.authority.der).base64EncodedString()
        // The leaf respelled with the JWS (base64url) alphabet's '-' or '_' at a fixed place: the minted bytes need
        // not contain a '+' or '/' to replace, so the character is put there, and the message proves the strict
        // base64 check (not the DER reader) refused it.
        func respelled(_ replacement: Character) -> String {
            var characters = Array(leafBase64)
            characters[characters.count / 2] = replacement
            return String(characters)
        }
        func headerJSON(_ x5c: [String]) -> String {
            "{\"alg\":\"ES256\",\"x5c\":[" + x5c.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
        }
        let notBase64 = "is not standard base64"
        let cases: [(String, SignedDataError.Kind, String)] = [
            (headerJSON(["@@@@", intermediateBase64, "AAAA"]), .unreadableCertificate, notBase64),
            (headerJSON(["AAAA", intermediateBase64, "AAAA"]), .unreadableCertificate, "is not a DER certificate"),
            (headerJSON([respelled("-"), intermediateBase64, "AAAA"]), .unreadableCertificate, notBase64),
            (headerJSON([respelled("_"), intermediateBase64, "AAAA"]), .unreadableCertificate, notBase64),
            (headerJSON([leafBase64, respelled("-"), "AAAA"]), .unreadableCertificate, "x5c[1] " + notBase64),
            (headerJSON([leafBase64]), .invalidChainLength, "x5c has 1 certificates"),
            (headerJSON([leafBase64, intermediateBase64, "AAAA", "AAAA"]), .invalidChainLength, "x5c has 4 certificates"),
            ("{\"alg\":\"ES256\"}", .invalidChainLength, "x5c has no certificates"),
        ]
        for (header, kind, fragment) in cases {
            let error = #expect(throws: SignedDataError.self) {
                try verifier.verify(try signer.sign(payload: payload, headerJSON: header))
            }
            #expect(error?.kind == kind, "\(header.prefix(60))")
            #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "no error")")
        }
    }

    @Test("a cached chain is never used for a signedDate at which the chain was not valid")
    func cacheEnforcesValidity() throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let leaf = pki.leaf.certificate
        _ = try verifier.verify(try pki.sign(payload: SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs)))
        #expect(verifier.cachedChainCount == 1)
        for outside in [leaf.notAfter * 1000, leaf.notAfter * 1000 + 86_400_000, leaf.notBefore * 1000 - 1] {
            let jws = try pki.sign(payload: SignedDataFixtures.transactionPayload(signedDateMs: outside))
            let error = #expect(throws: SignedDataError.self) { try verifier.verify(jws) }
            #expect(error?.kind == .certificateNotValidAtSignedDate, "signedDate \(outside)")
        }
        for inside in [leaf.notBefore * 1000, leaf.notAfter * 1000 - 1] {
            _ = try verifier.verify(try pki.sign(payload: SignedDataFixtures.transactionPayload(signedDateMs: inside)))
        }
        #expect(verifier.cachedChainCount == 1)
    }

    @Test("the cache keeps at most its capacity of chains and a zero capacity disables it")
    func cacheCapacity() throws {
        let pki = try TestSigningPKI.mint()
        let verifier = AppleSignedDataVerifier(trustedRoots: [pki.rootCertificate], cacheCapacity: 2)
        let uncached = AppleSignedDataVerifier(trustedRoots: [pki.rootCertificate], cacheCapacity: 0)
        for _ in 0..<4 {
            let leaf = try pki.intermediate.issueLeaf(notBefore: pki.referenceTime - 10, notAfter: pki.referenceTime + 10)
            let signer = JWSSigner(privateKey: leaf.privateKey, chain: [leaf.certificate] + pki.signer.chain.dropFirst())
            let jws = try signer.sign(payload: SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs))
            _ = try verifier.verify(jws)
            _ = try uncached.verify(jws)
        }
        #expect(verifier.cachedChainCount == 2)
        #expect(uncached.cachedChainCount == 0)
    }

    @Test("gives the same answers to many concurrent verifications of good and bad JWS")
    func concurrent() async throws {
        let pki = try TestSigningPKI.mint()
        let verifier = pki.verifier()
        let payload = SignedDataFixtures.transactionPayload(signedDateMs: pki.signedDateMs)
        let good = try pki.sign(payload: payload)
        let expired = try pki.sign(payload: payload, defect: .leafExpired)
        let forged = try pki.sign(payload: payload, defect: .wrongSignature)
        let outcomes = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<40).map { (index: Int) -> String in
                        let jws: String = [good, expired, forged][index % 3]
                        do throws(SignedDataError) {
                            return "ok:\(try verifier.verify(jws).payload.count)"
                        } catch {
                            return "\(error.kind)"
                        }
                    }
                }
            }
            var all: [String] = []
            for await part in group { all += part }
            return all
        }
        #expect(outcomes.count == 320)
        #expect(Set(outcomes) == ["ok:\(payload.count)", "certificateNotValidAtSignedDate", "invalidSignature"])
        #expect(outcomes.filter { $0.hasPrefix("ok") }.count == 8 * 14)
    }

    @Test("verifies Apple's own signed test vectors against their test CA and decodes them")
    func appleTestVectors() throws {
        let root = try Certificate.load(path: SignedDataFixtures.path("apple-mock-signed-data/testCA.der"))
        let verifier = AppleSignedDataVerifier(trustedRoots: root)
        let transaction = try verifier.verify(try SignedDataFixtures.text("apple-mock-signed-data/transactionInfo"))
        #expect(transaction.signedDateMs == 1_672_956_154_000)
        #expect(try transaction.decode(JWSTransactionPayload.self).bundleId == "com.example")
        let notification = try verifier.verify(try SignedDataFixtures.text("apple-mock-signed-data/testNotification"))
        let decoded = try notification.decode(NotificationPayload.self)
        #expect(decoded.notificationType == .test)
        #expect(decoded.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(decoded.data?.appAppleId == 1234)
        #expect(decoded.data?.environment == .sandbox)
        let renewal = try verifier.verify(try SignedDataFixtures.text("apple-mock-signed-data/renewalInfo"))
        #expect(try renewal.decode(JWSRenewalInfoPayload.self).environment == .sandbox)
        // The same vectors are refused when we trust only Apple's real root.
        let real = try AppleSignedDataVerifier(rootCertificatePaths: [try #require(AppleRootCertificates.defaultSignedDataRootsPath)])
        let error = #expect(throws: SignedDataError.self) {
            try real.verify(try SignedDataFixtures.text("apple-mock-signed-data/transactionInfo"))
        }
        #expect(error?.kind == .untrustedChain)
        // Apple's Xcode-signed transaction carries a one-certificate x5c: never accepted by this verifier.
        let xcode = #expect(throws: SignedDataError.self) {
            try verifier.verify(try SignedDataFixtures.text("apple-mock-signed-data/xcode-signed-transaction"))
        }
        #expect(xcode?.kind == .invalidChainLength)
    }

    @Test("checks Apple's real 2021 leaf with the chain policy: valid in April 2023 at G3, expired later")
    func realChainPolicy() throws {
        let verifier = try AppleSignedDataVerifier(
            rootCertificatePaths: [try #require(AppleRootCertificates.defaultSignedDataRootsPath)])
        let crypto = SignedDataFixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CryptoTests/Fixtures")
        let leaf = try #require(try Certificate.load(path: crypto.appendingPathComponent("apple-receipt-signing-leaf-2021.cer").path).first)
        let intermediate = try #require(try Certificate.load(path: crypto.appendingPathComponent("AppleWWDRCAG6.cer").path).first)
        #expect(try verifier.verifyChain(leaf: leaf, intermediate: intermediate, atEpochSeconds: 1_681_312_846).curve == .p256)
        let error = #expect(throws: SignedDataError.self) {
            try verifier.verifyChain(leaf: leaf, intermediate: intermediate, atEpochSeconds: 1_735_689_600)
        }
        #expect(error?.kind == .certificateNotValidAtSignedDate)
        let swapped = #expect(throws: SignedDataError.self) {
            try verifier.verifyChain(leaf: intermediate, intermediate: leaf, atEpochSeconds: 1_681_312_846)
        }
        #expect(swapped?.kind == .untrustedChain)
    }
}
