import Foundation

/// The `receipt-ingest` executable run as a separate process on an ephemeral loopback port, for integration tests.
/// Stopped (SIGTERM, then SIGKILL) by `stop()` or, at the latest, when released.
public final class IngestProcess: Sendable {
    public let process: ManagedProcess
    /// The bound HTTP port (read from the "HTTP server listening" log line).
    public let port: UInt16

    private init(process: ManagedProcess, port: UInt16) {
        self.process = process
        self.port = port
    }

    /// Starts `receipt-ingest` with `environment` (which needs at least `KAFKA_BOOTSTRAP_SERVERS`) listening on
    /// 127.0.0.1 port 0, and waits until it listens and, when `waitUntilReady`, until `/readyz` answers 200.
    public static func start(environment: [String: String], waitUntilReady: Bool = true) async throws -> IngestProcess {
        var environment = environment
        environment["INGEST_LISTEN"] = environment["INGEST_LISTEN"] ?? "127.0.0.1:0"
        let process = try ManagedProcess(
            executable: try TestBinaries.path("receipt-ingest"), environment: environment, name: "receipt-ingest")
        let line = try await process.waitForStderrLine(timeout: .seconds(15)) {
            $0.contains("\"msg\":\"HTTP server listening\"")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let port = object["port"] as? Int, port > 0, port <= Int(UInt16.max)
        else {
            throw TestSupportError("receipt-ingest logged no usable port: \(line)")
        }
        let ingest = IngestProcess(process: process, port: UInt16(port))
        if waitUntilReady {
            let ready = await eventually(timeout: .seconds(15)) {
                (try? await TestHTTPClient.send("GET", ingest.url("/readyz"), timeout: 2))?.status == 200
            }
            guard ready else {
                throw TestSupportError("receipt-ingest never became ready; stderr tail:\n\(process.stderrTail())")
            }
        }
        return ingest
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// SIGTERM and wait; returns the exit status (0 expected) or nil when it had to be killed.
    @discardableResult
    public func stop(grace: Duration = .seconds(15)) async -> Int32? {
        await process.terminate(grace: grace)
    }
}
