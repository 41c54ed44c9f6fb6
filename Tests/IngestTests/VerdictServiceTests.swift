import Dispatch
import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Testing
import TestSupport

/// Verdict endpoints of the service in-process over loopback, with a fake publisher and a fake result feed.
@Suite("ingest verdicts (in-process, fake Kafka)")
struct VerdictServiceTests {
    struct Running {
        let service: IngestService
        let publisher: FakePublisher
        let feed: FakeResultFeed
        let metrics: MetricsRegistry

        var port: UInt16 { service.port }
    }

    private func start(
        _ publisher: FakePublisher = FakePublisher(), feed: FakeResultFeed = FakeResultFeed(),
        configure: (inout IngestSettings) -> Void = { _ in }
    ) throws -> Running {
        var settings = IngestSettings(
            kafka: KafkaConfiguration(), listen: ListenAddress(host: "127.0.0.1", port: 0), httpThreads: 1)
        configure(&settings)
        let metrics = MetricsRegistry()
        let service = IngestService(
            settings: settings, publisher: publisher, resultFeed: feed,
            logger: Logger(label: "verdict-test", threshold: .error, sink: DiscardingSink()), metrics: metrics)
        try service.start()
        return Running(service: service, publisher: publisher, feed: feed, metrics: metrics)
    }

