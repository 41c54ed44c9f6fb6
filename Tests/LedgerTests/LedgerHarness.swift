import Foundation
import Kafka
import Postgres
import ServiceSupport
import Testing
import TestSupport

/// embedded-kafka, a PostgreSQL of the test's own, and `receipt-ledger` processes over them; an in-process producer
/// writes results and events onto the topics as the verifier would.
final class LedgerHarness: Sendable {
    static let resultsTopic = "iap.receipts.results"
    static let eventsTopic = "iap.purchase.events"
    static let apiKey = "ledger-test-key"

    let kafka: EmbeddedKafkaProcess
    let postgres: TestPostgresServer
    let producer: KafkaProducer
    let environment: [String: String]

    private init(kafka: EmbeddedKafkaProcess, postgres: TestPostgresServer, producer: KafkaProducer, environment: [String: String]) {
        self.kafka = kafka
        self.postgres = postgres
        self.producer = producer
        self.environment = environment
    }

    static func start(settings: [String: String] = [:]) async throws -> LedgerHarness {
        let kafka = try await EmbeddedKafkaProcess.start(topics: [(resultsTopic, 4), (eventsTopic, 4)])
        let postgres = try TestPostgresServer.start()
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers, "linger.ms": "5"]),
            logger: Logger(label: "test-producer", threshold: .error))
        let environment = kafka.environment.merging([
            "RESULTS_TOPIC": resultsTopic, "EVENTS_TOPIC": eventsTopic,
            "LEDGER_DATABASE_URL": postgres.connectionString(), "LEDGER_API_KEYS": "tests:\(apiKey)",
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500", "LOG_LEVEL": "info",
        ]) { $1 }.merging(settings) { $1 }
        return LedgerHarness(kafka: kafka, postgres: postgres, producer: producer, environment: environment)
    }

    func startLedger(name: String = "receipt-ledger", waitUntilReady: Bool = true) async throws -> ServiceProcess {
        try await ServiceProcess.start(.ledger, environment: environment, name: name, waitUntilReady: waitUntilReady)
    }

    /// Produces `values` to `topic` keyed by `key` one after the other (so they keep their order on the partition),
    /// waiting for each acknowledgement.
    func produce(_ topic: String, key: String, _ values: [[UInt8]]) async throws {
        for value in values {
            _ = try await producer.send(topic: topic, key: Array(key.utf8), value: value)
        }
    }

    func get(_ ledger: ServiceProcess, _ path: String, key: String? = apiKey) async throws -> TestHTTPResponse {
        try await TestHTTPClient.send(
            "GET", ledger.url(path), headers: key.map { ["Authorization": "Bearer \($0)"] } ?? [:], timeout: 5)
    }

    /// Any method on the ledger's API, with the test key unless `key` says otherwise.
    func send(_ ledger: ServiceProcess, _ method: String, _ path: String, key: String? = apiKey) async throws
        -> TestHTTPResponse
    {
        try await TestHTTPClient.send(
            method, ledger.url(path), headers: key.map { ["Authorization": "Bearer \($0)"] } ?? [:], timeout: 5)
    }

    /// Runs one statement on the ledger's database (what the app's own code would change, e.g. spending).
    func execute(_ sql: String) throws {
        let connection = try PostgresConnection(connectionString: postgres.connectionString())
        defer { connection.close() }
        try connection.execute(sql)
    }

    /// The first column of the first row of `sql`, an integer.
    func count(_ sql: String) throws -> Int64 {
        let connection = try PostgresConnection(connectionString: postgres.connectionString())
        defer { connection.close() }
        return try connection.execute(sql).rows[0].int64(0)
    }

    /// Every user's balance of `item`, read from the database directly.
    func balances(item: String) throws -> [String: Int64] {
        let connection = try PostgresConnection(connectionString: postgres.connectionString())
        defer { connection.close() }
        var balances: [String: Int64] = [:]
        for row in try connection.execute("SELECT user_id, amount FROM balances WHERE item = $1", [.text(item)]).rows {
            balances[try row.string("user_id")] = try row.int64("amount")
        }
        return balances
    }

    /// Messages the ledger has applied, from its stored offsets (the sum of next offsets over both topics).
    func appliedOffsets() -> Int64 {
        guard let connection = try? PostgresConnection(connectionString: postgres.connectionString(), connectTimeoutSeconds: 2),
            let row = try? connection.execute("SELECT coalesce(sum(next_offset), 0) AS applied FROM consumer_offsets")
                .rows.first
        else { return -1 }
        defer { connection.close() }
        return (try? row.int64("applied")) ?? -1
    }

    func shutdown() async {
        producer.close(timeout: .seconds(5))
        _ = await kafka.stop()
        postgres.stop()
    }
}
