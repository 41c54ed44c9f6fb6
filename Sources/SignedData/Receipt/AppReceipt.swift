/// The contents of a legacy (StoreKit 1) app receipt: a PKCS#7 SignedData whose content is a SET OF
/// `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` (§4.2).
///
/// `parse` reads a receipt WITHOUT checking its signature (anyone can build one with any ids); use
/// `AppReceiptVerifier` for anything that decides about money.
public struct AppReceipt: Sendable, Equatable {
    /// Attribute 2 (UTF8String).
    public var bundleId: String?
    /// Attribute 3 (UTF8String).
    public var appVersion: String?
    /// Attribute 0 (UTF8String: `Production`, `ProductionSandbox`, `Xcode`, ...), when present.
    public var receiptType: String?
    /// Attribute 12 (IA5String, RFC 3339), seconds since 1970.
    public var creationDate: Int64?
    /// Every attribute 17, in receipt order.
    public var inAppPurchases: [InAppPurchase]

    /// The transaction ids of all in-app purchases, in receipt order.
    public var transactionIds: [String] { inAppPurchases.compactMap(\.transactionId) }

    /// Largest receipt accepted (Apple's own biggest receipts are a few MB).
    public static let maximumSize = 16 << 20

    private static let signedDataOID: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02]

    /// Reads the receipt attributes of a DER/BER receipt, unverified.
    ///
    /// Walks ContentInfo (signedData) → SignedData → encapContentInfo → [0] → OCTET STRING (constructed or nested
    /// once more, as Xcode writes them) → the attribute SET.
    ///
    /// - Throws: `SignedDataError.Kind.malformedReceipt` naming what is wrong; never traps on hostile input.
    public static func parse(der: [UInt8]) throws(SignedDataError) -> AppReceipt {
        guard der.count <= maximumSize else {
            throw SignedDataError(.malformedReceipt, "the receipt is \(der.count) bytes, over \(maximumSize)")
        }
        let reader = BERReader(bytes: der)
        let contentInfo = try reader.element(at: 0, limit: der.count, depth: 0)
        guard contentInfo.isUniversal(BERElement.sequence), der[contentInfo.end...].allSatisfy({ $0 == 0 }) else {
            throw reader.malformed("the receipt is not one ContentInfo SEQUENCE")
        }
        let info = try reader.children(of: contentInfo)
        guard info.count >= 2, info[0].isUniversal(BERElement.objectIdentifier),
            reader.contentBytes(info[0]) == signedDataOID, info[1].isContextSpecific(0)
        else { throw reader.malformed("the ContentInfo is not PKCS#7 signedData (1.2.840.113549.1.7.2)") }
        guard let signedData = try reader.children(of: info[1]).first, signedData.isUniversal(BERElement.sequence)
        else { throw reader.malformed("signedData has no SignedData SEQUENCE") }
        let signedFields = try reader.children(of: signedData)
        guard signedFields.count >= 3, signedFields[2].isUniversal(BERElement.sequence) else {
            throw reader.malformed("SignedData has no encapContentInfo")
        }
        let encapsulated = try reader.children(of: signedFields[2])
        guard encapsulated.count >= 2, encapsulated[1].isContextSpecific(0),
            let octets = try reader.children(of: encapsulated[1]).first
        else { throw reader.malformed("the receipt has no embedded content (encapContentInfo [0])") }
        return try parse(payload: try reader.octetString(octets))
    }

    /// Reads the attribute SET (the signed content), unverified. An extra OCTET STRING around it is unwrapped.
    public static func parse(payload: [UInt8]) throws(SignedDataError) -> AppReceipt {
        var reader = BERReader(bytes: payload)
        var top = try reader.element(at: 0, limit: payload.count, depth: 0)
        if top.isUniversal(BERElement.octetString) {
            let inner = try reader.octetString(top)
            reader = BERReader(bytes: inner)
            top = try reader.element(at: 0, limit: inner.count, depth: 0)
        }
        guard top.isUniversal(BERElement.set) else { throw reader.malformed("the receipt payload is not a SET") }
        var receipt = AppReceipt(inAppPurchases: [])
        for (type, value) in try attributes(of: top, reader: reader) {
            switch type {
            case 0: receipt.receiptType = try text(value, attribute: type, expecting: BERElement.utf8String)
            case 2: receipt.bundleId = try text(value, attribute: type, expecting: BERElement.utf8String)
            case 3: receipt.appVersion = try text(value, attribute: type, expecting: BERElement.utf8String)
            case 12: receipt.creationDate = try date(value, attribute: type)
            case 17: receipt.inAppPurchases.append(try inAppPurchase(value))
            default: continue
            }
        }
        return receipt
    }

    private static func inAppPurchase(_ value: [UInt8]) throws(SignedDataError) -> InAppPurchase {
        let reader = BERReader(bytes: value)
        let set = try reader.element(at: 0, limit: value.count, depth: 0)
        guard set.isUniversal(BERElement.set) else { throw reader.malformed("an in-app purchase (17) is not a SET") }
        var purchase = InAppPurchase()
        for (type, field) in try attributes(of: set, reader: reader) {
            switch type {
            case 1701:
                let element = try BERReader(bytes: field).element(at: 0, limit: field.count, depth: 0)
                purchase.quantity = try BERReader(bytes: field).integer(element)
            case 1702: purchase.productId = try text(field, attribute: type, expecting: BERElement.utf8String)
            case 1703: purchase.transactionId = try text(field, attribute: type, expecting: BERElement.utf8String)
            case 1704: purchase.purchaseDate = try date(field, attribute: type)
            case 1705:
                purchase.originalTransactionId = try text(field, attribute: type, expecting: BERElement.utf8String)
            default: continue
            }
        }
        return purchase
    }

    /// (type, value bytes) of each ReceiptAttribute in a SET.
    private static func attributes(
        of set: BERElement, reader: BERReader
    ) throws(SignedDataError) -> [(Int64, [UInt8])] {
        var result: [(Int64, [UInt8])] = []
        for attribute in try reader.children(of: set) {
            guard attribute.isUniversal(BERElement.sequence) else {
                throw reader.malformed("a receipt attribute is not a SEQUENCE")
            }
            let fields = try reader.children(of: attribute)
            guard fields.count == 3 else {
                throw reader.malformed("a receipt attribute has \(fields.count) fields instead of type, version, value")
            }
            result.append((try reader.integer(fields[0]), try reader.octetString(fields[2])))
        }
        return result
    }

    private static func text(_ value: [UInt8], attribute: Int64, expecting tag: UInt32) throws(SignedDataError) -> String {
        let reader = BERReader(bytes: value)
        let element = try reader.element(at: 0, limit: value.count, depth: 0)
        guard !element.isConstructed, element.tagClass == 0,
            element.tagNumber == tag || element.tagNumber == BERElement.ia5String
                || element.tagNumber == BERElement.printableString
        else { throw reader.malformed("receipt attribute \(attribute) is not a string") }
        return String(decoding: reader.contentBytes(element), as: UTF8.self)
    }

    private static func date(_ value: [UInt8], attribute: Int64) throws(SignedDataError) -> Int64? {
        let text = try text(value, attribute: attribute, expecting: BERElement.ia5String)
        if text.isEmpty { return nil }
        guard let seconds = RFC3339.epochSeconds(text) else {
            throw SignedDataError(.malformedReceipt, "receipt attribute \(attribute) is not an RFC 3339 date")
        }
        return seconds
    }
}