    private func post(_ port: UInt16, _ target: String = "/v1/receipts", id: String) throws -> HTTPTestResponse {
        try HTTPTestConnection(port: port).request(
            "POST", target, headers: [("Content-Type", "application/json")],
            body: Array(#"{"receipt_data":"aGVsbG8=","submission_id":"\#(id)"}"#.utf8))
    }

    private func get(_ port: UInt16, _ id: String, headers: [(String, String)] = []) throws -> HTTPTestResponse {
        try HTTPTestConnection(port: port).request("GET", "/v1/receipts/\(id)", headers: headers)
    }

    private func errorCode(_ response: HTTPTestResponse) -> String? {
        (response.jsonObject?["error"] as? [String: Any])?["code"] as? String
    }

    @Test("GET: 404 when unknown, 202 pending after this instance accepted it, 200 with the exact result")
    func lookup() throws {
        let running = try start()
        defer { running.service.drain() }
        let unknown = try get(running.port, "g-1")
        #expect(unknown.status == 404)
        #expect(errorCode(unknown) == "unknown_submission")

        #expect(try post(running.port, id: "g-1").status == 202)
        let pending = try get(running.port, "g-1")
        #expect(pending.status == 202)
        #expect(pending.jsonObject?["status"] as? String == "pending")
        #expect(pending.jsonObject?["submission_id"] as? String == "g-1")

        let result = try ResultFixtures.bytes("g-1")
        running.feed.emit(result)
        let found = try get(running.port, "g-1")
        #expect(found.status == 200)
        #expect(found.body == result)
        #expect(found.headers["content-type"] == "application/json")
        // A result produced for a submission made elsewhere is answered too.
        let elsewhere = try ResultFixtures.bytes("made-elsewhere", outcome: .rejected)
        running.feed.emit(elsewhere)
        #expect(try get(running.port, "made-elsewhere").body == elsewhere)

        // The answers match the published API (independent validator).
        let validation = try SchemaValidator.errors([
            .init(schema: "openapi.yaml#/components/schemas/Error", instance: unknown.text),
            .init(schema: "openapi.yaml#/components/schemas/Pending", instance: pending.text),
            .init(schema: "openapi.yaml#/components/schemas/VerificationResult", instance: found.text),
        ])
        #expect(validation.allSatisfy { $0.isEmpty }, "\(validation)")

        let bad = try get(running.port, "a%20b")
        #expect(bad.status == 400)
        #expect(errorCode(bad) == "invalid_submission_id")
        #expect(try HTTPTestConnection(port: running.port).request("GET", "/v1/receipts/a/b").status == 404)
        #expect(try HTTPTestConnection(port: running.port).request("POST", "/v1/receipts/g-1").status == 405)
    }

    @Test("GET needs the API key when keys are configured")
    func lookupAuthorization() throws {
        let running = try start { $0.apiKeys = [APIKey(key: "k1")] }
        defer { running.service.drain() }
        running.feed.emit(try ResultFixtures.bytes("a-1"))
        #expect(try get(running.port, "a-1").status == 401)
        #expect(try get(running.port, "a-1", headers: [("Authorization", "Bearer k1")]).status == 200)
    }

    @Test("wait_ms: 200 with the result when it arrives within the wait")
    func waitGetsVerdict() throws {
        let running = try start()
        defer { running.service.drain() }
        let result = try ResultFixtures.bytes("w-1")
        let feed = running.feed
        let started = SystemTime.monotonicNanoseconds()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { feed.emit(result) }
        let response = try post(running.port, "/v1/receipts?wait_ms=5000", id: "w-1")
        #expect(response.status == 200)
        #expect(response.body == result)
        #expect(SystemTime.secondsSince(started) < 4)
        #expect(running.publisher.published.count == 1)
        #expect(running.metrics.render().contains("ingest_result_waits_total{outcome=\"verdict\"} 1"))
    }

    @Test("wait_ms: 202 with the id once the wait passes without a result; GET then says pending")
    func waitTimesOut() throws {
        let running = try start()
        defer { running.service.drain() }
        let started = SystemTime.monotonicNanoseconds()
        let response = try post(running.port, "/v1/receipts?wait_ms=200", id: "w-2")
        let elapsed = SystemTime.secondsSince(started)
        #expect(response.status == 202)
        #expect(response.jsonObject?["submission_id"] as? String == "w-2")
        #expect(elapsed >= 0.19 && elapsed < 3)
        #expect(try get(running.port, "w-2").status == 202)
        #expect(running.metrics.render().contains("ingest_result_waits_total{outcome=\"timeout\"} 1"))
    }

    @Test("wait_ms: the wait starts only after Kafka acknowledged; no 200 or 202 before")
    func waitAfterAcknowledgement() throws {
        let publisher = FakePublisher(.hold)
        let running = try start(publisher)
        defer { running.service.drain() }
        let connection = try HTTPTestConnection(port: running.port)
        try connection.sendRequest(
            "POST", "/v1/receipts?wait_ms=5000", headers: [("Content-Type", "application/json")],
            body: Array(#"{"receipt_data":"aGVsbG8=","submission_id":"w-3"}"#.utf8))
        #expect(waitUntil { publisher.heldCount == 1 })
        #expect(try get(running.port, "w-3").status == 404)
        publisher.completeHeld()
        #expect(waitUntil { (try? get(running.port, "w-3").status) == 202 })
        let result = try ResultFixtures.bytes("w-3")
        running.feed.emit(result)
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.body == result)
    }

    @Test("invalid wait_ms is 400 and nothing is published", arguments: ["abc", "-1", "1.5", "30001", "99999999999"])
    func invalidWait(value: String) throws {
        let running = try start()
        defer { running.service.drain() }
        let response = try post(running.port, "/v1/receipts?wait_ms=\(value)", id: "bad-wait")
        #expect(response.status == 400)
        #expect(errorCode(response) == "invalid_wait_ms")
        #expect(running.publisher.published.isEmpty)
    }

    @Test("INGEST_MAX_WAIT_MS bounds wait_ms; 0 disables waiting but wait_ms=0 is fine")
    func maximumWait() throws {
        let running = try start { $0.maxWaitMs = 0 }
        defer { running.service.drain() }
        #expect(try post(running.port, "/v1/receipts?wait_ms=1", id: "m-1").status == 400)
        #expect(try post(running.port, "/v1/receipts?wait_ms=0", id: "m-2").status == 202)
    }

    @Test("a resubmission with a known result is answered from the index without writing to Kafka; another id is")
    func resubmission() throws {
        let running = try start()
        defer { running.service.drain() }
        #expect(try post(running.port, id: "r-1").status == 202)
        let result = try ResultFixtures.bytes("r-1")
        running.feed.emit(result)
        let again = try post(running.port, id: "r-1")
        #expect(again.status == 200)
        #expect(again.body == result)
        let waiting = try post(running.port, "/v1/receipts?wait_ms=1000", id: "r-1")
        #expect(waiting.status == 200)
        #expect(running.publisher.published.count == 1)
        #expect(try post(running.port, id: "r-2").status == 202)
        #expect(running.publisher.published.count == 2)
        #expect(running.metrics.render().contains("ingest_resubmissions_answered_from_index_total 2"))
    }

    @Test("/readyz is 503 until the feed caught up with its read-back")
    func readiness() throws {
        let feed = FakeResultFeed(caughtUp: false)
        let running = try start(feed: feed)
        defer { running.service.drain() }
        let notReady = try HTTPTestConnection(port: running.port).request("GET", "/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.text.contains("reading back recent results"))
        feed.setCaughtUp(true)
        #expect(try HTTPTestConnection(port: running.port).request("GET", "/readyz").status == 200)
    }

    @Test("a message that is not a result is counted, logged and skipped; the feed goes on")
    func undecodableMessage() throws {
        let running = try start()
        defer { running.service.drain() }
        running.feed.emit(Array("{\"not\":\"a result\"}".utf8))
        let result = try ResultFixtures.bytes("after-bad")
        running.feed.emit(result)
        #expect(try get(running.port, "after-bad").body == result)
        let scrape = running.metrics.render()
        #expect(scrape.contains("ingest_result_messages_total{result=\"undecodable\"} 1"))
        #expect(scrape.contains("ingest_result_messages_total{result=\"indexed\"} 1"))
    }

    @Test("/metrics: index size, lookups by result, waits by outcome")
    func metrics() throws {
        let running = try start()
        defer { running.service.drain() }
        running.feed.emit(try ResultFixtures.bytes("m-1"))
        _ = try get(running.port, "m-1")
        _ = try get(running.port, "nope")
        _ = try post(running.port, id: "m-2")
        _ = try get(running.port, "m-2")
        let text = try HTTPTestConnection(port: running.port).request("GET", "/metrics").text
        #expect(text.contains("ingest_result_index_entries 1"))
        #expect(text.contains("ingest_result_index_pending 1"))
        #expect(text.contains("ingest_result_lookups_total{result=\"hit\"} 1"))
        #expect(text.contains("ingest_result_lookups_total{result=\"miss\"} 1"))
        #expect(text.contains("ingest_result_lookups_total{result=\"pending\"} 1"))
        #expect(text.contains("ingest_http_requests_total{route=\"/v1/receipts/{submission_id}\",code=\"200\"}"))
    }

    @Test("drain answers waiting requests 202 at once and closes the feed")
    func drainReleasesWaiters() throws {
        let running = try start()
        let connection = try HTTPTestConnection(port: running.port, timeoutSeconds: 10)
        try connection.sendRequest(
            "POST", "/v1/receipts?wait_ms=30000", headers: [("Content-Type", "application/json")],
            body: Array(#"{"receipt_data":"aGVsbG8=","submission_id":"d-1"}"#.utf8))
        #expect(waitUntil { running.service.results.statistics.waiters == 1 })
        let started = SystemTime.monotonicNanoseconds()
        running.service.drain()
        #expect(SystemTime.secondsSince(started) < 5)
        let response = try connection.readResponse()
        #expect(response.status == 202)
        #expect(response.jsonObject?["submission_id"] as? String == "d-1")
        #expect(running.feed.isClosed)
    }
}
