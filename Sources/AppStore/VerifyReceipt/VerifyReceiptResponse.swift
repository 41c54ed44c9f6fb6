import Foundation
import ServiceSupport

/// A verifyReceipt answer, decoded tolerantly (see `apple-verification.md`): every field but `status` may be absent,
/// unknown fields are ignored, numbers may be strings, `is_retryable` and `is-retryable` are both read, the flat
/// iOS 6 receipt shape is understood, and `latest_receipt_info` may be an array or a single object.
public struct VerifyReceiptResponse: Sendable, Equatable {
    public var status: Int
    /// `Production` or `Sandbox` as Apple wrote it (nil when absent, typical of error bodies).
    public var environment: String?
    /// Apple's retry hint, for statuses 21100-21199.
    public var isRetryable: Bool?
    public var bundleId: String?
    /// The receipt's purchases (`receipt.in_app`, or the flat iOS 6 receipt as one transaction).
    public var inApp: [AppleTransaction]
    /// The latest renewal of each subscription (`latest_receipt_info`, or iOS 6's `latest_expired_receipt_info`).
    public var latestReceiptInfo: [AppleTransaction]
    /// True when `receipt` was the flat iOS 6 transaction-receipt shape.
    public var isLegacyReceipt: Bool
    /// Transaction entries skipped because they cannot be used (no `transaction_id`, `product_id` or
    /// `purchase_date_ms`, an empty id, not an object), in `in_app` and `latest_receipt_info` together.
    public var unusableTransactionCount: Int
    /// The `transaction_id`s of the skipped entries that had one.
    public var unusableTransactionIds: [String]

    public init(
        status: Int, environment: String? = nil, isRetryable: Bool? = nil, bundleId: String? = nil,
        inApp: [AppleTransaction] = [], latestReceiptInfo: [AppleTransaction] = [], isLegacyReceipt: Bool = false,
        unusableTransactionCount: Int = 0, unusableTransactionIds: [String] = []
    ) {
        self.status = status
        self.environment = environment
        self.isRetryable = isRetryable
        self.bundleId = bundleId
        self.inApp = inApp
        self.latestReceiptInfo = latestReceiptInfo
        self.isLegacyReceipt = isLegacyReceipt
        self.unusableTransactionCount = unusableTransactionCount
        self.unusableTransactionIds = unusableTransactionIds
    }

    /// Decodes a response body. Throws `VerifyReceiptDecodingError` for an empty body, non-JSON, a body without a
    /// usable `status`, or a valid-status body whose receipt or transaction lists are not of a usable shape. Single
    /// transactions that cannot be used are skipped and counted (`unusableTransactionCount`).
    ///
    /// Read with the lean parser (`JSONParser`, about a fifth of Foundation's work for a typical answer) whenever
    /// that gives what Foundation's reading gives; everything else (a body the strict parser refuses: duplicate
    /// members, UTF-16; a number it cannot promise to read the same; every error) is decided by
    /// `decodeWithFoundation`, the reference. `VerifyReceiptLeanReadingTests` and the fuzz target hold the two equal.
    public static func decode(_ body: [UInt8]) throws(VerifyReceiptDecodingError) -> VerifyReceiptResponse {
        if case .object(let members)? = try? JSONParser.parse(body),
            let response = try? Self(lean: members)
        {
            return response
        }
        return try decodeWithFoundation(body)
    }

    /// Foundation's reading of a body (`JSONDecoder` through `Decodable`): the reference `decode` falls back to.
    public static func decodeWithFoundation(_ body: [UInt8]) throws(VerifyReceiptDecodingError)
        -> VerifyReceiptResponse
    {
        guard body.contains(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }) else {
            throw .empty
        }
        guard body.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }) == UInt8(ascii: "{")
        else {
            throw .notJSON
        }
        do {
            // The bytes are only read during the call: no need to copy them into a Data of their own.
            return try body.withUnsafeBytes { bytes in
                let data = Data(
                    bytesNoCopy: UnsafeMutableRawPointer(mutating: bytes.baseAddress!), count: bytes.count,
                    deallocator: .none)
                return try JSONDecoder().decode(VerifyReceiptResponse.self, from: data)
            }
        } catch let error as VerifyReceiptDecodingError {
            throw error
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            throw .notJSON
        } catch {
            throw .unusable(Self.describe(error))
        }
    }

    private static func describe(_ error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return String(describing: error) }
        switch decodingError {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context),
            .valueNotFound(_, let context):
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        @unknown default:
            return String(describing: decodingError)
        }
    }
}

