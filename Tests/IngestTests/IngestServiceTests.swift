import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// The service in-process over loopback with a fake publisher: every answer of the API, and that a 202 is never
/// given before the publisher reported delivery.
@Suite("ingest service (in-process, fake Kafka)")
struct IngestServiceTests {
    struct Running {
        let service: IngestService
        let publisher: FakePublisher
        let metrics: MetricsRegistry

        var port: UInt16 { service.port }
    }

    private func start(
        _ publisher: FakePublisher = FakePublisher(), configure: (inout IngestSettings) -> Void = { _ in }
    ) throws -> Running {
        var settings = IngestSettings(
            kafka: KafkaConfiguration(), listen: ListenAddress(host: "127.0.0.1", port: 0), httpThreads: 1)
        configure(&settings)
        let metrics = MetricsRegistry()
        let service = IngestService(
            settings: settings, publisher: publisher,
            logger: Logger(label: "ingest-test", threshold: .error, sink: DiscardingSink()), metrics: metrics)
        try service.start()
        return Running(service: service, publisher: publisher, metrics: metrics)
    }

    private func post(_ port: UInt16, _ json: String, headers: [(String, String)] = []) throws -> HTTPTestResponse {
        try HTTPTestConnection(port: port).request(
            "POST", "/v1/receipts", headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }

    private func errorCode(_ response: HTTPTestResponse) -> String? {
        (response.jsonObject?["error"] as? [String: Any])?["code"] as? String
    }

    @Test("202 with the submission id; the message, key and headers are what was posted")
    func accepted() throws {
        let running = try start()
        defer { running.service.drain() }
        let response = try post(
            running.port, #"{"receipt":"aGVs\nbG8=","orderNo":42,"transactionId":"1000","sandbox":false}"#,
            headers: [("Idempotency-Key", "idem-1")])
        #expect(response.status == 202)
        #expect(response.jsonObject?["submission_id"] as? String == "idem-1")
        let published = try #require(running.publisher.published.first)
        #expect(published.topic == "iap.receipts.submitted")
        #expect(published.key == Array("42".utf8))
        #expect(published.headers.value(named: MessageHeaders.submissionId) == Array("idem-1".utf8))
        #expect(published.headers.value(named: MessageHeaders.schemaVersion) == Array("1".utf8))
        let submission = try MessageCoding.decode(Submission.self, from: published.value)
        #expect(submission.submissionId == "idem-1")
        #expect(submission.receiptData == "aGVsbG8=")
        #expect(submission.orderId == "42")
        #expect(submission.expectedTransactionId == "1000")
        #expect(submission.userId == nil)
        #expect(abs(submission.submittedAtMs - SystemTime.wallMilliseconds()) < 60_000)
    }

    @Test("the key is user_id, else order_id, else submission_id")
    func partitionKey() throws {
        let running = try start()
        defer { running.service.drain() }
        _ = try post(running.port, #"{"receipt_data":"aGVsbG8=","user_id":"u","order_id":"o"}"#)
        _ = try post(running.port, #"{"receipt_data":"aGVsbG8=","order_id":"o"}"#)
        let third = try post(running.port, #"{"receipt_data":"aGVsbG8="}"#)
        let generated = try #require(third.jsonObject?["submission_id"] as? String)
        #expect(running.publisher.published.map(\.key) == [Array("u".utf8), Array("o".utf8), Array(generated.utf8)])
    }

    @Test("no 202 before the delivery report: the request waits, then is answered")
    func waitsForDelivery() throws {
        let publisher = FakePublisher(.hold)
        let running = try start(publisher)
        defer { running.service.drain() }
        let connection = try HTTPTestConnection(port: running.port, timeoutSeconds: 1)
        try connection.sendRequest(
            "POST", "/v1/receipts", headers: [("Content-Type", "application/json")],
            body: Array(#"{"receipt_data":"aGVsbG8=","submission_id":"wait-1"}"#.utf8))
        #expect(waitUntil { publisher.heldCount == 1 })
        // Nothing arrives while Kafka has not reported (the read times out).
        #expect(throws: HTTPTestConnectionError.self) { try connection.readResponse() }
        publisher.completeHeld()
        let response = try connection.readResponse()
        #expect(response.status == 202)
        #expect(response.jsonObject?["submission_id"] as? String == "wait-1")
    }

    @Test("a delivery that is never reported is answered 503 kafka_timeout, naming the generated submission id")
    func deliveryDeadline() throws {
        // The handler answers 1 s after the delivery timeout, before the server's own deadline (whose 503 cannot
        // name the submission).
        let running = try start(FakePublisher(.hold)) {
            $0.deliveryTimeoutMs = 300
            $0.maxWaitMs = 0
        }
        defer { running.service.drain() }
        let started = SystemTime.monotonicNanoseconds()
        let response = try post(running.port, #"{"receipt_data":"aGVsbG8="}"#)
        #expect(response.status == 503)
        #expect(errorCode(response) == "kafka_timeout")
        #expect(response.headers["retry-after"] == "1")
        let id = try #require(response.jsonObject?["submission_id"] as? String)
        #expect(running.publisher.published.first?.headers.first?.value == Array(id.utf8))
        #expect(SystemTime.secondsSince(started) < 2.5)
        // The late report is ignored: no second answer (the kafka_timeout rejection stays the only one). Its
        // success is still counted as delivered (the submission is in Kafka), and nothing waits for Kafka any more.
        let rejection = #"ingest_submissions_rejected_total{code="kafka_timeout"} 1"#
        #expect(running.metrics.render().contains(rejection))
        #expect(running.metrics.render().contains(#"ingest_kafka_deliveries_total{result="delivered"} 0"#))
        running.publisher.completeHeld()
        let after = running.metrics.render()
        #expect(after.contains(rejection))
        #expect(after.contains(#"ingest_kafka_deliveries_total{result="delivered"} 1"#))
        #expect(after.contains("ingest_requests_waiting_for_kafka 0"))
    }

    @Test("Kafka trouble is 503 with Retry-After", arguments: [
        (FakePublisher.Behaviour.refuse(KafkaError(code: KafkaErrorCode.queueFull, message: "full")), "kafka_queue_full"),
        (.fail(KafkaError(code: KafkaErrorCode.messageTimedOut, message: "timed out")), "kafka_timeout"),
        (.fail(KafkaError(code: KafkaErrorCode.unknownTopicOrPartition, message: "no topic")), "kafka_unavailable"),
        (.refuse(KafkaError(code: KafkaErrorCode.unknownTopic, message: "no topic")), "kafka_unavailable"),
    ])
    func kafkaTrouble(behaviour: FakePublisher.Behaviour, code: String) throws {
        let running = try start(FakePublisher(behaviour)) { $0.retryAfterSeconds = 3 }
        defer { running.service.drain() }
        let response = try post(running.port, #"{"receipt_data":"aGVsbG8="}"#)
        #expect(response.status == 503)
        #expect(errorCode(response) == code)
        #expect(response.headers["retry-after"] == "3")
        #expect((response.jsonObject?["submission_id"] as? String)?.isEmpty == false)
    }

    @Test("no reachable broker: 503 at once; /readyz false until Kafka was first reached, then true through outages")
    func disconnected() throws {
        let publisher = FakePublisher()
        publisher.setConnected(false)
        let running = try start(publisher)
        defer { running.service.drain() }
        let response = try post(running.port, #"{"receipt_data":"aGVsbG8="}"#)
        #expect(response.status == 503)
        #expect(errorCode(response) == "kafka_unavailable")
        #expect((response.jsonObject?["submission_id"] as? String)?.isEmpty == false)
        #expect(publisher.published.isEmpty)
        #expect(try HTTPTestConnection(port: running.port).request("GET", "/readyz").status == 503)
        publisher.setConnected(true)
        #expect(try HTTPTestConnection(port: running.port).request("GET", "/readyz").status == 200)
        // A later outage: the pod stays in the Service and answers 503 kafka_unavailable with Retry-After.
        publisher.setConnected(false)
        #expect(try HTTPTestConnection(port: running.port).request("GET", "/readyz").status == 200)
        let duringOutage = try post(running.port, #"{"receipt_data":"aGVsbG8="}"#)
        #expect(duringOutage.status == 503)
        #expect(errorCode(duringOutage) == "kafka_unavailable")
        #expect(duringOutage.headers["retry-after"] == "1")
        #expect(publisher.published.isEmpty)
    }

    @Test("API keys: 401 without or with a wrong key, 202 with a right one")
    func apiKeys() throws {
        let running = try start { $0.apiKeys = [APIKey(key: "k-1"), APIKey(key: "k-2")] }
        defer { running.service.drain() }
        let body = #"{"receipt_data":"aGVsbG8="}"#
        let missing = try post(running.port, body)
        #expect(missing.status == 401)
        #expect(errorCode(missing) == "unauthorized")
        #expect(missing.headers["www-authenticate"] == "Bearer")
        #expect(try post(running.port, body, headers: [("Authorization", "Bearer k-3")]).status == 401)
        #expect(try post(running.port, body, headers: [("Authorization", "Bearer k-2")]).status == 202)
        #expect(running.publisher.published.count == 1)
        // Health endpoints stay open for probes.
        #expect(try HTTPTestConnection(port: running.port).request("GET", "/healthz").status == 200)
    }

    @Test("400, 413, 415, 404 and 405 are JSON errors and nothing is published")
    func clientErrors() throws {
        let running = try start { $0.maxBodyBytes = 2048 }
        defer { running.service.drain() }
        let notJSON = try post(running.port, "receipt=abc")
        #expect(notJSON.status == 400)
        #expect(errorCode(notJSON) == "invalid_json")
        // A JWS sent as the receipt is taken as a signed transaction, and refused when it is not ES256.
        let jws = try post(running.port, #"{"receipt":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#)
        #expect(jws.status == 400)
        #expect(errorCode(jws) == "invalid_signed_transaction")

        let tooLarge = try post(running.port, #"{"receipt_data":""# + String(repeating: "A", count: 4096) + #""}"#)
        #expect(tooLarge.status == 413)
        #expect(errorCode(tooLarge) == "body_too_large")

        let form = try HTTPTestConnection(port: running.port).request(
            "POST", "/v1/receipts", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("receipt=abc".utf8))
        #expect(form.status == 415)
        #expect(errorCode(form) == "unsupported_media_type")

        let unknown = try HTTPTestConnection(port: running.port).request("GET", "/v2/nothing")
        #expect(unknown.status == 404)
        #expect(errorCode(unknown) == "not_found")
        let wrongMethod = try HTTPTestConnection(port: running.port).request("GET", "/v1/receipts")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"] == "POST")
        #expect(running.publisher.published.isEmpty)
    }

    @Test("a JSON media type (any case, parameters, +json) is accepted, a missing one tried as JSON; others 415")
    func mediaTypes() throws {
        let running = try start()
        defer { running.service.drain() }
        let accepted = [
            "application/json; charset=utf-8", "application/vnd.receipts+json", " APPLICATION/JSON ", nil,
            "application/json;charset=UTF-8",
        ]
        for contentType in accepted {
            let headers = contentType.map { [("Content-Type", $0)] } ?? []
            let response = try HTTPTestConnection(port: running.port).request(
                "POST", "/v1/receipts", headers: headers, body: Array(#"{"receipt_data":"aGVsbG8="}"#.utf8))
            #expect(response.status == 202, "Content-Type \(contentType ?? "none")")
        }
        for contentType in ["text/json", "application/jsonp", "application/+json", "json", "application/x+jso"] {
            let response = try HTTPTestConnection(port: running.port).request(
                "POST", "/v1/receipts", headers: [("Content-Type", contentType)],
                body: Array(#"{"receipt_data":"aGVsbG8="}"#.utf8))
            #expect(response.status == 415, "Content-Type \(contentType)")
        }
    }

    @Test("/metrics counts requests by route and code, deliveries and rejections")
    func metrics() throws {
        let running = try start()
        defer { running.service.drain() }
        _ = try post(running.port, #"{"receipt_data":"aGVsbG8="}"#)
        _ = try post(running.port, #"{"receipt_data":"@@@@"}"#)
        let scrape = try HTTPTestConnection(port: running.port).request("GET", "/metrics")
        #expect(scrape.status == 200)
        #expect(scrape.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = scrape.text
        #expect(text.contains(#"ingest_http_requests_total{route="/v1/receipts",code="202"} 1"#))
        #expect(text.contains(#"ingest_http_requests_total{route="/v1/receipts",code="400"} 1"#))
        #expect(text.contains(#"ingest_kafka_deliveries_total{result="delivered"} 1"#))
        #expect(text.contains(#"ingest_submissions_rejected_total{code="invalid_receipt"} 1"#))
        #expect(text.contains("ingest_http_request_duration_seconds_count{route=\"/v1/receipts\"} 2"))
        #expect(text.contains("ingest_kafka_delivery_duration_seconds_count 1"))
        #expect(text.contains("ingest_requests_waiting_for_kafka 0"))
    }

    @Test("drain waits for submissions still waiting on Kafka before closing")
    func drain() throws {
        let publisher = FakePublisher(.hold)
        let running = try start(publisher)
        let connection = try HTTPTestConnection(port: running.port)
        try connection.sendRequest(
            "POST", "/v1/receipts", headers: [("Content-Type", "application/json")],
            body: Array(#"{"receipt_data":"aGVsbG8="}"#.utf8))
        #expect(waitUntil { publisher.heldCount == 1 })
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(200)) { publisher.completeHeld() }
        let drainStarted = SystemTime.monotonicNanoseconds()
        running.service.drain()
        // drain returned only after the held delivery was reported (released 200 ms after the drain began).
        #expect(publisher.heldCount == 0)
        #expect(SystemTime.secondsSince(drainStarted) >= 0.15)
        #expect(try connection.readResponse().status == 202)
    }
}

struct DiscardingSink: LogSink {
    func write(line: String) {}
}

