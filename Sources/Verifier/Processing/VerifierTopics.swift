/// The topics the verifier reads and writes (`RECEIPTS_TOPIC`, `RESULTS_TOPIC`, `RETRY_TOPIC`, `DLQ_TOPIC`,
/// `NOTIFICATIONS_TOPIC`, `EVENTS_TOPIC`).
public struct VerifierTopics: Sendable, Equatable {
    public var receipts: String
    public var results: String
    public var retry: String
    public var deadLetter: String
    /// App Store Server Notifications V2 as Apple posted them (consumed).
    public var notifications: String
    /// Purchase events made from verified notifications (written).
    public var events: String

    public init(
        receipts: String = "iap.receipts.submitted", results: String = "iap.receipts.results",
        retry: String = "iap.receipts.retry", deadLetter: String = "iap.receipts.dlq",
        notifications: String = "iap.notifications.submitted", events: String = "iap.purchase.events"
    ) {
        self.receipts = receipts
        self.results = results
        self.retry = retry
        self.deadLetter = deadLetter
        self.notifications = notifications
        self.events = events
    }
}
