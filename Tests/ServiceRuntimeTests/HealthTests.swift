import HTTPServer
import ServiceRuntime
import ServiceSupport
import Synchronization
import Testing

/// One `/healthz` and `/readyz` JSON shape for the three services.
@Suite struct HealthTests {
    func answer(_ endpoints: HealthEndpoints, _ method: String, _ path: String) -> HTTPResponse? {
        endpoints.response(to: HTTPRequest(method: method, path: path))
    }

    func body(_ response: HTTPResponse?) -> String { String(decoding: response?.body ?? [], as: UTF8.self) }

    @Test func aliveAndReadyAnswerTheSameShapeEverywhere() {
        let endpoints = HealthEndpoints(registry: MetricsRegistry()) { Health() }
        #expect(answer(endpoints, "GET", "/healthz")?.status == 200)
        #expect(body(answer(endpoints, "GET", "/healthz")) == #"{"status":"ok"}"#)
        #expect(answer(endpoints, "GET", "/readyz")?.status == 200)
        #expect(body(answer(endpoints, "GET", "/readyz")) == #"{"status":"ready","ready":true}"#)
    }

    @Test func notReadyAndUnhealthyCarryTheirReason() {
        let state = Locked(Health(readiness: "draining"))
        let endpoints = HealthEndpoints(registry: MetricsRegistry()) { state.withLock { $0 } }
        #expect(answer(endpoints, "GET", "/healthz")?.status == 200)
        #expect(answer(endpoints, "GET", "/readyz")?.status == 503)
        #expect(
            body(answer(endpoints, "GET", "/readyz")) == #"{"status":"not_ready","ready":false,"reason":"draining"}"#)
        state.withLock { $0 = .unhealthy("fatal Kafka error: x") }
        #expect(answer(endpoints, "GET", "/healthz")?.status == 503)
        #expect(
            body(answer(endpoints, "GET", "/healthz")) == #"{"status":"unhealthy","reason":"fatal Kafka error: x"}"#)
        #expect(answer(endpoints, "GET", "/readyz")?.status == 503)
    }

    @Test func metricsOtherMethodsAndOtherPaths() {
        let registry = MetricsRegistry()
        registry.counter("x_total", help: "x").increment()
        let endpoints = HealthEndpoints(registry: registry) { Health() }
        #expect(body(answer(endpoints, "GET", "/metrics")).contains("x_total 1"))
        #expect(answer(endpoints, "POST", "/readyz")?.status == 405)
        #expect(answer(endpoints, "GET", "/v1/users/u") == nil)
        let handler = HealthHandler(endpoints: endpoints)
        let box = Locked<HTTPResponse?>(nil)
        handler.handle(HTTPRequest(method: "GET", path: "/v1/users/u")) { response in box.withLock { $0 = response } }
        #expect(box.withLock { $0 }?.status == 404)
    }
}
