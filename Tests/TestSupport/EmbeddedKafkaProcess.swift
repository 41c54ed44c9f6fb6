import Foundation

/// The `embedded-kafka` executable run as a separate process: an in-memory Kafka cluster that other processes (and
/// clients in the test process) reach over the real Kafka protocol. Stopped (SIGTERM, then SIGKILL) by `stop()` or
/// when released.
public final class EmbeddedKafkaProcess: Sendable {
    public let process: ManagedProcess
    /// The cluster's bootstrap list, as printed by the process (`127.0.0.1:port,...`).
    public let bootstrapServers: String

    private init(process: ManagedProcess, bootstrapServers: String) {
        self.process = process
        self.bootstrapServers = bootstrapServers
    }

    /// Starts a cluster of `brokers` brokers with `topics` created and waits for its bootstrap list.
    public static func start(brokers: Int = 1, topics: [(name: String, partitions: Int)] = []) async throws
        -> EmbeddedKafkaProcess
    {
        var arguments = ["--brokers", String(brokers)]
        if !topics.isEmpty {
            arguments += ["--topics", topics.map { "\($0.name):\($0.partitions)" }.joined(separator: ",")]
        }
        let process = try ManagedProcess(
            executable: try TestBinaries.path("embedded-kafka"), arguments: arguments, name: "embedded-kafka")
        let prefix = "KAFKA_BOOTSTRAP_SERVERS="
        let line = try await process.waitForStdoutLine(timeout: .seconds(10)) { $0.hasPrefix(prefix) }
        let servers = String(line.dropFirst(prefix.count))
        guard !servers.isEmpty else { throw TestSupportError("embedded-kafka printed an empty bootstrap list") }
        return EmbeddedKafkaProcess(process: process, bootstrapServers: servers)
    }

    /// The environment a service needs to use this cluster: its bootstrap list, and the short fetch wait the mock
    /// cluster needs (it holds every fetch for the full `fetch.wait.max.ms`, librdkafka's 500 ms by default, where a
    /// real broker answers as soon as data arrives; the services keep librdkafka's default).
    public var environment: [String: String] {
        ["KAFKA_BOOTSTRAP_SERVERS": bootstrapServers, "KAFKA_FETCH_WAIT_MAX_MS": "10"]
    }

    /// SIGTERM and wait; returns the exit status (0 expected) or nil when it had to be killed.
    @discardableResult
    public func stop() async -> Int32? {
        await process.terminate(grace: .seconds(5))
    }
}
