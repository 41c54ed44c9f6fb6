import Foundation

/// The `receipt-ledger` executable run as a separate process, its HTTP API on an ephemeral loopback port.
/// Stopped (SIGTERM, then SIGKILL) by `stop()`, killed at once by `kill()`, and at the latest when released.
public final class LedgerProcess: Sendable {
    public let process: ManagedProcess
    /// The bound HTTP port (from the "receipt-ledger started" log line).
    public let port: UInt16

    private init(process: ManagedProcess, port: UInt16) {
        self.process = process
        self.port = port
    }

    /// Starts `receipt-ledger` with `environment` (Kafka settings and `LEDGER_DATABASE_URL` at least) and, when
    /// `waitUntilReady`, waits until `/readyz` answers 200 (database prepared, consumer connected).
    public static func start(
        environment: [String: String], name: String = "receipt-ledger", waitUntilReady: Bool = true
    ) async throws -> LedgerProcess {
        var environment = environment
        environment["LEDGER_LISTEN"] = environment["LEDGER_LISTEN"] ?? "127.0.0.1:0"
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-ledger"), environment: environment, name: name)
        let line = try await process.waitForStderrLine(timeout: .seconds(20)) {
            $0.contains("\"msg\":\"receipt-ledger started\"")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let port = object["port"] as? Int, port > 0, port <= Int(UInt16.max)
        else {
            throw TestSupportError("receipt-ledger logged no usable port: \(line)")
        }
        let ledger = LedgerProcess(process: process, port: UInt16(port))
        if waitUntilReady {
            let ready = await eventually(timeout: .seconds(30)) {
                (try? await TestHTTPClient.send("GET", ledger.url("/readyz"), timeout: 2))?.status == 200
            }
            guard ready else {
                throw TestSupportError("receipt-ledger never became ready; stderr tail:\n\(process.stderrTail())")
            }
        }
        return ledger
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
