import Foundation
import ReceiptModel

/// The body of `POST /v1/receipts`, validated and normalized: contract fields, or the aliases existing iOS clients
/// send (`receipt`, `orderNo`, `transactionId`, `sandbox`).
///
/// Normalization: base64 without whitespace or line breaks; ids given as JSON integers become their decimal text;
/// empty optional strings count as absent. Unknown fields are ignored.
public struct SubmissionRequest: Sendable, Equatable {
    public var submissionId: String?
    /// Normalized base64 app receipt.
    public var receiptData: String
    public var orderId: String?
    public var userId: String?
    public var expectedTransactionId: String?
    public var expectedProductId: String?
    /// The iOS clients' `sandbox` flag. Accepted for compatibility and not forwarded: the verifier asks production
    /// first and follows Apple's 21007 to the sandbox; `SANDBOX_POLICY` decides whether sandbox receipts pass.
    public var sandbox: Bool?

    /// Longest accepted value of the optional id fields (`order_id`, `user_id`, expected ids).
    public static let maximumFieldLength = 512

    public init(
        submissionId: String? = nil, receiptData: String, orderId: String? = nil, userId: String? = nil,
        expectedTransactionId: String? = nil, expectedProductId: String? = nil, sandbox: Bool? = nil
    ) {
        self.submissionId = submissionId
        self.receiptData = receiptData
        self.orderId = orderId
        self.userId = userId
        self.expectedTransactionId = expectedTransactionId
        self.expectedProductId = expectedProductId
        self.sandbox = sandbox
    }

    /// Parses and validates a request body.
    /// - Throws: `APIError` (400) naming the field and the problem.
    public static func parse(_ body: [UInt8]) throws(APIError) -> SubmissionRequest {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw .invalidJSON()
        }
        guard let object = parsed as? [String: Any] else { throw .notAnObject() }

        let rawReceipt = try field(object, "receipt_data", alias: "receipt", allowNumbers: false)
        guard let rawReceipt else { throw .missingReceipt() }
        let receipt: String
        do {
            receipt = try ReceiptData.normalize(rawReceipt)
        } catch {
            switch error {
            case .empty: throw .missingReceipt()
            case .storeKit2Transaction: throw .storeKit2Transaction(error.description)
            case .notBase64, .tooLarge: throw .invalidReceipt(error.description)
            }
        }

        var sandbox: Bool?
        switch object["sandbox"] {
        case nil, is NSNull: sandbox = nil
        case let number as NSNumber where isBoolean(number): sandbox = number.boolValue
        default: throw .invalidField("sandbox", "must be true or false")
        }

        return SubmissionRequest(
            submissionId: try field(object, "submission_id", alias: nil),
            receiptData: receipt,
            orderId: try field(object, "order_id", alias: "orderNo"),
            userId: try field(object, "user_id", alias: nil),
            expectedTransactionId: try field(object, "expected_transaction_id", alias: "transactionId"),
            expectedProductId: try field(object, "expected_product_id", alias: nil),
            sandbox: sandbox)
    }

    /// The submission message for this request.
    public func submission(id: String, submittedAtMs: Int64) -> Submission {
        Submission(
            submissionId: id, receiptData: receiptData, orderId: orderId, userId: userId,
            expectedTransactionId: expectedTransactionId, expectedProductId: expectedProductId,
            submittedAtMs: submittedAtMs)
    }

    /// The value of `name` or its alias (equal values may be given under both), as a string.
    private static func field(
        _ object: [String: Any], _ name: String, alias: String?, allowNumbers: Bool = true
    ) throws(APIError) -> String? {
        let primary = try stringValue(object[name], name: name, allowNumbers: allowNumbers)
        guard let alias else { return primary }
        let secondary = try stringValue(object[alias], name: alias, allowNumbers: allowNumbers)
        if let primary, let secondary, primary != secondary { throw .conflictingFields(name, alias) }
        return primary ?? secondary
    }

    private static func stringValue(_ value: Any?, name: String, allowNumbers: Bool) throws(APIError) -> String? {
        let text: String
        switch value {
        case nil, is NSNull:
            return nil
        case let string as String:
            text = string
        case let number as NSNumber where allowNumbers && !isBoolean(number):
            guard let integer = integerText(number) else {
                throw .invalidField(name, "must be a string or an integer")
            }
            text = integer
        default:
            throw .invalidField(name, allowNumbers ? "must be a string or an integer" : "must be a string")
        }
        if text.isEmpty { return nil }
        if name != "receipt_data", name != "receipt", text.utf8.count > maximumFieldLength {
            throw .invalidField(name, "is longer than \(maximumFieldLength) bytes")
        }
        return text
    }

    private static func integerText(_ number: NSNumber) -> String? {
        let double = number.doubleValue
        guard double == double.rounded(), abs(double) < 9.0e15 else { return nil }
        return String(number.int64Value)
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        // JSONSerialization decodes true/false as NSNumber too; only they carry the `char` type encoding.
        String(cString: number.objCType) == "c"
    }
}
