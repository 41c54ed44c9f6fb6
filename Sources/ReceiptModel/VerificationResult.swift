/// The verdict for one submission: the message on `RESULTS_TOPIC` (schema version 1).
///
/// Exactly one logical result per submission; a duplicate (at-least-once delivery) carries the same
/// `submission_id`, `outcome` and transactions. See `schemas/result.schema.json`.
public struct VerificationResult: Decodable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var submissionId: String
    public var orderId: String?
    public var userId: String?
    /// The name of the API key that submitted it through the ingest (named keys), echoed.
    public var clientId: String?
    public var outcome: Outcome
    /// Null when verified.
    public var reason: Reason?
    /// What the verdict rests on; null only on a `failed` result for a message whose proof could not be read.
    public var source: VerificationSource?
    public var message: String?
    /// The last `status` Apple returned (verifyReceipt status, or an App Store Server API `errorCode`).
    public var appleStatus: Int?
    /// What Apple's own data says (verifyReceipt's `environment`, a signed payload's `environment`).
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var transactions: [VerifiedTransaction]
    /// The verified app transaction of a `signed_app_transaction` submission (verified: Apple's copy; rejected: the
    /// submitted one, when its signature verified); null for every other proof. It credits nothing.
    public var appTransaction: VerifiedAppTransaction?
    /// Hex SHA-256 of the submission's proof and expectations (see `SubmissionFingerprint`); null only on a `failed`
    /// result for a message whose proof could not be read.
    public var submissionFingerprint: String?
    /// Apple calls made for this submission, all rounds included.
    public var attempts: Int
    public var verifiedAtMs: Int64

    public init(
        submissionId: String, orderId: String?, userId: String?, clientId: String? = nil, outcome: Outcome,
        reason: Reason?, source: VerificationSource? = nil, message: String?, appleStatus: Int?,
        environment: AppStoreEnvironment?, bundleId: String?, transactions: [VerifiedTransaction],
        appTransaction: VerifiedAppTransaction? = nil, submissionFingerprint: String? = nil, attempts: Int,
        verifiedAtMs: Int64, schemaVersion: Int = VerificationResult.currentSchemaVersion
    ) {
        self.appTransaction = appTransaction
        self.schemaVersion = schemaVersion
        self.submissionId = submissionId
        self.orderId = orderId
        self.userId = userId
        self.clientId = clientId
        self.outcome = outcome
        self.reason = reason
        self.source = source
        self.message = message
        self.appleStatus = appleStatus
        self.environment = environment
        self.bundleId = bundleId
        self.transactions = transactions
        self.submissionFingerprint = submissionFingerprint
        self.attempts = attempts
        self.verifiedAtMs = verifiedAtMs
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case orderId = "order_id"
        case userId = "user_id"
        case clientId = "client_id"
        case outcome, reason, source, message
        case appleStatus = "apple_status"
        case environment
        case bundleId = "bundle_id"
        case transactions
        case appTransaction = "app_transaction"
        case submissionFingerprint = "submission_fingerprint"
        case attempts
        case verifiedAtMs = "verified_at_ms"
    }
}
