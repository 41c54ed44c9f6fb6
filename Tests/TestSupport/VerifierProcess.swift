import Foundation

/// The `receipt-verifier` executable run as a separate process, its health and metrics on an ephemeral loopback port.
/// Stopped (SIGTERM, then SIGKILL) by `stop()`, killed at once by `kill()`, and at the latest when released.
public final class VerifierProcess: Sendable {
    public let process: ManagedProcess
    /// The bound health/metrics port (from the "receipt-verifier started" log line).
    public let metricsPort: UInt16

    private init(process: ManagedProcess, metricsPort: UInt16) {
        self.process = process
        self.metricsPort = metricsPort
    }

    /// Starts `receipt-verifier` with `environment` (Kafka, App Store and ALLOWED_BUNDLE_IDS settings at least) and
    /// waits until it has started and its consumer is part of the group (`/readyz` answers 200).
    public static func start(environment: [String: String], name: String = "receipt-verifier") async throws
        -> VerifierProcess
    {
        var environment = environment
        environment["VERIFIER_METRICS_LISTEN"] = environment["VERIFIER_METRICS_LISTEN"] ?? "127.0.0.1:0"
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-verifier"), environment: environment, name: name)
        let line = try await process.waitForStderrLine(timeout: .seconds(20)) {
            $0.contains("\"msg\":\"receipt-verifier started\"")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let port = object["metrics_port"] as? Int, port > 0, port <= Int(UInt16.max)
        else {
            throw TestSupportError("receipt-verifier logged no usable metrics port: \(line)")
        }
        let verifier = VerifierProcess(process: process, metricsPort: UInt16(port))
        let ready = await eventually(timeout: .seconds(20)) {
            (try? await TestHTTPClient.send("GET", verifier.url("/readyz"), timeout: 2))?.status == 200
        }
        guard ready else {
            throw TestSupportError("receipt-verifier never became ready; stderr tail:\n\(process.stderrTail())")
        }
        return verifier
    }

    /// `http://127.0.0.1:<metrics port><path>`.
    public func url(_ path: String) -> String {
        "http://127.0.0.1:\(metricsPort)\(path)"
    }

    /// The sum of every sample of metric `name` whose labels contain all of `labels`, from `/metrics`; nil when the
    /// scrape fails.
    public func metricSum(_ name: String, labels: [String] = []) async -> Double? {
        await scrapedMetricSum(url("/metrics"), name, labels: labels)
    }

    /// SIGTERM and wait; the exit status (0 expected), or nil when it had to be killed.
    @discardableResult
    public func stop(grace: Duration = .seconds(30)) async -> Int32? {
        await process.terminate(grace: grace)
    }

    /// SIGKILL: a crash, with no chance to drain.
    public func kill() async {
        process.send(signal: SIGKILL)
        _ = await process.waitForExit(timeout: .seconds(10))
    }
}
