import Dispatch
import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// Verdicts through real `receipt-ingest` processes against `embedded-kafka`: the test plays the verifier by
/// producing result messages (`VerificationResult` encoded with `MessageCoding`) to the results topic itself.
@Suite("receipt-ingest verdicts against embedded-kafka", .serialized)
struct VerdictProcessTests {
    static let resultsTopic = ServiceTopic.results.defaultName

    /// Produces result messages as the verifier does (key, `submission-id` and `outcome` headers).
    final class ResultProducer: Sendable {
        let producer: KafkaProducer

        init(bootstrapServers: String) throws {
            producer = try KafkaProducer(
                configuration: KafkaConfiguration(["bootstrap.servers": bootstrapServers, "linger.ms": "1"]),
                logger: Logger(label: "test-results", threshold: .error, sink: DiscardingSink()))
        }

        deinit {
            producer.close(timeout: .seconds(5))
        }

        /// Produces the result for `id` and returns its bytes once Kafka acknowledged it.
        @discardableResult
        func produce(_ id: String, outcome: Outcome = .verified, clientId: String? = nil) async throws -> [UInt8] {
            let value = try ResultFixtures.bytes(id, outcome: outcome, clientId: clientId)
            _ = try await producer.send(
                topic: VerdictProcessTests.resultsTopic, key: Array(id.utf8), value: value,
                headers: [
                    KafkaHeader(name: MessageHeaders.submissionId, string: id),
                    KafkaHeader(name: MessageHeaders.outcome, string: outcome.rawValue),
                ])
            return value
        }
    }

    private static func startCluster() async throws -> EmbeddedKafkaProcess {
        try await EmbeddedKafkaProcess.start(topics: [(ServiceTopic.receipts.defaultName, 4), (resultsTopic, 4)])
    }

    private static func startIngest(
        _ cluster: EmbeddedKafkaProcess, _ extra: [String: String] = [:]
    ) async throws -> ServiceProcess {
        try await ServiceProcess.start(.ingest, environment: cluster.environment.merging(extra) { $1 })
    }

    private static func submit(
        _ ingest: ServiceProcess, _ id: String, waitMs: Int? = nil
    ) async throws -> TestHTTPResponse {
        let query = waitMs.map { "?wait_ms=\($0)" } ?? ""
        return try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts\(query)"), ["receipt_data": "aGVsbG8=", "submission_id": id], timeout: 20)
    }

    private static func lookup(_ ingest: ServiceProcess, _ id: String) async throws -> TestHTTPResponse {
        try await TestHTTPClient.send("GET", ingest.url("/v1/receipts/\(id)"), timeout: 10)
    }

    /// Waits until `GET` on `ingest` answers `status` for `id`.
    private static func eventuallyStatus(_ ingest: ServiceProcess, _ id: String, _ status: Int) async -> Bool {
        await eventually(timeout: .seconds(10)) { (try? await lookup(ingest, id))?.status == status }
    }

