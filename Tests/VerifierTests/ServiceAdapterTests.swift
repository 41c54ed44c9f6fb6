import AppStore
import HTTPServer
import ReceiptModel
import ServiceRuntime
import ServiceSupport
import Synchronization
import Testing

@testable import Verifier

@Suite("Service adapters: health endpoint and App Store outcome mapping")
struct ServiceAdapterTests {
    func answer(_ handler: HealthHandler, _ method: String, _ path: String) -> HTTPResponse {
        let box = Locked<HTTPResponse?>(nil)
        handler.handle(HTTPRequest(method: method, path: path)) { response in box.withLock { $0 = response } }
        return box.withLock { $0 }!
    }

    @Test func healthReadinessAndMetricsAnswerPerState() {
        let registry = MetricsRegistry()
        registry.counter("verifier_retries_total", help: "Retry records").increment()
        let notReady = Locked<String?>("the consumer is not connected to Kafka")
        let handler = HealthHandler(
            endpoints: HealthEndpoints(registry: registry) { Health(readiness: notReady.withLock { $0 }) })
        #expect(answer(handler, "GET", "/healthz").status == 200)
        let unready = answer(handler, "GET", "/readyz")
        #expect(unready.status == 503)
        #expect(String(decoding: unready.body, as: UTF8.self).contains("not connected"))
        notReady.withLock { $0 = nil }
        #expect(answer(handler, "GET", "/readyz").status == 200)
        let metrics = answer(handler, "GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(String(decoding: metrics.body, as: UTF8.self).contains("verifier_retries_total 1"))
        #expect(answer(handler, "DELETE", "/metrics").status == 405)
        #expect(answer(handler, "GET", "/v1/receipts").status == 404)
    }

    @Test func aFatalKafkaErrorMakesTheProcessUnhealthy() {
        let handler = HealthHandler(
            endpoints: HealthEndpoints(registry: MetricsRegistry()) { .unhealthy("fatal Kafka error") })
        #expect(answer(handler, "GET", "/healthz").status == 503)
    }

    @Test func onlyAnOutcomeWithoutVerdictCountsAsAppleNotAnswering() {
        let verdict = ReceiptVerdict(
            outcome: .rejected, reason: .refunded, message: "refunded", appleStatus: 0, environment: .sandbox,
            bundleId: "com.example.game", transactions: [], attempts: 2)
        let unavailable = VerificationFailure(
            reason: .appleUnavailable, message: "HTTP 503", appleStatus: nil, environment: nil, attempts: 4)
        let config = VerificationFailure(
            reason: .configError, message: "21004", appleStatus: 21004, environment: .production, attempts: 1)
        #expect(VerificationOutcome.verdict(verdict).appleAnswered)
        #expect(VerificationOutcome.configurationError(config).appleAnswered)
        #expect(!VerificationOutcome.unavailable(unavailable).appleAnswered)
    }
}
