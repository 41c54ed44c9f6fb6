/// A purchase submitted for verification: the message on `RECEIPTS_TOPIC` (schema version 1).
///
/// Produced by the ingest or directly by high-volume backends; see `schemas/submission.schema.json`.
public struct Submission: Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    /// Unique per submission; resubmitting the same id is safe (same verdict).
    public var submissionId: String
    /// Exactly one of `receipt_data`, `signed_transaction`, `transaction_id`, `signed_app_transaction`, normalized.
    public var proof: PurchaseProof
    /// The name of the ingest API key that submitted it (named keys only).
    public var clientId: String?
    public var orderId: String?
    public var userId: String?
    public var expectedTransactionId: String?
    public var expectedProductId: String?
    /// The `appAccountToken` (a UUID, lower-cased) the app set at purchase; another one on the transaction is
    /// `account_mismatch`.
    public var expectedAppAccountToken: String?
    public var submittedAtMs: Int64

    public init(
        submissionId: String, proof: PurchaseProof, clientId: String? = nil, orderId: String? = nil,
        userId: String? = nil, expectedTransactionId: String? = nil, expectedProductId: String? = nil,
        expectedAppAccountToken: String? = nil, submittedAtMs: Int64,
        schemaVersion: Int = Submission.currentSchemaVersion
    ) {
        self.schemaVersion = schemaVersion
        self.submissionId = submissionId
        self.proof = proof
        self.clientId = clientId
        self.orderId = orderId
        self.userId = userId
        self.expectedTransactionId = expectedTransactionId
        self.expectedProductId = expectedProductId
        self.expectedAppAccountToken = expectedAppAccountToken
        self.submittedAtMs = submittedAtMs
    }

    /// A submission of a base64 app receipt (StoreKit 1).
    public init(
        submissionId: String, receiptData: String, orderId: String? = nil, userId: String? = nil,
        expectedTransactionId: String? = nil, expectedProductId: String? = nil, submittedAtMs: Int64,
        schemaVersion: Int = Submission.currentSchemaVersion
    ) {
        self.init(
            submissionId: submissionId, proof: .receipt(receiptData), orderId: orderId, userId: userId,
            expectedTransactionId: expectedTransactionId, expectedProductId: expectedProductId,
            submittedAtMs: submittedAtMs, schemaVersion: schemaVersion)
    }

    /// The app receipt, when the proof is one.
    public var receiptData: String? {
        if case .receipt(let receipt) = proof { return receipt }
        return nil
    }

    /// The Kafka key the ingest uses: `user_id`, else `order_id`, else `submission_id`.
    public var partitionKey: String {
        if let userId, !userId.isEmpty { return userId }
        if let orderId, !orderId.isEmpty { return orderId }
        return submissionId
    }
}

extension Submission: Decodable {
    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case receiptData = "receipt_data"
        case signedTransaction = "signed_transaction"
        case transactionId = "transaction_id"
        case signedAppTransaction = "signed_app_transaction"
        case clientId = "client_id"
        case orderId = "order_id"
        case userId = "user_id"
        case expectedTransactionId = "expected_transaction_id"
        case expectedProductId = "expected_product_id"
        case expectedAppAccountToken = "expected_app_account_token"
        case submittedAtMs = "submitted_at_ms"
    }

    /// Structural decoding (types only). Messages from Kafka go through `decodeValidated(from:)`, which also
    /// normalizes and validates every field.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let proofs: [PurchaseProof] = [
            try c.decodeIfPresent(String.self, forKey: .receiptData).map(PurchaseProof.receipt),
            try c.decodeIfPresent(String.self, forKey: .signedTransaction).map(PurchaseProof.signedTransaction),
            try c.decodeIfPresent(String.self, forKey: .transactionId).map(PurchaseProof.transactionId),
            try c.decodeIfPresent(String.self, forKey: .signedAppTransaction).map(PurchaseProof.signedAppTransaction),
        ].compactMap { $0 }
        guard proofs.count == 1, let proof = proofs.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "exactly one of receipt_data, signed_transaction, transaction_id, signed_app_transaction is "
                        + "required"))
        }
        self.init(
            submissionId: try c.decode(String.self, forKey: .submissionId), proof: proof,
            clientId: try c.decodeIfPresent(String.self, forKey: .clientId),
            orderId: try c.decodeIfPresent(String.self, forKey: .orderId),
            userId: try c.decodeIfPresent(String.self, forKey: .userId),
            expectedTransactionId: try c.decodeIfPresent(String.self, forKey: .expectedTransactionId),
            expectedProductId: try c.decodeIfPresent(String.self, forKey: .expectedProductId),
            expectedAppAccountToken: try c.decodeIfPresent(String.self, forKey: .expectedAppAccountToken),
            submittedAtMs: try c.decodeIfPresent(Int64.self, forKey: .submittedAtMs) ?? 0,
            schemaVersion: try c.decode(Int.self, forKey: .schemaVersion))
    }
}
