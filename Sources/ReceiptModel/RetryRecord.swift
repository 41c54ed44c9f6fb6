/// A submission whose in-process retries ran out of time while Apple kept failing: the message on `RETRY_TOPIC`.
///
/// The verifier consumes it again once `not_before_ms` has passed and makes another round of attempts.
/// See `schemas/retry.schema.json`. Written by `RetryRecordJSON`.
public struct RetryRecord: Decodable, Sendable, Equatable {
    public static let currentSchemaVersion = 1

    public var schemaVersion: Int
    public var submission: Submission
    /// Rounds completed so far (1 after the first in-process round failed).
    public var round: Int
    /// Apple calls made so far, all rounds included.
    public var attempts: Int
    /// Wall-clock time before which the next round must not start.
    public var notBeforeMs: Int64
    public var lastAppleStatus: Int?
    public var lastError: String
    /// The backend asked in the last round (null in records written before it was recorded).
    public var source: VerificationSource?

    public init(
        submission: Submission, round: Int, attempts: Int, notBeforeMs: Int64, lastAppleStatus: Int?, lastError: String,
        source: VerificationSource? = nil
    ) {
        self.source = source
        self.schemaVersion = Self.currentSchemaVersion
        self.submission = submission
        self.round = round
        self.attempts = attempts
        self.notBeforeMs = notBeforeMs
        self.lastAppleStatus = lastAppleStatus
        self.lastError = lastError
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version"
        case submission, round, attempts
        case notBeforeMs = "not_before_ms"
        case lastAppleStatus = "last_apple_status"
        case lastError = "last_error"
        case source
    }
}
