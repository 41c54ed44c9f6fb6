import AppStore
import Notifications
import ReceiptModel
import ServiceSupport

/// The verifier's own instruments, looked up once (the hot path then costs an atomic add).
/// Names follow Prometheus conventions; labels are low-cardinality (outcome, reason, kind, topic, partition).
final class VerifierMetrics: Sendable {
    let registry: MetricsRegistry
    private let results: [String: Counter]
    private let deadLetters: [Reason: Counter]
    private let rounds: [String: Counter]
    private let published: [OutgoingRecordKind: Counter]
    private struct PublishFailureKey: Hashable {
        let kind: OutgoingRecordKind
        let retriable: Bool
    }
    private let publishFailures: [PublishFailureKey: Counter]
    /// By "<event type>/<notification type>"; notification types not in the mapping table count as `other`.
    private let notificationEvents: [String: Counter]
    private let notificationRejections: [Reason: Counter]
    let notificationLag: Histogram
    let retries: Counter
    let configErrors: Counter
    let malformed: Counter
    let abandoned: Counter
    let heldRetryRecords: Gauge
    /// Notifications that could not be judged now (revocation status unavailable), held and verified again later.
    let notificationsHeld: Counter
    let roundDuration: Histogram
    let resultLatency: Histogram
    let breakerOpen: Gauge
    let breakerOpened: Counter
    let breakerClosed: Counter
    let assigned: Counter
    let revoked: Counter

