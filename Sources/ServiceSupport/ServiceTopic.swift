/// One of the contract's six Kafka topics: the variable that names it and its default name (docs/OPERATIONS.md,
/// the external contract).
public enum ServiceTopic: CaseIterable, Sendable {
    /// Submissions (`RECEIPTS_TOPIC`).
    case receipts
    /// One result per submission (`RESULTS_TOPIC`).
    case results
    /// Delayed re-verification (`RETRY_TOPIC`).
    case retry
    /// What could not be processed, for replay (`DLQ_TOPIC`).
    case deadLetter
    /// App Store Server Notifications V2 as Apple posted them (`NOTIFICATIONS_TOPIC`).
    case notifications
    /// Purchase events for crediting (`EVENTS_TOPIC`).
    case events

    /// The environment variable that names the topic.
    public var variable: String {
        switch self {
        case .receipts: "RECEIPTS_TOPIC"
        case .results: "RESULTS_TOPIC"
        case .retry: "RETRY_TOPIC"
        case .deadLetter: "DLQ_TOPIC"
        case .notifications: "NOTIFICATIONS_TOPIC"
        case .events: "EVENTS_TOPIC"
        }
    }

    /// The name used when the variable is not set.
    public var defaultName: String {
        switch self {
        case .receipts: "iap.receipts.submitted"
        case .results: "iap.receipts.results"
        case .retry: "iap.receipts.retry"
        case .deadLetter: "iap.receipts.dlq"
        case .notifications: "iap.notifications.submitted"
        case .events: "iap.purchase.events"
        }
    }
}
