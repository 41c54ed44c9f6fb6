import Crypto
import Foundation
import SignedData
import TestPKI

/// Legacy app receipts minted for tests: the attribute SET in DER, as Apple lays it out, PKCS#7-signed by a leaf of
/// a minted CA (`TestSigningPKI`), with Apple's intermediate embedded.
enum MintedReceipt {
    /// Base64 of a signed receipt of `bundleId` holding `transactionIds`, typed `receiptType` (attribute 0).
    static func base64(
        pki: TestSigningPKI, bundleId: String, receiptType: String? = "Production", transactionIds: [String],
        product: String = "gems_100"
    ) throws -> String {
        let payload = payload(
            bundleId: bundleId, receiptType: receiptType, creationDate: rfc3339(pki.referenceTime),
            transactions: transactionIds.map { ($0, product) })
        let signed = try PKCS7SignedData.sign(
            content: payload, signer: pki.leaf, intermediates: [pki.intermediate.authority.certificate])
        return Data(signed).base64EncodedString()
    }

    static func payload(
        bundleId: String, receiptType: String?, creationDate: String, transactions: [(String, String)]
    ) -> [UInt8] {
        var attributes: [[UInt8]] = []
        if let receiptType { attributes.append(attribute(0, tlv(0x0c, Array(receiptType.utf8)))) }
        attributes.append(attribute(2, tlv(0x0c, Array(bundleId.utf8))))
        attributes.append(attribute(12, tlv(0x16, Array(creationDate.utf8))))
        for (id, product) in transactions {
            let inApp = tlv(
                0x31,
                attribute(1703, tlv(0x0c, Array(id.utf8))) + attribute(1705, tlv(0x0c, Array(id.utf8)))
                    + attribute(1702, tlv(0x0c, Array(product.utf8)))
                    + attribute(1704, tlv(0x16, Array(creationDate.utf8))) + attribute(1701, tlv(0x02, [1])))
            attributes.append(attribute(17, inApp))
        }
        return tlv(0x31, attributes.flatMap { $0 })
    }

    static func rfc3339(_ epochSeconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(epochSeconds)))
    }

    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        let typeBytes: [UInt8] = type < 128 ? [UInt8(type)] : [UInt8(type >> 8), UInt8(type & 0xff)]
        return tlv(0x30, tlv(0x02, typeBytes) + tlv(0x02, [1]) + tlv(0x04, value))
    }

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        let length: [UInt8] =
            count < 128 ? [UInt8(count)] : count < 256 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xff)]
        return [tag] + length + content
    }

    /// A text fixture of Tests/SignedDataTests/Fixtures (see its README for sources and licenses).
    static func signedDataFixture(_ name: String) throws -> String {
        try String(contentsOfFile: signedDataFixturePath(name), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The path of a fixture of Tests/SignedDataTests/Fixtures.
    static func signedDataFixturePath(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SignedDataTests/Fixtures/" + name).path
    }
}
