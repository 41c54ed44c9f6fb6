/// A receipt submitted for verification: the message on `RECEIPTS_TOPIC` (schema version 1).
///
/// Produced by the ingest or directly by high-volume backends; see `schemas/submission.schema.json`.
public struct Submission: Codable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    /// Unique per submission; resubmitting the same id is safe (same verdict).
    public var submissionId: String
    /// Base64 app receipt, standard alphabet, one line.
    public var receiptData: String
    public var orderId: String?
    public var userId: String?
    public var expectedTransactionId: String?
    public var expectedProductId: String?
    public var submittedAtMs: Int64

    public init(
        submissionId: String, receiptData: String, orderId: String? = nil, userId: String? = nil,
        expectedTransactionId: String? = nil, expectedProductId: String? = nil, submittedAtMs: Int64,
        schemaVersion: Int = Submission.currentSchemaVersion
    ) {
        self.schemaVersion = schemaVersion
        self.submissionId = submissionId
        self.receiptData = receiptData
        self.orderId = orderId
        self.userId = userId
        self.expectedTransactionId = expectedTransactionId
        self.expectedProductId = expectedProductId
        self.submittedAtMs = submittedAtMs
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case receiptData = "receipt_data"
        case orderId = "order_id"
        case userId = "user_id"
        case expectedTransactionId = "expected_transaction_id"
        case expectedProductId = "expected_product_id"
        case submittedAtMs = "submitted_at_ms"
    }

    /// The Kafka key the ingest uses: `user_id`, else `order_id`, else `submission_id`.
    public var partitionKey: String {
        if let userId, !userId.isEmpty { return userId }
        if let orderId, !orderId.isEmpty { return orderId }
        return submissionId
    }
}
