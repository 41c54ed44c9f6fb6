import Crypto
import Foundation
@_spi(Testing) import SignedData
import Testing
import TestPKI

@Suite("AppReceipt")
struct AppReceiptTests {
    /// 2024-02-23T17:27:16Z, the creation date inside receipt-production.
    let productionCreationDate: Int64 = 1_708_709_236

    func appleIncRoot() throws -> [Certificate] {
        try Certificate.load(path: try #require(AppleRootCertificates.defaultReceiptRootsPath))
    }

    @Test("verifies a real production receipt against Apple Inc. Root at its creation date and reads it")
    func realProductionReceipt() throws {
        let der = try SignedDataFixtures.base64File("receipt-production.b64")
        let receipt = try AppReceiptVerifier(trustedRoots: try appleIncRoot()).verify(der: der)
        #expect(receipt.bundleId == "org.getpure.pure-iphone")
        #expect(receipt.receiptType == "Production")
        #expect(receipt.creationDate == productionCreationDate)
        #expect(receipt.transactionIds == ["340001196262039", "340001237736590", "340001264290434", "340001311555626"])
        #expect(receipt.inAppPurchases.allSatisfy { $0.originalTransactionId == "340001196262039" })
        #expect(receipt.inAppPurchases.first?.productId == "org.getpure.pure.Week")
        #expect(receipt.inAppPurchases.first?.purchaseDate == 1_683_674_455)  // 2023-05-09T23:20:55Z
        #expect(receipt.inAppPurchases.first?.quantity == 1)
        #expect(try AppReceipt.parse(der: der) == receipt)
    }

    @Test("refuses the real receipt when the root is not Apple Inc. Root or its signer was not yet valid")
    func realReceiptRefusals() throws {
        let der = try SignedDataFixtures.base64File("receipt-production.b64")
        let g3 = try Certificate.load(path: try #require(AppleRootCertificates.defaultSignedDataRootsPath))
        let wrongRoot = #expect(throws: SignedDataError.self) { try AppReceiptVerifier(trustedRoots: g3).verify(der: der) }
        #expect(wrongRoot?.kind == .receiptSignatureInvalid)
        #expect(wrongRoot?.contractReason == "invalid_signature")
        var tampered = der
        let index = try #require(firstRange(of: Array("org.getpure.pure-iphone".utf8), in: tampered))
        tampered[index] = UInt8(ascii: "x")
        let forged = #expect(throws: SignedDataError.self) {
            try AppReceiptVerifier(trustedRoots: try appleIncRoot()).verify(der: tampered)
        }
        #expect(forged?.kind == .receiptSignatureInvalid)
    }

    @Test("Apple's real production receipt has exactly the signer policy's path: marked leaf, marked WWDR G5, root")
    func realProductionSignerPath() throws {
        let der = try SignedDataFixtures.base64File("receipt-production.b64")
        let verified = try PKCS7SignedData.verify(
            der: der, trustedRoots: try appleIncRoot(), atEpochSeconds: productionCreationDate)
        let path = verified.chain.certificates
        #expect(path.count == 3)
        #expect(path.map { $0.subject.split(separator: ",").first { $0.hasPrefix("CN=") }.map(String.init) } == [
            "CN=Mac App Store and iTunes Store Receipt Signing",
            "CN=Apple Worldwide Developer Relations Certification Authority", "CN=Apple Root CA",
        ])
        #expect(path[0].hasExtension(oid: CertificateAuthority.leafMarkerOID) && !path[0].isCertificateAuthority)
        #expect(path[1].hasExtension(oid: CertificateAuthority.intermediateMarkerOID) && path[1].subject.contains("OU=G5"))
        #expect(!path[1].hasExtension(oid: CertificateAuthority.leafMarkerOID))
        #expect(try appleIncRoot().contains(path[2]))
        try ReceiptSignerPolicy.appStore.check(verified.chain, receiptType: "Production")
        // The StoreKit testing policy never takes what Apple signed.
        let xcode = #expect(throws: SignedDataError.self) {
            try AppReceiptVerifier(trustedRoots: try appleIncRoot(), signerPolicy: .xcodeStoreKitTesting).verify(der: der)
        }
        #expect(xcode?.kind == .receiptSignatureInvalid)
        #expect(xcode?.message.contains("StoreKit testing policy") == true)
    }

    @Test("reads Xcode's BER receipts: indefinite lengths, constructed OCTET STRINGs, one or no purchases")
    func xcodeReceipts() throws {
        let withPurchase = try AppReceipt.parse(der: try SignedDataFixtures.base64File("receipt-xcode-with-purchases.b64"))
        #expect(withPurchase.receiptType == "Xcode")
        #expect(withPurchase.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(withPurchase.creationDate == 1_697_679_940)  // 2023-10-19T01:45:40Z
        #expect(withPurchase.inAppPurchases == [InAppPurchase(
            transactionId: "0", originalTransactionId: nil, productId: "pass.premium", purchaseDate: 1_697_679_936,
            quantity: 1)])
        let empty = try AppReceipt.parse(der: try SignedDataFixtures.base64File("xcode-app-receipt-empty.b64"))
        #expect(empty.bundleId == "com.example.naturelab.backyardbirds.example")
        #expect(empty.inAppPurchases.isEmpty)
    }

    @Test("Xcode receipts verify only under the explicit StoreKit testing policy, never under Apple's")
    func xcodeReceiptsAndTheSignerPolicy() throws {
        for name in ["receipt-xcode-with-purchases.b64", "xcode-app-receipt-empty.b64"] {
            // Signed directly by Xcode's self-signed "StoreKit" certificate (no intermediate, no Apple markers).
            let der = try SignedDataFixtures.base64File(name)
            let storeKit = try PKCS7Signer.embeddedSigner(der)
            #expect(try Certificate.load(path: SignedDataFixtures.path("storekit-testing-certificate.cer")) == [storeKit])
            #expect(storeKit.isSelfIssued && storeKit.subject.contains("CN=StoreKit"), "\(name)")
            #expect(!storeKit.hasExtension(oid: CertificateAuthority.leafMarkerOID), "\(name)")
            #expect(try AppReceiptVerifier.storeKitTesting(certificate: storeKit).verify(der: der)
                == AppReceipt.parse(der: der), "\(name)")
            // Under Apple's policy: refused with Apple's root, and refused even when the StoreKit certificate is
            // configured as a root (what an APPLE_RECEIPT_ROOT_CERTIFICATES pointing at it would do).
            for roots in [try appleIncRoot(), [storeKit]] {
                let error = #expect(throws: SignedDataError.self) {
                    try AppReceiptVerifier(trustedRoots: roots).verify(der: der)
                }
                #expect(error?.kind == .receiptSignatureInvalid, "\(name)")
                #expect(error?.contractReason == "invalid_signature", "\(name)")
            }
            let configured = #expect(throws: SignedDataError.self) {
                try AppReceiptVerifier(trustedRoots: [storeKit]).verify(der: der)
            }
            #expect(configured?.message.contains("as Xcode's StoreKit testing receipts are") == true, "\(name)")
        }
    }

    @Test("the StoreKit testing policy takes only a receipt typed Xcode signed directly by the trusted certificate")
    func storeKitTestingPolicyBounds() throws {
        let creation: Int64 = 1_700_000_000
        let selfSigned = try CertificateAuthority.makeRoot(
            commonName: "StoreKit", curve: .p256, notBefore: creation - 86_400, notAfter: creation + 86_400)
        let verifier = AppReceiptVerifier.storeKitTesting(certificate: selfSigned.authority.certificate)
        func receipt(type: String?) throws -> [UInt8] {
            try PKCS7SignedData.sign(
                content: ReceiptBuilder.payload(
                    bundleId: "com.example.app", creationDate: "2023-11-14T22:13:20Z", transactions: [("1", "p")],
                    receiptType: type),
                signer: selfSigned.authority)
        }
        #expect(try verifier.verify(der: try receipt(type: "Xcode")).receiptType == "Xcode")
        for type in ["Production", "ProductionSandbox", nil] {
            let error = #expect(throws: SignedDataError.self) { try verifier.verify(der: try receipt(type: type)) }
            #expect(error?.kind == .receiptSignatureInvalid)
            #expect(error?.message.contains("must have the receipt type Xcode") == true)
            #expect(error?.message.contains("Production") == false)  // never quotes the receipt
        }
        // A receipt of the App Store's shape is not a StoreKit testing receipt, even typed Xcode.
        let pki = try TestSigningPKI.mint(referenceTime: creation)
        let appStoreShaped = try pki.signReceipt(content: ReceiptBuilder.payload(
            bundleId: "com.example.app", creationDate: "2023-11-14T22:13:20Z", transactions: [], receiptType: "Xcode"))
        let error = #expect(throws: SignedDataError.self) {
            try AppReceiptVerifier(trustedRoots: [pki.rootCertificate], signerPolicy: .xcodeStoreKitTesting)
                .verify(der: appStoreShaped)
        }
        #expect(error?.message.contains("path has 3 certificates") == true)
        #expect(try AppReceiptVerifier(trustedRoots: [pki.rootCertificate]).verify(der: appStoreShaped).receiptType
            == "Xcode")
    }

    @Test("accepts Apple's signer shape and refuses every other signer under the same root as invalid_signature",
          arguments: [
            (TestSigningPKI.ReceiptSignerDefect.leafMissingMarker, "lacks Apple's receipt-signing marker extension 1.2.840.113635.100.6.11.1"),
            (.intermediateMissingMarker, "lacks Apple's WWDR marker extension 1.2.840.113635.100.6.2.1"),
            (.extraCertificateInPath, "path has 4 certificates: 1 extra between the signer and the root"),
            (.signedByIntermediate, "is issued directly by the root: the path has 2 certificates"),
            (.signerIsCertificateAuthority, "is a CA certificate"),
            (.untrustedRoot, "certificate chain rejected"),
          ])
    func forgedReceiptSigners(defect: TestSigningPKI.ReceiptSignerDefect, rule: String) throws {
        let creation: Int64 = 1_700_000_000
        let pki = try TestSigningPKI.mint(referenceTime: creation)
        let payload = ReceiptBuilder.payload(bundleId: "com.example.forged", creationDate: "2023-11-14T22:13:20Z",
                                             transactions: [("1000000000000901", "com.example.coins")],
                                             receiptType: "Production")
        let verifier = AppReceiptVerifier(trustedRoots: [pki.rootCertificate])
        #expect(try verifier.verify(der: try pki.signReceipt(content: payload)).transactionIds == ["1000000000000901"])
        let forged = try pki.signReceipt(content: payload, defect: defect)
        // The forgery is a genuine signature by a certificate under the trusted root (except for untrustedRoot):
        // only the signer policy tells it apart.
        if defect != .untrustedRoot {
            let genuine = try PKCS7SignedData.verify(der: forged, trustedRoots: [pki.rootCertificate],
                                                     atEpochSeconds: creation)
            #expect(genuine.chain.certificates.last == pki.rootCertificate)
        }
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(der: forged) }
        #expect(error?.kind == .receiptSignatureInvalid)
        #expect(error?.contractReason == "invalid_signature")
        #expect(error?.message.contains(rule) == true, "\(error?.message ?? "no error")")
        for content in ["com.example.forged", "1000000000000901", "com.example.coins"] {
            #expect(error?.message.contains(content) == false, "the message quotes the receipt: \(content)")
        }
    }

    @Test("validates the signer path at the receipt's creation date, not today")
    func signerPathAtCreationDate() throws {
        let creation: Int64 = 1_700_000_000
        let pki = try TestSigningPKI.mint(referenceTime: creation)
        let verifier = AppReceiptVerifier(trustedRoots: [pki.rootCertificate])
        // The leaf is valid for ±30 days around the reference time: a receipt created inside is accepted even
        // though the leaf has long expired now; one created 31 days later is refused.
        let inside = ReceiptBuilder.payload(bundleId: "com.example.app", creationDate: "2023-11-14T22:13:20Z",
                                            transactions: [])
        #expect(try verifier.verify(der: try pki.signReceipt(content: inside)).creationDate == creation)
        let outside = ReceiptBuilder.payload(bundleId: "com.example.app", creationDate: "2023-12-15T22:13:20Z",
                                             transactions: [])
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(der: try pki.signReceipt(content: outside)) }
        #expect(error?.kind == .receiptSignatureInvalid)
        #expect(error?.message.contains("expired") == true)
    }

    @Test("verifies a minted receipt, and refuses tampered content, a wrong root and a signer expired at creation")
    func mintedReceipts() throws {
        let creation: Int64 = 1_700_000_000
        let pki = try TestSigningPKI.mint(referenceTime: creation)
        let payload = ReceiptBuilder.payload(bundleId: "com.example.app", creationDate: "2023-11-14T22:13:20Z",
                                             transactions: [("1000000000000001", "com.example.coins"),
                                                            ("1000000000000002", "com.example.gems")])
        let signed = try PKCS7SignedData.sign(content: payload, signer: pki.leaf,
                                              intermediates: [pki.intermediate.authority.certificate])
        let verifier = AppReceiptVerifier(trustedRoots: [pki.rootCertificate])
        let receipt = try verifier.verify(der: signed)
        #expect(receipt.creationDate == creation)
        #expect(receipt.transactionIds == ["1000000000000001", "1000000000000002"])
        #expect(try verifier.verify(base64: Data(signed).base64EncodedString()) == receipt)

        var tampered = signed
        let index = try #require(firstRange(of: Array("1000000000000002".utf8), in: tampered))
        tampered[index + 15] = UInt8(ascii: "9")
        #expect(throws: SignedDataError.self) { try verifier.verify(der: tampered) }
        let wrongRoot = AppReceiptVerifier(trustedRoots: [try TestSigningPKI.mint(referenceTime: creation).rootCertificate])
        #expect(throws: SignedDataError.self) { try wrongRoot.verify(der: signed) }

        let late = ReceiptBuilder.payload(bundleId: "com.example.app", creationDate: "2024-06-01T00:00:00Z",
                                          transactions: [("1", "p")])
        let expired = try PKCS7SignedData.sign(content: late, signer: pki.leaf,
                                               intermediates: [pki.intermediate.authority.certificate])
        let error = #expect(throws: SignedDataError.self) { try verifier.verify(der: expired) }
        #expect(error?.kind == .receiptSignatureInvalid)
        #expect(error?.message.contains("expired") == true)

        let undated = ReceiptBuilder.payload(bundleId: "com.example.app", creationDate: nil, transactions: [])
        let noDate = #expect(throws: SignedDataError.self) {
            try verifier.verify(der: try PKCS7SignedData.sign(content: undated, signer: pki.leaf))
        }
        #expect(noDate?.kind == .malformedReceipt)
    }

    private func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}

