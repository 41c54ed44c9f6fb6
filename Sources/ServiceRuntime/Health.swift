import HTTPServer
import ServiceSupport

/// Whether a service is alive (`/healthz`: restart it when not) and ready for work (`/readyz`: send it traffic,
/// keep it in the group), each with the reason when not. The same value and the same JSON for every service.
public struct Health: Sendable, Equatable {
    /// nil when alive, else why not (a fatal Kafka error, a stuck engine): the process should be restarted.
    public var liveness: String?
    /// nil when ready, else why not (draining, not connected yet, a dependency down).
    public var readiness: String?

    public init(liveness: String? = nil, readiness: String? = nil) {
        self.liveness = liveness
        self.readiness = readiness
    }

    /// Not alive implies not ready, with the same reason.
    public static func unhealthy(_ reason: String) -> Health { Health(liveness: reason, readiness: reason) }

    /// `/healthz`: `200 {"status":"ok"}`, or `503 {"status":"unhealthy","reason":...}`.
    public var livenessResponse: HTTPResponse {
        guard let problem = liveness else { return .json(200, #"{"status":"ok"}"#) }
        return .json(503, #"{"status":"unhealthy","reason":\#(JSONText.quoted(problem))}"#)
    }

    /// `/readyz`: `200 {"status":"ready","ready":true}`, or `503 {"status":"not_ready","ready":false,"reason":...}`
    /// (`ready` is the ingest's documented field, schemas/openapi.yaml `Readiness`; `status` the other services').
    public var readinessResponse: HTTPResponse {
        guard let problem = readiness else { return .json(200, #"{"status":"ready","ready":true}"#) }
        return .json(503, #"{"status":"not_ready","ready":false,"reason":\#(JSONText.quoted(problem))}"#)
    }
}

/// `/healthz`, `/readyz` and `/metrics` (Prometheus text) of a service, the same for all: the services' HTTP handlers
/// ask it first and serve their own routes when it answers nil.
public struct HealthEndpoints: Sendable {
    public static let paths: Set<String> = ["/healthz", "/readyz", "/metrics"]

    public let registry: MetricsRegistry
    public let health: @Sendable () -> Health

    public init(registry: MetricsRegistry, health: @escaping @Sendable () -> Health) {
        self.registry = registry
        self.health = health
    }

    /// The answer to `request` when its path is one of `paths` (405 for a method other than GET or HEAD), else nil.
    public func response(to request: HTTPRequest) -> HTTPResponse? {
        guard Self.paths.contains(request.path) else { return nil }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .json(
                405, #"{"error":{"code":"method_not_allowed","message":"use GET"}}"#, headers: [("Allow", "GET")])
        }
        switch request.path {
        case "/healthz": return health().livenessResponse
        case "/readyz": return health().readinessResponse
        default: return Self.metricsResponse(registry)
        }
    }

    /// `/metrics`: the registry in Prometheus' text format.
    public static func metricsResponse(_ registry: MetricsRegistry) -> HTTPResponse {
        .text(200, registry.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}

/// An HTTP handler that serves only `HealthEndpoints` (the verifier's `VERIFIER_METRICS_LISTEN`); anything else 404.
public struct HealthHandler: HTTPHandler {
    public let endpoints: HealthEndpoints

    public init(endpoints: HealthEndpoints) {
        self.endpoints = endpoints
    }

    public func handle(_ request: HTTPRequest, respond: @escaping HTTPResponder) {
        respond(
            endpoints.response(to: request)
                ?? .json(404, #"{"error":{"code":"not_found","message":"try /healthz, /readyz or /metrics"}}"#))
    }
}
