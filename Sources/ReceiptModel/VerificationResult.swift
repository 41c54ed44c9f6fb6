/// The verdict for one submission: the message on `RESULTS_TOPIC` (schema version 1).
///
/// Exactly one logical result per submission; a duplicate (at-least-once delivery) carries the same
/// `submission_id`, `outcome` and transactions. See `schemas/result.schema.json`.
public struct VerificationResult: Codable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var submissionId: String
    public var orderId: String?
    public var userId: String?
    public var outcome: Outcome
    /// Null when verified.
    public var reason: Reason?
    public var message: String?
    /// The last `status` Apple returned.
    public var appleStatus: Int?
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var transactions: [VerifiedTransaction]
    /// Apple calls made for this submission, all rounds included.
    public var attempts: Int
    public var verifiedAtMs: Int64

    public init(
        submissionId: String, orderId: String?, userId: String?, outcome: Outcome, reason: Reason?, message: String?,
        appleStatus: Int?, environment: AppStoreEnvironment?, bundleId: String?, transactions: [VerifiedTransaction],
        attempts: Int, verifiedAtMs: Int64, schemaVersion: Int = VerificationResult.currentSchemaVersion
    ) {
        self.schemaVersion = schemaVersion
        self.submissionId = submissionId
        self.orderId = orderId
        self.userId = userId
        self.outcome = outcome
        self.reason = reason
        self.message = message
        self.appleStatus = appleStatus
        self.environment = environment
        self.bundleId = bundleId
        self.transactions = transactions
        self.attempts = attempts
        self.verifiedAtMs = verifiedAtMs
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case orderId = "order_id"
        case userId = "user_id"
        case outcome, reason, message
        case appleStatus = "apple_status"
        case environment
        case bundleId = "bundle_id"
        case transactions, attempts
        case verifiedAtMs = "verified_at_ms"
    }

    // Absent values are written as null (the contract), not omitted.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(submissionId, forKey: .submissionId)
        try c.encode(orderId, forKey: .orderId)
        try c.encode(userId, forKey: .userId)
        try c.encode(outcome, forKey: .outcome)
        try c.encode(reason, forKey: .reason)
        try c.encode(message, forKey: .message)
        try c.encode(appleStatus, forKey: .appleStatus)
        try c.encode(environment, forKey: .environment)
        try c.encode(bundleId, forKey: .bundleId)
        try c.encode(transactions, forKey: .transactions)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(verifiedAtMs, forKey: .verifiedAtMs)
    }
}