/// Builds receipt payloads (the attribute SET) in DER, as Apple lays them out.
enum ReceiptBuilder {
    static func payload(bundleId: String, creationDate: String?, transactions: [(String, String)],
                        receiptType: String? = nil) -> [UInt8] {
        var attributes = [attribute(2, tlv(0x0c, Array(bundleId.utf8)))]
        if let receiptType { attributes.insert(attribute(0, tlv(0x0c, Array(receiptType.utf8))), at: 0) }
        if let creationDate { attributes.append(attribute(12, tlv(0x16, Array(creationDate.utf8)))) }
        for (id, product) in transactions {
            let inApp = tlv(0x31, attribute(1703, tlv(0x0c, Array(id.utf8))) + attribute(1705, tlv(0x0c, Array(id.utf8)))
                            + attribute(1702, tlv(0x0c, Array(product.utf8)))
                            + attribute(1704, tlv(0x16, Array("2023-11-14T22:00:00Z".utf8)))
                            + attribute(1701, tlv(0x02, [1])))
            attributes.append(attribute(17, inApp))
        }
        return tlv(0x31, attributes.flatMap { $0 })
    }

    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        let typeBytes: [UInt8] = type < 128 ? [UInt8(type)] : [UInt8(type >> 8), UInt8(type & 0xff)]
        return tlv(0x30, tlv(0x02, typeBytes) + tlv(0x02, [1]) + tlv(0x04, value))
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        let length: [UInt8] = count < 128 ? [UInt8(count)]
            : count < 256 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        return [tag] + length + content
    }
}

/// The signer certificate embedded in a receipt (test helper over OpenSSL's reader, via a lenient verification).
enum PKCS7Signer {
    static func embeddedSigner(_ der: [UInt8]) throws -> Certificate {
        // The StoreKit test certificate is the last certificate in the SignedData's [0] certificates: find it by
        // trying each DER certificate-looking SEQUENCE that parses.
        for start in der.indices where der[start] == 0x30 && start + 4 < der.count && der[start + 1] == 0x82 {
            let length = Int(der[start + 2]) << 8 | Int(der[start + 3])
            guard start + 4 + length <= der.count, length > 800 else { continue }
            if let certificate = try? Certificate(der: Array(der[start..<(start + 4 + length)])),
                certificate.subject.contains("StoreKit")
            {
                return certificate
            }
        }
        throw SignedDataError(.malformedReceipt, "no StoreKit certificate in the fixture")
    }
}
