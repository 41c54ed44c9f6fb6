import Foundation

/// One of the three services run as a separate process (`receipt-ingest`, `receipt-verifier`, `receipt-ledger`),
/// its HTTP endpoint on an ephemeral loopback port. The services share one runtime (`ServiceRuntime`), so one
/// wrapper starts, probes and stops them all: `start` waits for the start-up log line that names the bound port and,
/// when asked, for `/readyz` 200; `stop()` sends SIGTERM (then SIGKILL after the grace), `kill()` SIGKILL at once,
/// and at the latest the process is stopped when released.
public final class ServiceProcess: Sendable {
    /// What differs between the services: the executable, the listen variable, the log line naming the port.
    public struct Kind: Sendable {
        public let executable: String
        /// Set to `127.0.0.1:0` unless the environment sets it.
        public let listenVariable: String
        /// The `msg` of the JSON log line that carries the bound port, and the port's field in it.
        public let startedMessage: String
        public let portField: String
        public let startTimeout: Duration
        public let readyTimeout: Duration
        public let stopGrace: Duration

        /// The HTTP API; the port from the HTTP server's "listening" line.
        public static let ingest = Kind(
            executable: "receipt-ingest", listenVariable: "INGEST_LISTEN", startedMessage: "HTTP server listening",
            portField: "port", startTimeout: .seconds(15), readyTimeout: .seconds(15), stopGrace: .seconds(15))
        /// Health and metrics only; ready once its consumer is part of the group.
        public static let verifier = Kind(
            executable: "receipt-verifier", listenVariable: "VERIFIER_METRICS_LISTEN",
            startedMessage: "receipt-verifier started", portField: "metrics_port", startTimeout: .seconds(20),
            readyTimeout: .seconds(20), stopGrace: .seconds(30))
        /// The ledger's API; ready once the database is prepared and the consumer connected.
        public static let ledger = Kind(
            executable: "receipt-ledger", listenVariable: "LEDGER_LISTEN", startedMessage: "receipt-ledger started",
            portField: "port", startTimeout: .seconds(20), readyTimeout: .seconds(30), stopGrace: .seconds(30))
    }

    public let kind: Kind
    public let process: ManagedProcess
    /// The bound HTTP port (API, or the verifier's health and metrics).
    public let port: UInt16

    private init(kind: Kind, process: ManagedProcess, port: UInt16) {
        self.kind = kind
        self.process = process
        self.port = port
    }

    /// Starts the service `kind` with `environment` (Kafka settings at least; the verifier its App Store settings
    /// and `ALLOWED_BUNDLE_IDS`, the ledger `LEDGER_DATABASE_URL`) and waits until it logged its port and, when
    /// `waitUntilReady`, until `/readyz` answers 200.
    public static func start(
        _ kind: Kind, environment: [String: String], name: String? = nil, waitUntilReady: Bool = true
    ) async throws -> ServiceProcess {
        var environment = environment
        environment[kind.listenVariable] = environment[kind.listenVariable] ?? "127.0.0.1:0"
        let process = try ManagedProcess(
            executable: try TestBinaries.path(kind.executable), environment: environment, name: name ?? kind.executable)
        let line = try await process.waitForStderrLine(timeout: kind.startTimeout) {
            $0.contains("\"msg\":\"\(kind.startedMessage)\"")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let port = object[kind.portField] as? Int, port > 0, port <= Int(UInt16.max)
        else {
            throw TestSupportError("\(kind.executable) logged no usable port: \(line)")
        }
        let service = ServiceProcess(kind: kind, process: process, port: UInt16(port))
        if waitUntilReady {
            let ready = await eventually(timeout: kind.readyTimeout) {
                (try? await TestHTTPClient.send("GET", service.url("/readyz"), timeout: 2))?.status == 200
            }
            guard ready else {
                throw TestSupportError(
                    "\(kind.executable) never became ready; stderr tail:\n\(process.stderrTail())")
            }
        }
        return service
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// The sum of every sample of metric `name` whose labels contain all of `labels`, from `/metrics`; nil when the
    /// scrape fails.
    public func metricSum(_ name: String, labels: [String] = []) async -> Double? {
        await scrapedMetricSum(url("/metrics"), name, labels: labels)
    }

    /// SIGTERM and wait (the kind's grace by default); the exit status (0 expected), or nil when it had to be killed.
    @discardableResult
    public func stop(grace: Duration? = nil) async -> Int32? {
        await process.terminate(grace: grace ?? kind.stopGrace)
    }

    /// SIGKILL: a crash, with no chance to drain.
    public func kill() async {
        process.send(signal: SIGKILL)
        _ = await process.waitForExit(timeout: .seconds(10))
    }
}