/// Why a verifyReceipt body could not be used.
public enum VerifyReceiptDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case notJSON
    case missingStatus
    case unusable(String)

    public var description: String {
        switch self {
        case .empty: "empty body"
        case .notJSON: "body is not a JSON object"
        case .missingStatus: "JSON body without a numeric status"
        case .unusable(let detail): "JSON body not usable: \(detail)"
        }
    }
}

extension VerifyReceiptResponse: Decodable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: AnyCodingKey.self)
        // `status` and the retry flag are JSON numbers and booleans on the wire: try those first (a failed attempt
        // costs a thrown error), then the lenient forms.
        let statusKey = AnyCodingKey("status")
        guard let status = (try? c.decodeIfPresent(Int64.self, forKey: statusKey)) ?? c.lenientInt64(statusKey) else {
            throw VerifyReceiptDecodingError.missingStatus
        }
        let environment = c.lenientString(AnyCodingKey("environment"))
        var isRetryable: Bool?
        for name in ["is_retryable", "is-retryable"] where isRetryable == nil {
            let key = AnyCodingKey(name)
            isRetryable = (try? c.decodeIfPresent(Bool.self, forKey: key)) ?? c.lenientBool(key)
        }

        // Error bodies carry at most status, environment and is_retryable; only valid ones need a usable receipt.
        let mustDecodeReceipt = status == 0 || status == 21006
        var bundleId: String?
        var inApp = TransactionEntries()
        var isLegacy = false
        let receiptKey = AnyCodingKey("receipt")
        if c.contains(receiptKey), (try? c.decodeNil(forKey: receiptKey)) == false {
            do {
                let receipt = try c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: receiptKey)
                bundleId =
                    receipt.lenientString(AnyCodingKey("bundle_id")) ?? receipt.lenientString(AnyCodingKey("bid"))
                if receipt.contains(AnyCodingKey("in_app")) {
                    inApp = TransactionEntries(
                        try receipt.decodeIfPresent([TransactionEntry].self, forKey: AnyCodingKey("in_app")) ?? [])
                } else if receipt.contains(AnyCodingKey("transaction_id")) {
                    // iOS 6 transaction receipt: the receipt object is itself the one transaction.
                    inApp = TransactionEntries([try c.decode(TransactionEntry.self, forKey: receiptKey)])
                    isLegacy = true
                }
            } catch  where !mustDecodeReceipt {
                bundleId = nil
                inApp = TransactionEntries()
            }
        }
        var latest = TransactionEntries()
        do {
            latest = TransactionEntries(try Self.decodeOneOrMany(c, "latest_receipt_info"))
            if latest.usable.isEmpty, latest.unusableCount == 0 {
                latest = TransactionEntries(try Self.decodeOneOrMany(c, "latest_expired_receipt_info"))
            }
        } catch  where !mustDecodeReceipt {
            latest = TransactionEntries()
        }
        self.init(
            status: status, environment: environment, isRetryable: isRetryable, bundleId: bundleId, inApp: inApp,
            latest: latest, isLegacy: isLegacy)
    }

    /// The answer from what either reading found (`init(from:)`, `init(lean:)`): the usable transactions of each
    /// list, and the skipped ones of both counted together.
    init(
        status: Int64, environment: String?, isRetryable: Bool?, bundleId: String?, inApp: TransactionEntries,
        latest: TransactionEntries, isLegacy: Bool
    ) {
        self.init(
            status: Int(clamping: status), environment: environment, isRetryable: isRetryable, bundleId: bundleId,
            inApp: inApp.usable, latestReceiptInfo: latest.usable, isLegacyReceipt: isLegacy,
            unusableTransactionCount: inApp.unusableCount + latest.unusableCount,
            unusableTransactionIds: inApp.unusableIds + latest.unusableIds)
    }

    private static func decodeOneOrMany(
        _ c: KeyedDecodingContainer<AnyCodingKey>, _ name: String
    ) throws -> [TransactionEntry] {
        let key = AnyCodingKey(name)
        guard c.contains(key), (try? c.decodeNil(forKey: key)) == false else { return [] }
        if (try? c.nestedUnkeyedContainer(forKey: key)) != nil {
            return try c.decode([TransactionEntry].self, forKey: key)
        }
        return [try c.decode(TransactionEntry.self, forKey: key)]
    }
}
