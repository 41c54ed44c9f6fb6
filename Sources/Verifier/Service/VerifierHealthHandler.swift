import HTTPServer
import ServiceSupport

/// `/healthz` (alive), `/readyz` (ready for work), `/metrics` (Prometheus text) on `VERIFIER_METRICS_LISTEN`.
struct VerifierHealthHandler: HTTPHandler {
    let registry: MetricsRegistry
    /// nil when alive, else why not (a fatal Kafka error).
    let liveness: @Sendable () -> String?
    /// nil when ready, else why not.
    let readiness: @Sendable () -> String?

    func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        let known = ["/healthz", "/readyz", "/metrics"]
        guard known.contains(request.path) else {
            respond(.json(404, #"{"error":{"code":"not_found","message":"try /healthz, /readyz or /metrics"}}"#))
            return
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            respond(
                .json(405, #"{"error":{"code":"method_not_allowed","message":"use GET"}}"#, headers: [("Allow", "GET")])
            )
            return
        }
        switch request.path {
        case "/healthz":
            if let problem = liveness() {
                respond(.json(503, #"{"status":"unhealthy","reason":\#(JSONText.quoted(problem))}"#))
            } else {
                respond(.json(200, #"{"status":"ok"}"#))
            }
        case "/readyz":
            if let problem = readiness() {
                respond(.json(503, #"{"status":"not_ready","reason":\#(JSONText.quoted(problem))}"#))
            } else {
                respond(.json(200, #"{"status":"ready"}"#))
            }
        default:
            respond(.text(200, registry.render(), contentType: "text/plain; version=0.0.4; charset=utf-8"))
        }
    }
}
