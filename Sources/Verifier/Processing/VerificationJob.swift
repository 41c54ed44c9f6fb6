import Kafka
import ReceiptModel

/// A submission on its way through Apple, with what it needs for its outputs.
struct VerificationJob: Sendable {
    let submission: Submission
    /// The consumed message (its key keys every output; its bytes go into a DLQ record).
    let message: KafkaMessage
    /// Rounds already counted before this one (0 for a fresh submission, the retry record's `round` otherwise).
    let completedRounds: Int
    /// Apple calls made in earlier rounds.
    let priorAttempts: Int

    init(submission: Submission, message: KafkaMessage, completedRounds: Int, priorAttempts: Int) {
        self.submission = submission
        self.message = message
        self.completedRounds = completedRounds
        self.priorAttempts = priorAttempts
    }
}
