import HTTPServer
import Synchronization

/// A request (a submission or a notification) waiting for Kafka's delivery report, answered exactly once: by the
/// report, or by `IngestHandler.kafkaDeadlines` when the report is late. Whoever `claim`s it first answers.
final class PendingKafkaAnswer: Sendable {
    /// What is being written.
    enum Kind: String, Sendable {
        case submission
        case notification
    }

    let kind: Kind
    /// The submission id, or the notification's UUID (for logs; may be empty).
    let id: String
    let respond: HTTPResponder
    private let claimed = Atomic<Bool>(false)

    init(kind: Kind = .submission, id: String, respond: @escaping HTTPResponder) {
        self.kind = kind
        self.id = id
        self.respond = respond
    }

    /// True for the first caller only.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}
