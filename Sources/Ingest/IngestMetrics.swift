import HTTPServer
import ServiceSupport

/// The ingest's Prometheus metrics. Instruments that depend only on fixed labels are looked up once.
struct IngestMetrics: Sendable {
    let registry: MetricsRegistry
    let kafkaDelivered: Counter
    let kafkaFailed: Counter
    let kafkaRefused: Counter
    let kafkaDeliverySeconds: Histogram
    let waitingForKafka: Gauge
    let lookupHits: Counter
    let lookupPending: Counter
    let lookupMisses: Counter
    let waitsVerdict: Counter
    let waitsTimedOut: Counter
    let answeredFromIndex: Counter
    let notificationsAccepted: Counter
    let notificationsInvalid: Counter
    let notificationsUnavailable: Counter

    /// `ingest_http_requests_total` and `ingest_http_request_duration_seconds` by route and status, looked up in
    /// the registry once per pair (every response is counted: the registry's own lookup, a search by name and labels
    /// under its lock, was a measurable part of each request).
    private let responseInstruments: ResponseInstruments

    init(registry: MetricsRegistry) {
        self.registry = registry
        self.responseInstruments = ResponseInstruments(registry: registry)
        let lookups = "ingest_result_lookups_total"
        let lookupsHelp =
            "GET /v1/receipts/{submission_id} by what the index knew (hit: result, pending, miss: unknown)"
        lookupHits = registry.counter(lookups, help: lookupsHelp, labels: [("result", "hit")])
        lookupPending = registry.counter(lookups, help: lookupsHelp, labels: [("result", "pending")])
        lookupMisses = registry.counter(lookups, help: lookupsHelp, labels: [("result", "miss")])
        let waits = "ingest_result_waits_total"
        let waitsHelp = "POST /v1/receipts?wait_ms requests by how the wait ended (verdict: 200, timeout: 202)"
        waitsVerdict = registry.counter(waits, help: waitsHelp, labels: [("outcome", "verdict")])
        waitsTimedOut = registry.counter(waits, help: waitsHelp, labels: [("outcome", "timeout")])
        answeredFromIndex = registry.counter(
            "ingest_resubmissions_answered_from_index_total",
            help: "Submissions whose submission_id already had a result: answered 200 without writing to Kafka")
        let notifications = "ingest_notifications_total"
        let notificationsHelp =
            "POST /v1/apple/notifications by outcome (accepted: 200 after Kafka acknowledged it; invalid: 400; "
            + "unavailable: 503, Apple retries)"
        notificationsAccepted = registry.counter(
            notifications, help: notificationsHelp, labels: [("outcome", "accepted")])
        notificationsInvalid = registry.counter(
            notifications, help: notificationsHelp, labels: [("outcome", "invalid")])
        notificationsUnavailable = registry.counter(
            notifications, help: notificationsHelp, labels: [("outcome", "unavailable")])
        let deliveries = "ingest_kafka_deliveries_total"
        let deliveriesHelp =
            "Submissions given to Kafka, by result (delivered, failed after enqueue, refused at enqueue)"
        kafkaDelivered = registry.counter(deliveries, help: deliveriesHelp, labels: [("result", "delivered")])
        kafkaFailed = registry.counter(deliveries, help: deliveriesHelp, labels: [("result", "failed")])
        kafkaRefused = registry.counter(deliveries, help: deliveriesHelp, labels: [("result", "refused")])
        kafkaDeliverySeconds = registry.histogram(
            "ingest_kafka_delivery_duration_seconds", help: "From enqueue to Kafka's delivery report",
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30])
        waitingForKafka = registry.gauge(
            "ingest_requests_waiting_for_kafka", help: "Submissions enqueued whose delivery report has not arrived")
    }

    /// Exposes the index's sizes and counters, read when scraped.
    func observe(_ index: ResultIndex) {
        registry.collect("ingest_result_index_entries", help: "Results in the index", kind: .gauge) {
            [([], Double(index.statistics.entries))]
        }
        registry.collect("ingest_result_index_bytes", help: "Result message bytes in the index", kind: .gauge) {
            [([], Double(index.statistics.bytes))]
        }
        registry.collect(
            "ingest_result_index_pending", help: "Submissions accepted (or being written) here without a result yet",
            kind: .gauge
        ) { [([], Double(index.statistics.pending))] }
        registry.collect(
            "ingest_result_waiting_requests", help: "Requests waiting for a verdict (wait_ms)", kind: .gauge
        ) { [([], Double(index.statistics.waiters))] }
        registry.collect(
            "ingest_result_messages_total",
            help: "Messages read from the results topic, by what the index did with them", kind: .counter
        ) {
            let statistics = index.statistics
            return [
                ([("result", "indexed")], Double(statistics.indexed)),
                ([("result", "replaced")], Double(statistics.replaced)),
                ([("result", "duplicate")], Double(statistics.duplicates)),
                ([("result", "expired")], Double(statistics.expired)),
                ([("result", "undecodable")], Double(statistics.undecodable)),
            ]
        }
        registry.collect(
            "ingest_result_index_evictions_total",
            help: "Entries removed from the index, by the bound that removed them", kind: .counter
        ) {
            let statistics = index.statistics
            return [
                ([("reason", "entries")], Double(statistics.evictedForEntries)),
                ([("reason", "bytes")], Double(statistics.evictedForBytes)),
                ([("reason", "age")], Double(statistics.evictedForAge)),
                ([("reason", "pending")], Double(statistics.pendingEvicted)),
            ]
        }
    }

    /// Exposes the HTTP server's body memory (bytes held for bodies being received, bodies refused for it) and its
    /// connections (open, accepted, refused at the limits, closed past their head or body deadline).
    func observe(_ server: HTTPServer) {
        registry.collect(
            "ingest_http_buffered_body_bytes",
            help: "Request body bytes held for requests still being received (bounded by INGEST_MAX_BUFFERED_BYTES)",
            kind: .gauge
        ) { [weak server] in [([], Double(server?.bufferedBodyBytes ?? 0))] }
        registry.collect(
            "ingest_http_busy_refusals_total",
            help: "Requests answered 503 server_busy because their body did not fit under INGEST_MAX_BUFFERED_BYTES",
            kind: .counter
        ) { [weak server] in [([], Double(server?.busyRefusals ?? 0))] }
        registry.collect("ingest_http_connections", help: "HTTP connections open", kind: .gauge) { [weak server] in
            [([], Double(server?.connectionStatistics.open ?? 0))]
        }
        registry.collect(
            "ingest_http_connections_accepted_total", help: "HTTP connections accepted", kind: .counter
        ) { [weak server] in [([], Double(server?.connectionStatistics.accepted ?? 0))] }
        registry.collect(
            "ingest_http_connections_refused_total",
            help: "HTTP connections refused at INGEST_MAX_CONNECTIONS or INGEST_MAX_CONNECTIONS_PER_IP", kind: .counter
        ) { [weak server] in [([], Double(server?.connectionStatistics.refused ?? 0))] }
        registry.collect(
            "ingest_http_connections_timed_out_total",
            help: "HTTP connections closed without an answer because a request head (INGEST_HEADER_TIMEOUT_SECONDS, "
                + "or INGEST_IDLE_TIMEOUT_SECONDS when kept alive) or body (INGEST_BODY_TIMEOUT_SECONDS) did not "
                + "arrive in time",
            kind: .counter
        ) { [weak server] in
            let statistics = server?.connectionStatistics
            return [
                ([("phase", "head")], Double(statistics?.headTimeouts ?? 0)),
                ([("phase", "body")], Double(statistics?.bodyTimeouts ?? 0)),
            ]
        }
    }

    /// Counts a response by route and status code and observes its duration.
    func record(_ event: HTTPResponseEvent) {
        let instruments = responseInstruments.instruments(
            route: IngestRoute(path: event.path).metricLabel, status: event.status)
        instruments.count.increment()
        instruments.duration.observe(event.durationSeconds)
    }

    /// Counts a submission refused for its proof kind (`INGEST_KEY_PROOFS`) by key name and effective kind; it is
    /// also counted in `ingest_submissions_rejected_total{code="proof_not_allowed"}` when answered.
    func recordProofRefusal(client: String, proof: ProofKind) {
        registry.counter(
            "ingest_proof_refusals_total",
            help: "Submissions answered 403 proof_not_allowed, by API key name and proof kind (INGEST_KEY_PROOFS)",
            labels: [("client", client), ("proof", proof.rawValue)]
        ).increment()
    }

    /// Counts a refused submission by error code (`invalid_receipt`, `unauthorized`, ...).
    func recordRejection(code: String) {
        registry.counter(
            "ingest_submissions_rejected_total", help: "Submissions answered with an error, by error code",
            labels: [("code", code)]
        ).increment()
    }
}

/// The response counter and duration histogram of each (route label, status) pair met so far, made in the registry
/// on first use (so a pair appears in `/metrics` only once it happened, as when each response asked the registry).
private final class ResponseInstruments: Sendable {
    struct Instruments: Sendable {
        let count: Counter
        let duration: Histogram
    }

    private struct Key: Hashable {
        let route: String
        let status: Int
    }

    private let registry: MetricsRegistry
    private let known = Locked<[Key: Instruments]>([:])

    init(registry: MetricsRegistry) {
        self.registry = registry
    }

    func instruments(route: String, status: Int) -> Instruments {
        let key = Key(route: route, status: status)
        if let found = known.withLock({ $0[key] }) { return found }
        let made = Instruments(
            count: registry.counter(
                "ingest_http_requests_total", help: "HTTP responses by route and status code",
                labels: [("route", route), ("code", String(status))]),
            duration: registry.histogram(
                "ingest_http_request_duration_seconds", help: "From request headers to response, by route",
                labels: [("route", route)],
                buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]))
        known.withLock { $0[key] = made }
        return made
    }
}
