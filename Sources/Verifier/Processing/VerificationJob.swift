import ReceiptModel

/// A submission on its way through Apple, with what it needs for its outputs.
public struct VerificationJob: Sendable {
    public let submission: Submission
    /// The consumed message (its key keys every output; its bytes go into a DLQ record).
    public let message: InputMessage
    /// Rounds already counted before this one (0 for a fresh submission, the retry record's `round` otherwise).
    public let completedRounds: Int
    /// Apple calls made in earlier rounds.
    public let priorAttempts: Int

    public init(submission: Submission, message: InputMessage, completedRounds: Int, priorAttempts: Int) {
        self.submission = submission
        self.message = message
        self.completedRounds = completedRounds
        self.priorAttempts = priorAttempts
    }
}