    init(registry: MetricsRegistry) {
        self.registry = registry
        var results: [String: Counter] = [:]
        let resultHelp = "Results written (acknowledged by Kafka), by outcome and reason"
        results["verified/"] = registry.counter(
            "verifier_results_total", help: resultHelp, labels: [("outcome", "verified"), ("reason", "none")])
        for reason in Reason.allCases {
            results["\(reason.outcome.rawValue)/\(reason.rawValue)"] = registry.counter(
                "verifier_results_total", help: resultHelp,
                labels: [("outcome", reason.outcome.rawValue), ("reason", reason.rawValue)])
        }
        self.results = results
        var deadLetters: [Reason: Counter] = [:]
        for reason in [
            Reason.malformedSubmission, .appleUnavailable, .configError, .invalidSignature, .bundleMismatch,
            .sandboxNotAllowed,
        ] {
            deadLetters[reason] = registry.counter(
                "verifier_dlq_records_total", help: "DLQ records written, by reason",
                labels: [("reason", reason.rawValue)])
        }
        self.deadLetters = deadLetters
        var rounds: [String: Counter] = [:]
        for result in ["verdict", "unavailable", "config_error"] {
            rounds[result] = registry.counter(
                "verifier_apple_rounds_total", help: "Rounds of Apple calls for a submission, by how they ended",
                labels: [("result", result)])
        }
        self.rounds = rounds
        var published: [OutgoingRecordKind: Counter] = [:]
        var publishFailures: [PublishFailureKey: Counter] = [:]
        for kind in [OutgoingRecordKind.result, .retry, .deadLetter, .event] {
            published[kind] = registry.counter(
                "verifier_records_published_total", help: "Output records acknowledged by Kafka, by kind",
                labels: [("kind", kind.rawValue)])
            for retriable in [true, false] {
                publishFailures[PublishFailureKey(kind: kind, retriable: retriable)] = registry.counter(
                    "verifier_publish_failures_total",
                    help:
                        "Output records Kafka refused or failed, by kind and whether retrying the same record can work",
                    labels: [("kind", kind.rawValue), ("retriable", String(retriable))])
            }
        }
        self.published = published
        self.publishFailures = publishFailures
        var notificationEvents: [String: Counter] = [:]
        let known = NotificationEventMapping.table.map { ($0.key, $0.value) } + [("other", PurchaseEventType.info)]
        for (notificationType, eventType) in known {
            notificationEvents["\(eventType.rawValue)/\(notificationType)"] = registry.counter(
                "verifier_notification_events_total",
                help: "Purchase events written (acknowledged by Kafka), by event type and Apple's notification type "
                    + "(types not known to this verifier count as other)",
                labels: [("type", eventType.rawValue), ("notification_type", notificationType)])
        }
        self.notificationEvents = notificationEvents
        var notificationRejections: [Reason: Counter] = [:]
        for reason in [Reason.invalidSignature, .bundleMismatch, .sandboxNotAllowed, .malformedSubmission] {
            notificationRejections[reason] = registry.counter(
                "verifier_notification_rejections_total",
                help: "Notifications that became DLQ records instead of events (acknowledged by Kafka), by reason",
                labels: [("reason", reason.rawValue)])
        }
        self.notificationRejections = notificationRejections
        notificationLag = registry.histogram(
            "verifier_notification_to_event_seconds",
            help: "From a notification's received_at_ms (ingest or backfill) to its event's acknowledgement")
        retries = registry.counter("verifier_retries_total", help: "Retry records written to RETRY_TOPIC")
        configErrors = registry.counter(
            "verifier_config_errors_total",
            help: "Apple said our configuration is wrong (21004 shared secret, 21000): alert on any increase")
        malformed = registry.counter(
            "verifier_malformed_messages_total", help: "Consumed messages that could not be decoded")
        abandoned = registry.counter(
            "verifier_abandoned_messages_total",
            help: "Messages given up without output on revoke or shutdown (redelivered, not lost)")
        heldRetryRecords = registry.gauge(
            "verifier_retry_records_waiting", help: "Retry records held until their not_before_ms")
        notificationsHeld = registry.counter(
            "verifier_notifications_held_total",
            help: "Times a notification could not be judged (revocation status unavailable) and was held for a retry")
        roundDuration = registry.histogram(
            "verifier_apple_round_duration_seconds",
            help: "Duration of one round of Apple calls for a submission (retries within the round included)")
        resultLatency = registry.histogram(
            "verifier_submission_to_result_seconds", help: "From submitted_at_ms to the result's acknowledgement")
        breakerOpen = registry.gauge(
            "verifier_breaker_open", help: "1 while the Apple-outage circuit breaker holds new work back")
        breakerOpened = registry.counter(
            "verifier_breaker_transitions_total", help: "Circuit breaker transitions", labels: [("to", "open")])
        breakerClosed = registry.counter(
            "verifier_breaker_transitions_total", help: "Circuit breaker transitions", labels: [("to", "closed")])
        assigned = registry.counter(
            "verifier_rebalances_total", help: "Rebalance events", labels: [("kind", "assign")])
        revoked = registry.counter(
            "verifier_rebalances_total", help: "Rebalance events", labels: [("kind", "revoke")])
    }

    func resultWritten(_ outcome: Outcome, _ reason: Reason?) {
        results["\(outcome.rawValue)/\(reason?.rawValue ?? "")"]?.increment()
    }

    func deadLetterWritten(_ reason: Reason) {
        deadLetters[reason]?.increment()
    }

    func roundEnded(_ outcome: VerificationOutcome) {
        switch outcome {
        case .verdict: rounds["verdict"]?.increment()
        case .unavailable: rounds["unavailable"]?.increment()
        case .configurationError: rounds["config_error"]?.increment()
        }
    }

    func notificationEventWritten(_ type: PurchaseEventType, notificationType: String) {
        let label = NotificationEventMapping.table[notificationType] == nil ? "other" : notificationType
        notificationEvents["\(type.rawValue)/\(label)"]?.increment()
    }

    func notificationRejected(_ reason: Reason) {
        notificationRejections[reason]?.increment()
    }

    func publishedRecord(_ kind: OutgoingRecordKind) { published[kind]?.increment() }
    func publishFailed(_ kind: OutgoingRecordKind, retriable: Bool) {
        publishFailures[PublishFailureKey(kind: kind, retriable: retriable)]?.increment()
    }
}
