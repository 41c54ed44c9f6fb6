import HTTPServer
import ServiceSupport

/// A request (a submission or a notification) waiting for Kafka's delivery report, answered exactly once: by the
/// report, or by `IngestHandler.kafkaDeadlines` when the report is late. Whoever `claim`s it first answers.
///
/// The deadline queue keeps every one of these until its deadline (the delivery timeout plus a second, 11 s by
/// default), long after most were answered: at 15,000 submissions/s that is ~165,000 of them. So the responder, which
/// holds the HTTP request's whole state (its context, its response), is handed out by the first `claim` and not kept:
/// what stays queued is this small object, and the sweep that drops it frees nothing else (before, each sweep
/// freed a tenth of a second's worth of requests at once, and the heap held 11 s of them).
final class PendingKafkaAnswer: Sendable {
    /// What is being written.
    enum Kind: String, Sendable {
        case submission
        case notification
    }

    let kind: Kind
    /// The submission id, or the notification's UUID (for logs; may be empty).
    let id: String
    private let responder: Locked<HTTPResponder?>

    init(kind: Kind = .submission, id: String, respond: @escaping HTTPResponder) {
        self.kind = kind
        self.id = id
        self.responder = Locked(respond)
    }

    /// The responder for the first caller only (nil for every later one); it is no longer held here.
    func claim() -> HTTPResponder? {
        responder.withLock { responder in
            defer { responder = nil }
            return responder
        }
    }
}
