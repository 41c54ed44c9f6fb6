import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Testing
import TestSupport

/// `POST /v1/apple/notifications` in-process (fake Kafka).
@Suite("ingest Apple notifications (in-process, fake Kafka)")
struct NotificationServiceTests {
    private static let path = "/v1/apple/notifications"

    @Test("a notification is written as a NotificationRecord keyed by originalTransactionId; 200 after the ack")
    func accepted() throws {
        // API keys configured: Apple sends none, and needs none.
        let ingest = try InProcessIngest.start { $0.apiKeys = [APIKey(name: "billing", key: "k1")] }
        defer { ingest.service.drain() }
        let payload = NotificationFixtures.signedPayload(uuid: "uuid-1", originalTransactionId: "2000000111")
        let before = SystemTime.wallMilliseconds()
        let response = try ingest.post(NotificationFixtures.body(payload), Self.path)
        #expect(response.status == 200)
        let published = try #require(ingest.publisher.published.first)
        #expect(published.topic == "iap.notifications.submitted")
        #expect(published.key == Array("2000000111".utf8))
        #expect(published.headers.value(named: "notification-uuid") == Array("uuid-1".utf8))
        let record = try MessageCoding.decode(NotificationRecord.self, from: published.value)
        #expect(record.signedPayload == payload)
        #expect(record.origin == .appleDelivery)
        #expect(record.receivedAtMs >= before && record.receivedAtMs <= SystemTime.wallMilliseconds())
        #expect(try SchemaValidator.errors(published.value, schema: "notification.schema.json").isEmpty)
        #expect(ingest.scrape().contains(#"ingest_notifications_total{outcome="accepted"} 1"#))
    }

    @Test("without an original transaction id the key is the notificationUUID; NOTIFICATIONS_TOPIC is used")
    func keyFallback() throws {
        let ingest = try InProcessIngest.start { $0.notificationsTopic = "custom.notifications" }
        defer { ingest.service.drain() }
        let payload = NotificationFixtures.signedPayload(uuid: "uuid-test", originalTransactionId: nil)
        #expect(try ingest.post(NotificationFixtures.body(payload), Self.path).status == 200)
        let published = try #require(ingest.publisher.published.first)
        #expect(published.topic == "custom.notifications")
        #expect(published.key == Array("uuid-test".utf8))
    }

    @Test("no 200 before Kafka acknowledged it")
    func waitsForAcknowledgement() throws {
        let publisher = FakePublisher(.hold)
        let ingest = try InProcessIngest.start(publisher)
        defer { ingest.service.drain() }
        let connection = try HTTPTestConnection(port: ingest.port, timeoutSeconds: 1)
        try connection.sendRequest(
            "POST", Self.path, headers: [("Content-Type", "application/json")],
            body: Array(NotificationFixtures.body(NotificationFixtures.signedPayload()).utf8))
        #expect(waitUntil { publisher.heldCount == 1 })
        #expect(throws: HTTPTestConnectionError.self) { try connection.readResponse() }
        publisher.completeHeld()
        #expect(try connection.readResponse().status == 200)
    }

    @Test("Kafka trouble is 503 with Retry-After, so Apple retries", arguments: [
        FakePublisher.Behaviour.refuse(KafkaError(code: KafkaErrorCode.queueFull, message: "full")),
        .fail(KafkaError(code: KafkaErrorCode.messageTimedOut, message: "timed out")),
        .fail(KafkaError(code: KafkaErrorCode.unknownTopicOrPartition, message: "no topic")),
    ])
    func kafkaTrouble(behaviour: FakePublisher.Behaviour) throws {
        let ingest = try InProcessIngest.start(FakePublisher(behaviour)) { $0.retryAfterSeconds = 5 }
        defer { ingest.service.drain() }
        let response = try ingest.post(NotificationFixtures.body(NotificationFixtures.signedPayload()), Self.path)
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "5")
        #expect(["kafka_queue_full", "kafka_timeout", "kafka_unavailable"].contains(response.errorCode ?? ""))
        #expect(ingest.scrape().contains(#"ingest_notifications_total{outcome="unavailable"} 1"#))
    }

    @Test("a delivery report that never comes is answered 503 kafka_timeout at the deadline")
    func deadline() throws {
        let ingest = try InProcessIngest.start(FakePublisher(.hold)) { $0.deliveryTimeoutMs = 300 }
        defer { ingest.service.drain() }
        let response = try ingest.post(NotificationFixtures.body(NotificationFixtures.signedPayload()), Self.path)
        #expect(response.status == 503)
        #expect(response.errorCode == "kafka_timeout")
        #expect(ingest.scrape().contains(#"ingest_notifications_total{outcome="unavailable"} 1"#))
        // The late acknowledgement answers nothing more and is not counted as accepted.
        ingest.publisher.completeHeld()
        #expect(ingest.scrape().contains(#"ingest_notifications_total{outcome="accepted"} 0"#))
    }

    @Test("what is not a notification is 400 invalid_notification and nothing is written", arguments: [
        "not json", "[1]", "{}", #"{"signedPayload":42}"#, #"{"signedPayload":""}"#,
        #"{"signedPayload":"abc.def"}"#, #"{"signedPayload":"a.b.c"}"#,
        #"{"signedPayload":"eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"}"#,
        #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2l+"}"#,
        #"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJ0eCI6MX0.c2ln","#,
    ])
    func invalid(body: String) throws {
        let ingest = try InProcessIngest.start()
        defer { ingest.service.drain() }
        let response = try ingest.post(body, Self.path)
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_notification")
        #expect(ingest.publisher.published.isEmpty)
        #expect(ingest.scrape().contains(#"ingest_notifications_total{outcome="invalid"} 1"#))
    }

    @Test("a payload whose JSON cannot be read is still written (the verifier decides), keyed by nothing")
    func unreadablePayload() throws {
        let ingest = try InProcessIngest.start()
        defer { ingest.service.drain() }
        let payload = "\(NotificationFixtures.header).bm90IGpzb24.\(NotificationFixtures.signature)"
        #expect(try ingest.post(NotificationFixtures.body(payload), Self.path).status == 200)
        #expect(ingest.publisher.published.first?.key == nil)
    }

    @Test("the notification body limit is its own: larger is 413 although submissions may be larger")
    func bodyLimit() throws {
        let ingest = try InProcessIngest.start { $0.notificationMaxBodyBytes = 2048 }
        defer { ingest.service.drain() }
        let pad = String(repeating: "x", count: 3000)
        let padded = #"{"signedPayload":"\#(NotificationFixtures.signedPayload())","pad":"\#(pad)"}"#
        let response = try ingest.post(padded, Self.path)
        #expect(response.status == 413)
        #expect(ingest.publisher.published.isEmpty)
        // A submission of the same size is fine (1 MiB limit).
        #expect(try ingest.post(#"{"receipt_data":"aGVsbG8=","pad":"\#(pad)"}"#).status == 202)
        #expect(try HTTPTestConnection(port: ingest.port).request("GET", Self.path).status == 405)
    }
}