    @Test("wait_ms returns the verdict when the result is produced during the wait")
    func waitGetsVerdict() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await Self.startIngest(cluster)
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)

        let started = ContinuousClock.now
        async let waiting = Self.submit(ingest, "pw-1", waitMs: 10_000)
        // Accepted (Kafka acknowledged it) and now waiting: this instance knows it as pending.
        #expect(await Self.eventuallyStatus(ingest, "pw-1", 202))
        let produced = try await results.produce("pw-1")
        let response = try await waiting
        #expect(response.status == 200)
        #expect(Array(response.body) == produced)
        #expect(ContinuousClock.now - started < .seconds(9))
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("without a result, wait_ms answers 202 in time; GET returns the verdict once it is produced")
    func waitTimesOutThenLookup() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await Self.startIngest(cluster)
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)

        let started = ContinuousClock.now
        let response = try await Self.submit(ingest, "pt-1", waitMs: 500)
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 202)
        #expect(response.jsonObject?["submission_id"] as? String == "pt-1")
        #expect(elapsed >= .milliseconds(490) && elapsed < .seconds(3), "answered after \(elapsed)")
        let pending = try await Self.lookup(ingest, "pt-1")
        #expect(pending.status == 202)
        #expect(pending.jsonObject?["status"] as? String == "pending")

        let produced = try await results.produce("pt-1", outcome: .rejected)
        #expect(await Self.eventuallyStatus(ingest, "pt-1", 200))
        #expect(Array(try await Self.lookup(ingest, "pt-1").body) == produced)
        // Resubmitting the same id now answers from the index.
        let again = try await Self.submit(ingest, "pt-1")
        #expect(again.status == 200)
        #expect(Array(again.body) == produced)
        #expect(try await Self.lookup(ingest, "never-submitted").status == 404)
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("two ingest instances both answer for a submission made through either")
    func twoInstances() async throws {
        let cluster = try await Self.startCluster()
        let first = try await Self.startIngest(cluster)
        let second = try await Self.startIngest(cluster)
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)

        #expect(try await Self.submit(first, "two-a").status == 202)
        #expect(try await Self.submit(second, "two-b").status == 202)
        // Before the verdict only the accepting instance knows the submission.
        #expect(try await Self.lookup(first, "two-a").status == 202)
        #expect(try await Self.lookup(second, "two-a").status == 404)

        let a = try await results.produce("two-a")
        let b = try await results.produce("two-b", outcome: .failed)
        for ingest in [first, second] {
            #expect(await Self.eventuallyStatus(ingest, "two-a", 200))
            #expect(await Self.eventuallyStatus(ingest, "two-b", 200))
            #expect(Array(try await Self.lookup(ingest, "two-a").body) == a)
            #expect(Array(try await Self.lookup(ingest, "two-b").body) == b)
        }
        // A request waiting on one instance gets the verdict for a submission it accepted, produced meanwhile.
        async let waiting = Self.submit(second, "two-c", waitMs: 10_000)
        #expect(await Self.eventuallyStatus(second, "two-c", 202))
        let c = try await results.produce("two-c")
        #expect(Array(try await waiting.body) == c)
        #expect(await Self.eventuallyStatus(first, "two-c", 200))
        #expect(await first.stop() == 0)
        #expect(await second.stop() == 0)
        await cluster.stop()
    }

    @Test("a restarted ingest answers for results produced before it started, right after /readyz turns 200")
    func restartReadsBack() async throws {
        let cluster = try await Self.startCluster()
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)
        // The default window (RESULT_INDEX_REPLAY_SECONDS=300), read back by offsets: embedded-kafka answers time
        // lookups with the end offset, so a time-based read-back would find nothing here.
        let before = try await Self.startIngest(cluster)
        #expect(try await Self.submit(before, "rs-1").status == 202)
        let first = try await results.produce("rs-1")
        #expect(await Self.eventuallyStatus(before, "rs-1", 200))
        #expect(await before.stop() == 0)

        // Produced while no ingest runs.
        let second = try await results.produce("rs-2", outcome: .rejected)

        let restarted = try await Self.startIngest(cluster)
        // Ready (ServiceProcess waited for /readyz) means the read-back was consumed: answered at once.
        let one = try await Self.lookup(restarted, "rs-1")
        let two = try await Self.lookup(restarted, "rs-2")
        #expect(one.status == 200)
        #expect(Array(one.body) == first)
        #expect(two.status == 200)
        #expect(Array(two.body) == second)

        // Without a read-back window the same results are unknown to a new instance.
        let fresh = try await Self.startIngest(cluster, ["RESULT_INDEX_REPLAY_SECONDS": "0"])
        #expect(try await Self.lookup(fresh, "rs-1").status == 404)
        #expect(await restarted.stop() == 0)
        #expect(await fresh.stop() == 0)
        await cluster.stop()
    }

    @Test("the read-back keeps only results younger than RESULT_INDEX_REPLAY_SECONDS (by message time)")
    func readBackWindow() async throws {
        let cluster = try await Self.startCluster()
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)
        try await results.produce("old-1")
        // Generous margins: the window is 4 s, the old result is 8 s older than the start.
        try await Task.sleep(for: .seconds(8))
        let recent = try await results.produce("recent-1")
        let ingest = try await Self.startIngest(cluster, ["RESULT_INDEX_REPLAY_SECONDS": "4"])
        #expect(Array(try await Self.lookup(ingest, "recent-1").body) == recent)
        #expect(try await Self.lookup(ingest, "old-1").status == 404)
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("a message on the results topic that is not a result is counted and skipped; later results still arrive")
    func undecodableResult() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await Self.startIngest(cluster)
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)
        _ = try await results.producer.send(
            topic: Self.resultsTopic, key: Array("junk".utf8), value: Array("{\"not\":\"a result\"}".utf8),
            headers: [KafkaHeader(name: MessageHeaders.submissionId, string: "junk-1")])
        let produced = try await results.produce("after-junk")
        #expect(await Self.eventuallyStatus(ingest, "after-junk", 200))
        #expect(Array(try await Self.lookup(ingest, "after-junk").body) == produced)
        let metrics = try await TestHTTPClient.send("GET", ingest.url("/metrics")).text
        #expect(metrics.contains("ingest_result_messages_total{result=\"undecodable\"} 1"))
        let logged = ingest.process.stderrLines.contains {
            $0.contains("result message not understood") && $0.contains("junk-1")
        }
        #expect(logged)
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("/readyz turns 200 only once every result written before the start was read back")
    func readinessWaitsForFollower() async throws {
        let cluster = try await Self.startCluster()
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)
        // Enough results that reading them back takes a while, spread over the partitions by their keys (the mock
        // cluster keeps about 5 MB per partition: 12,000 results of ~700 bytes over 4 partitions stay within it).
        let count = 12_000
        let failures = Atomic<Int>(0)
        for number in 0..<count {
            let id = "ready-\(number)"
            try results.producer.send(
                topic: Self.resultsTopic, key: Array(id.utf8), value: try ResultFixtures.bytes(id), headers: []
            ) { result in
                if case .failure = result { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(results.producer.flush(timeout: .seconds(30)))
        #expect(failures.load(ordering: .relaxed) == 0)
        // The readiness bound is far away: only catching up can make it ready.
        let ingest = try await ServiceProcess.start(
            .ingest,
            environment: cluster.environment.merging(["RESULT_INDEX_READY_TIMEOUT_SECONDS": "120"]) { $1 },
            waitUntilReady: false)
        var reasons: Set<String> = []
        let ready = await eventually(timeout: .seconds(60), interval: .milliseconds(20)) {
            guard let response = try? await TestHTTPClient.send("GET", ingest.url("/readyz")) else { return false }
            if let reason = response.jsonObject?["reason"] as? String { reasons.insert(reason) }
            return response.status == 200
        }
        #expect(ready)
        // At the moment it said ready, every result was in the index.
        let metrics = try await TestHTTPClient.send("GET", ingest.url("/metrics")).text
        #expect(metrics.contains("ingest_result_messages_total{result=\"indexed\"} \(count)\n"), "\(reasons)")
        for number in stride(from: 0, to: count, by: 997) + [count - 1] {
            #expect(try await Self.lookup(ingest, "ready-\(number)").status == 200)
        }
        #expect(ingest.process.stderrLines.contains { $0.contains("results feed caught up") })
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("named keys through the real process: each client sees its own results only")
    func tenants() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await Self.startIngest(cluster, ["INGEST_API_KEYS": "billing:k1,support:k2,k3"])
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)
        let billing = ["Authorization": "Bearer k1"]
        let support = ["Authorization": "Bearer k2"]
        let submitted = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"), ["receipt_data": "aGVsbG8=", "submission_id": "tn-1"], headers: billing)
        #expect(submitted.status == 202)
        let produced = try await results.produce("tn-1", clientId: "billing")
        #expect(await eventually(timeout: .seconds(10)) {
            (try? await TestHTTPClient.send("GET", ingest.url("/v1/receipts/tn-1"), headers: billing))?.status == 200
        })
        let own = try await TestHTTPClient.send("GET", ingest.url("/v1/receipts/tn-1"), headers: billing)
        #expect(Array(own.body) == produced)
        #expect(try await TestHTTPClient.send("GET", ingest.url("/v1/receipts/tn-1"), headers: support).status == 404)
        let reused = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"), ["receipt_data": "aGVsbG8=", "submission_id": "tn-1"], headers: support)
        #expect(reused.status == 404)
        let unnamed = try await TestHTTPClient.send(
            "GET", ingest.url("/v1/receipts/tn-1"), headers: ["Authorization": "Bearer k3"])
        #expect(Array(unnamed.body) == produced)
        #expect(ingest.process.stderrLines.contains { $0.contains("mixes named and unnamed keys") })
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("under a flood of results the index keeps its bounds, evicting the oldest")
    func floodRespectsBounds() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await Self.startIngest(cluster, ["RESULT_INDEX_MAX_ENTRIES": "100"])
        let results = try ResultProducer(bootstrapServers: cluster.bootstrapServers)
        let count = 3_000
        // One partition (one key) keeps the production order, so "oldest" is well defined.
        let failures = Atomic<Int>(0)
        for number in 0..<count {
            let id = "flood-\(number)"
            try results.producer.send(
                topic: Self.resultsTopic, key: Array("flood".utf8), value: try ResultFixtures.bytes(id), headers: []
            ) { result in
                if case .failure = result { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(results.producer.flush(timeout: .seconds(20)))
        #expect(failures.load(ordering: .relaxed) == 0)

        let indexedAll = await eventually(timeout: .seconds(15)) {
            let text = (try? await TestHTTPClient.send("GET", ingest.url("/metrics")))?.text ?? ""
            return text.contains("ingest_result_messages_total{result=\"indexed\"} \(count)")
        }
        #expect(indexedAll)
        let metrics = try await TestHTTPClient.send("GET", ingest.url("/metrics")).text
        #expect(metrics.contains("ingest_result_index_entries 100\n"))
        #expect(metrics.contains("ingest_result_index_evictions_total{reason=\"entries\"} \(count - 100)"))
        #expect(try await Self.lookup(ingest, "flood-\(count - 1)").status == 200)
        #expect(try await Self.lookup(ingest, "flood-\(count - 100)").status == 200)
        #expect(try await Self.lookup(ingest, "flood-\(count - 101)").status == 404)
        #expect(try await Self.lookup(ingest, "flood-0").status == 404)
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }
}
