import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing

import TestSupport

/// The whole system as separate processes: embedded-kafka, fake-appstore, receipt-ingest and receipt-verifier(s),
/// plus an in-process producer (for high-volume backends that skip the ingest) and collectors of the results and DLQ.
final class Pipeline: Sendable {
    static let topics = [
        "RECEIPTS_TOPIC": "iap.receipts.submitted", "RESULTS_TOPIC": "iap.receipts.results",
        "RETRY_TOPIC": "iap.receipts.retry", "DLQ_TOPIC": "iap.receipts.dlq",
        "NOTIFICATIONS_TOPIC": "iap.notifications.submitted", "EVENTS_TOPIC": "iap.purchase.events",
    ]

    let kafka: EmbeddedKafkaProcess
    let fake: FakeAppStoreProcess
    let ingest: ServiceProcess?
    let producer: KafkaProducer
    let results: TopicCollector
    let deadLetters: TopicCollector
    let verifierEnvironment: [String: String]
    private let verifiers = Locked<[ServiceProcess]>([])
    private let crashed = Locked<Set<ObjectIdentifier>>([])

    private init(
        kafka: EmbeddedKafkaProcess, fake: FakeAppStoreProcess, ingest: ServiceProcess?, producer: KafkaProducer,
        results: TopicCollector, deadLetters: TopicCollector, verifierEnvironment: [String: String]
    ) {
        self.kafka = kafka
        self.fake = fake
        self.ingest = ingest
        self.producer = producer
        self.results = results
        self.deadLetters = deadLetters
        self.verifierEnvironment = verifierEnvironment
    }

    /// Starts Kafka, the fake App Store (`fakeArguments`), the ingest when `withIngest`, and `verifiers` verifiers.
    static func start(
        verifiers: Int = 1, fakeArguments: [String] = ["--latency-ms", "5"], withIngest: Bool = false,
        verifierSettings: [String: String] = [:]
    ) async throws -> Pipeline {
        let kafka = try await EmbeddedKafkaProcess.start(
            topics: [
                ("iap.receipts.submitted", 4), ("iap.receipts.results", 4), ("iap.receipts.retry", 4),
                ("iap.receipts.dlq", 1), ("iap.notifications.submitted", 4), ("iap.purchase.events", 4),
            ])
        let fake = try await FakeAppStoreProcess.start(arguments: fakeArguments)
        let base = kafka.environment.merging(topics) { $1 }
        let verifierEnvironment = base.merging(fake.environment) { $1 }.merging([
            "ALLOWED_BUNDLE_IDS": "com.example.game",
            // Quick group changes: the mock cluster waits session.timeout.ms - 1 s for members to (re)join.
            "KAFKA_SESSION_TIMEOUT_MS": "6000", "KAFKA_HEARTBEAT_INTERVAL_MS": "500",
            "APPLE_TIMEOUT_MS": "5000", "LOG_LEVEL": "info",
        ]) { $1 }.merging(verifierSettings) { $1 }
        let ingest = withIngest ? try await ServiceProcess.start(.ingest, environment: base) : nil
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": kafka.bootstrapServers]),
            logger: Logger(label: "test-producer", threshold: .error))
        let pipeline = Pipeline(
            kafka: kafka, fake: fake, ingest: ingest, producer: producer,
            results: try TopicCollector(bootstrapServers: kafka.bootstrapServers, topic: "iap.receipts.results"),
            deadLetters: try TopicCollector(bootstrapServers: kafka.bootstrapServers, topic: "iap.receipts.dlq"),
            verifierEnvironment: verifierEnvironment)
        for index in 0..<verifiers {
            _ = try await pipeline.startVerifier(name: "receipt-verifier-\(index)")
        }
        return pipeline
    }

    @discardableResult
    func startVerifier(name: String = "receipt-verifier") async throws -> ServiceProcess {
        let verifier = try await ServiceProcess.start(.verifier, environment: verifierEnvironment, name: name)
        verifiers.withLock { $0.append(verifier) }
        return verifier
    }

    var runningVerifiers: [ServiceProcess] { verifiers.withLock { $0 }.filter { $0.process.isRunning } }

    /// SIGKILLs `verifier` on purpose (a crash the test causes); every other verifier must still be running at
    /// shutdown.
    func crash(_ verifier: ServiceProcess) async {
        _ = crashed.withLock { $0.insert(ObjectIdentifier(verifier)) }
        await verifier.kill()
    }

    /// POSTs a submission to the ingest; returns the submission id of its 202.
    func submitThroughIngest(_ body: [String: Any]) async throws -> String {
        let ingest = try #require(ingest, "the pipeline was started without the ingest")
        let response = try await TestHTTPClient.postJSON(ingest.url("/v1/receipts"), body)
        try #require(response.status == 202, "ingest answered \(response.status): \(response.text)")
        return try #require(response.jsonObject?["submission_id"] as? String)
    }

    /// Produces a submission straight to the submissions topic, as a high-volume backend does.
    func produce(_ submission: Submission) async throws {
        _ = try await producer.send(
            topic: "iap.receipts.submitted", key: Array(submission.partitionKey.utf8),
            value: SubmissionJSON.encode(submission),
            headers: [KafkaHeader(name: MessageHeaders.submissionId, string: submission.submissionId)])
    }

    /// Produces raw bytes to the submissions topic (malformed messages).
    func produceRaw(_ value: String, key: String?) async throws {
        _ = try await producer.send(topic: "iap.receipts.submitted", key: key.map { Array($0.utf8) }, value: Array(value.utf8))
    }

    /// Waits until every id in `ids` has a result.
    func waitForResults(_ ids: some Collection<String>, timeout: Duration = .seconds(60)) async -> Bool {
        let wanted = Set(ids)
        return await eventually(timeout: timeout, interval: .milliseconds(200)) {
            wanted.isSubset(of: results.answeredIds())
        }
    }

    /// Stops everything; verifiers and the ingest must exit 0 on SIGTERM.
    func shutdown() async {
        // A verifier that died by itself (not crashed by the test) is a failure even if the others covered for it.
        let crashedOnPurpose = crashed.withLock { $0 }
        for verifier in verifiers.withLock({ $0 }) where !crashedOnPurpose.contains(ObjectIdentifier(verifier)) {
            #expect(verifier.process.isRunning, "\(verifier.process.name) died during the test: \(verifier.process.stderrTail())")
        }
        for verifier in runningVerifiers {
            let status = await verifier.stop()
            #expect(status == 0, "verifier exited \(String(describing: status)): \(verifier.process.stderrTail())")
        }
        if let ingest {
            let status = await ingest.stop()
            #expect(status == 0, "ingest exited \(String(describing: status))")
        }
        results.close()
        deadLetters.close()
        producer.close(timeout: .seconds(5))
        _ = await fake.stop()
        _ = await kafka.stop()
    }
}

/// A submission with a fresh id for `receipt`.
func submission(
    _ id: String, receipt: String, expectedTransactionId: String? = nil, expectedProductId: String? = nil
) -> Submission {
    Submission(
        submissionId: id, receiptData: receipt, orderId: "order-\(id)", userId: "user-\(id)",
        expectedTransactionId: expectedTransactionId, expectedProductId: expectedProductId,
        submittedAtMs: SystemTime.wallMilliseconds())
}
