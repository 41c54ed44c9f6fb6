import Crypto
import Foundation
import SignedData
import Testing

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
        // Signed by Xcode's self-signed StoreKit certificate: verifies only when that certificate is trusted.
        let der = try SignedDataFixtures.base64File("receipt-xcode-with-purchases.b64")
        let storeKit = try PKCS7Signer.embeddedSigner(der)
        #expect(try AppReceiptVerifier(trustedRoots: [storeKit]).verify(der: der) == withPurchase)
        let error = #expect(throws: SignedDataError.self) { try AppReceiptVerifier(trustedRoots: try appleIncRoot()).verify(der: der) }
        #expect(error?.kind == .receiptSignatureInvalid)
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
    static func payload(bundleId: String, creationDate: String?, transactions: [(String, String)]) -> [UInt8] {
        var attributes = [attribute(2, tlv(0x0c, Array(bundleId.utf8)))]
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
