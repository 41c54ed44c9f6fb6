/// A message that could not be processed, kept for inspection and replay: the message on `DLQ_TOPIC`.
///
/// Carries the original bytes (base64) with where they came from, so `receipt-replay` can put them back unchanged.
/// See `schemas/dlq.schema.json`.
public struct DeadLetterRecord: Codable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    /// Null when the original message had no recoverable id.
    public var submissionId: String?
    /// A contract reason code (`malformed_submission`, `apple_unavailable`, `config_error`, ...).
    public var reason: Reason
    public var message: String
    public var sourceTopic: String
    public var sourcePartition: Int
    public var sourceOffset: Int64
    /// The original message key, base64; null when the message had none.
    public var originalKey: String?
    /// The original message value, base64.
    public var originalValue: String
    public var appleStatus: Int?
    public var attempts: Int
    public var failedAtMs: Int64

    public init(
        submissionId: String?, reason: Reason, message: String, sourceTopic: String, sourcePartition: Int,
        sourceOffset: Int64, originalKey: [UInt8]?, originalValue: [UInt8], appleStatus: Int?, attempts: Int,
        failedAtMs: Int64
    ) {
        self.schemaVersion = Self.currentSchemaVersion
        self.submissionId = submissionId
        self.reason = reason
        self.message = message
        self.sourceTopic = sourceTopic
        self.sourcePartition = sourcePartition
        self.sourceOffset = sourceOffset
        self.originalKey = originalKey.map { Base64.encode($0) }
        self.originalValue = Base64.encode(originalValue)
        self.appleStatus = appleStatus
        self.attempts = attempts
        self.failedAtMs = failedAtMs
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submissionId = "submission_id"
        case reason, message
        case sourceTopic = "source_topic"
        case sourcePartition = "source_partition"
        case sourceOffset = "source_offset"
        case originalKey = "original_key"
        case originalValue = "original_value"
        case appleStatus = "apple_status"
        case attempts
        case failedAtMs = "failed_at_ms"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(submissionId, forKey: .submissionId)
        try c.encode(reason, forKey: .reason)
        try c.encode(message, forKey: .message)
        try c.encode(sourceTopic, forKey: .sourceTopic)
        try c.encode(sourcePartition, forKey: .sourcePartition)
        try c.encode(sourceOffset, forKey: .sourceOffset)
        try c.encode(originalKey, forKey: .originalKey)
        try c.encode(originalValue, forKey: .originalValue)
        try c.encode(appleStatus, forKey: .appleStatus)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(failedAtMs, forKey: .failedAtMs)
    }
}
