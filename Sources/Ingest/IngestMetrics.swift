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

    init(registry: MetricsRegistry) {
        self.registry = registry
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

    /// Counts a response by route and status code and observes its duration.
    func record(_ event: HTTPResponseEvent) {
        let route = IngestRoute(path: event.path).metricLabel
        registry.counter(
            "ingest_http_requests_total", help: "HTTP responses by route and status code",
            labels: [("route", route), ("code", String(event.status))]
        ).increment()
        registry.histogram(
            "ingest_http_request_duration_seconds", help: "From request headers to response, by route",
            labels: [("route", route)],
            buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
        ).observe(event.durationSeconds)
    }

    /// Counts a refused submission by error code (`invalid_receipt`, `unauthorized`, ...).
    func recordRejection(code: String) {
        registry.counter(
            "ingest_submissions_rejected_total", help: "Submissions answered with an error, by error code",
            labels: [("code", code)]
        ).increment()
    }
}
