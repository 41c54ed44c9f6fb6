import Dispatch
import Foundation
import Ingest
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing
import TestSupport

/// The real `receipt-ingest` executable against the `embedded-kafka` executable (a mock cluster in another
/// process), with the test reading the topic back over the Kafka protocol.
@Suite("receipt-ingest process against embedded-kafka", .serialized)
struct IngestProcessTests {
    static let topic = "iap.receipts.submitted"

    /// Collects every message of a topic (the submissions topic unless told) from the beginning.
    final class TopicRecorder: Sendable {
        private final class Log: Sendable {
            let messages = Locked<[KafkaMessage]>([])
        }

        private let follower: KafkaTopicFollower
        private let log = Log()

        init(bootstrapServers: String, topic: String = IngestProcessTests.topic) throws {
            let log = self.log
            follower = try KafkaTopicFollower(
                configuration: KafkaConfiguration(["bootstrap.servers": bootstrapServers]),
                topic: topic, startingAtTimestampMs: 0,
                logger: Logger(label: "test-follower", threshold: .error, sink: DiscardingSink()),
                refreshInterval: .seconds(1)
            ) { message in log.messages.withLock { $0.append(message) } }
            follower.start()
        }

        deinit {
            follower.close(timeout: .seconds(5))
        }

        var all: [KafkaMessage] { log.messages.withLock { $0 } }

        /// Messages carrying `submissionId` in their submission-id header.
        func messages(for submissionId: String) -> [KafkaMessage] {
            all.filter { $0.headers.value(named: MessageHeaders.submissionId) == Array(submissionId.utf8) }
        }

        /// Waits until every id in `ids` has at least one message.
        func waitForAll(_ ids: Set<String>, timeout: Duration = .seconds(20)) async -> Set<String> {
            _ = await eventually(timeout: timeout) { missing(ids).isEmpty }
            return missing(ids)
        }

        func missing(_ ids: Set<String>) -> Set<String> {
            let seen = Set(all.compactMap { $0.headers.value(named: MessageHeaders.submissionId) }
                .map { String(decoding: $0, as: UTF8.self) })
            return ids.subtracting(seen)
        }
    }

    private static func startCluster() async throws -> EmbeddedKafkaProcess {
        // The results topic exists too: the ingest's /readyz waits for its results follower.
        try await EmbeddedKafkaProcess.start(topics: [
            (topic, 4), (ServiceTopic.results.defaultName, 4), (ServiceTopic.notifications.defaultName, 4),
        ])
    }

    private static func errorCode(_ response: TestHTTPResponse) -> String? {
        (response.jsonObject?["error"] as? [String: Any])?["code"] as? String
    }

    @Test("the message on the topic is what was posted (aliases normalized), keyed and headed as specified")
    func messageContents() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(.ingest, environment: cluster.environment)
        let recorder = try TopicRecorder(bootstrapServers: cluster.bootstrapServers)

        let contract = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"),
            [
                "receipt_data": "aGVs\nbG8g\nd29ybGQ=", "order_id": "o-1", "user_id": "u-1",
                "expected_transaction_id": "1000", "expected_product_id": "com.example.p", "submission_id": "c-1",
            ])
        #expect(contract.status == 202)
        #expect(contract.jsonObject?["submission_id"] as? String == "c-1")

        let aliases = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"),
            ["receipt": "aGVsbG8=", "orderNo": 4711, "transactionId": "2000", "sandbox": true],
            headers: ["Idempotency-Key": "ios-1"])
        #expect(aliases.status == 202)
        #expect(aliases.jsonObject?["submission_id"] as? String == "ios-1")

        let generated = try await TestHTTPClient.postJSON(ingest.url("/v1/receipts"), ["receipt_data": "aGVsbG8="])
        let generatedId = try #require(generated.jsonObject?["submission_id"] as? String)

        #expect(await recorder.waitForAll(["c-1", "ios-1", generatedId]).isEmpty)
        let first = try #require(recorder.messages(for: "c-1").first)
        #expect(first.key == Array("u-1".utf8))
        #expect(first.headers.value(named: MessageHeaders.schemaVersion) == Array("1".utf8))
        let submission = try MessageCoding.decode(Submission.self, from: first.value)
        #expect(submission.receiptData == "aGVsbG8gd29ybGQ=")
        #expect(submission.orderId == "o-1")
        #expect(submission.userId == "u-1")
        #expect(submission.expectedTransactionId == "1000")
        #expect(submission.expectedProductId == "com.example.p")
        #expect(submission.schemaVersion == 1)

        let second = try #require(recorder.messages(for: "ios-1").first)
        #expect(second.key == Array("4711".utf8))
        let aliased = try MessageCoding.decode(Submission.self, from: second.value)
        #expect(aliased.receiptData == "aGVsbG8=")
        #expect(aliased.orderId == "4711")
        #expect(aliased.expectedTransactionId == "2000")
        #expect(aliased.userId == nil)

        #expect(recorder.messages(for: generatedId).first?.key == Array(generatedId.utf8))

        // What the ingest wrote validates against the published schema (independent validator).
        for message in recorder.all {
            #expect(try SchemaValidator.errors(message.value, schema: "submission.schema.json").isEmpty)
        }
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("every error code through the real process, nothing written for them")
    func errorCodes() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(
            .ingest,
            environment: cluster.environment.merging([
                "INGEST_API_KEYS": "key-a,key-b", "INGEST_MAX_BODY_BYTES": "4096",
            ]) { $1 })
        let recorder = try TopicRecorder(bootstrapServers: cluster.bootstrapServers)
        let auth = ["Authorization": "Bearer key-b"]
        let url = ingest.url("/v1/receipts")

        let unauthorized = try await TestHTTPClient.postJSON(url, ["receipt_data": "aGVsbG8="])
        #expect(unauthorized.status == 401)
        #expect(Self.errorCode(unauthorized) == "unauthorized")
        let wrongKey = try await TestHTTPClient.postJSON(
            url, ["receipt_data": "aGVsbG8="], headers: ["Authorization": "Bearer key-c"])
        #expect(wrongKey.status == 401)

        let notBase64 = try await TestHTTPClient.postJSON(url, ["receipt_data": "%%%"], headers: auth)
        #expect(notBase64.status == 400)
        #expect(Self.errorCode(notBase64) == "invalid_receipt")
        let jws = try await TestHTTPClient.postJSON(
            url, ["receipt": "eyJhbGciOiJIUzI1NiJ9.eyJ0eCI6MX0.c2ln"], headers: auth)
        #expect(Self.errorCode(jws) == "invalid_signed_transaction")
        let conflicting = try await TestHTTPClient.postJSON(
            url, ["receipt_data": "aGVsbG8=", "transaction_id": "1"], headers: auth)
        #expect(Self.errorCode(conflicting) == "multiple_proofs")
        let broken = try await TestHTTPClient.send(
            "POST", url, headers: auth.merging(["Content-Type": "application/json"]) { $1 }, body: Data("{".utf8))
        #expect(broken.status == 400)
        #expect(Self.errorCode(broken) == "invalid_json")

        let form = try await TestHTTPClient.send(
            "POST", url, headers: auth.merging(["Content-Type": "text/plain"]) { $1 }, body: Data("hello".utf8))
        #expect(form.status == 415)
        #expect(Self.errorCode(form) == "unsupported_media_type")

        let large = try await TestHTTPClient.postJSON(
            url, ["receipt_data": String(repeating: "QUFB", count: 2048)], headers: auth)
        #expect(large.status == 413)
        #expect(Self.errorCode(large) == "body_too_large")

        let accepted = try await TestHTTPClient.postJSON(
            url, ["receipt_data": "aGVsbG8=", "submission_id": "only-this-one"], headers: auth)
        #expect(accepted.status == 202)
        #expect(await recorder.waitForAll(["only-this-one"]).isEmpty)
        try await Task.sleep(for: .milliseconds(300))
        #expect(recorder.all.count == 1)

        let metrics = try await TestHTTPClient.send("GET", ingest.url("/metrics"))
        #expect(metrics.text.contains(#"ingest_http_requests_total{route="/v1/receipts",code="401"} 2"#))
        #expect(metrics.text.contains(#"ingest_kafka_deliveries_total{result="delivered"} 1"#))
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("the seed iOS client's exact request: 202, and the message on the topic is what the verifier reads")
    func seedClient() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(.ingest, environment: cluster.environment)
        let recorder = try TopicRecorder(bootstrapServers: cluster.bootstrapServers)
        var ids: [String] = []
        for sandbox in ["0", "1"] {
            // Byte for byte what ApplePayUtils.beginCheckFor posts (no Authorization: its own login header).
            let response = try await TestHTTPClient.send(
                "POST", ingest.url("/v1/receipts"),
                headers: [
                    "Accept": "application/json", "Content-Type": "application/json;charset=UTF-8",
                    "token": "user-login-token",
                ],
                body: Data(seedClientBody(sandbox: sandbox).utf8))
            #expect(response.status == 202, "sandbox \(sandbox): \(response.text)")
            ids.append(try #require(response.jsonObject?["submission_id"] as? String))
        }
        #expect(await recorder.waitForAll(Set(ids)).isEmpty)
        for id in ids {
            let message = try #require(recorder.messages(for: id).first)
            let submission = try Submission.decodeValidated(from: message.value)
            #expect(submission.receiptData == seedClientReceipt)
            #expect(submission.orderId == "20240501123456789")
            #expect(submission.expectedTransactionId == "1000000912345678")
            #expect(message.key == Array("20240501123456789".utf8))
        }
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("a notification posted while the broker is down gets 503; posted again later it is on the topic once more")
    func notificationDuringOutage() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(
            .ingest,
            environment: cluster.environment.merging(["INGEST_KAFKA_DELIVERY_TIMEOUT_MS": "1500"]) { $1 })
        let recorder = try TopicRecorder(
            bootstrapServers: cluster.bootstrapServers, topic: ServiceTopic.notifications.defaultName)
        let url = ingest.url("/v1/apple/notifications")
        let payload = NotificationFixtures.signedPayload(uuid: "outage-uuid-1", originalTransactionId: "2000000777")
        let body = Data(NotificationFixtures.body(payload).utf8)
        let headers = ["Content-Type": "application/json"]
        func copies() -> Int {
            recorder.all.filter {
                (try? MessageCoding.decode(NotificationRecord.self, from: $0.value))?.signedPayload == payload
            }.count
        }

        cluster.process.send(signal: SIGSTOP)
        let during = try await TestHTTPClient.send("POST", url, headers: headers, body: body, timeout: 15)
        cluster.process.send(signal: SIGCONT)
        #expect(during.status == 503)
        #expect(during.header("Retry-After") != nil)
        #expect(["kafka_timeout", "kafka_unavailable"].contains(Self.errorCode(during) ?? ""))

        // Whatever became of the refused attempt (Kafka may still have written it: Apple's retries are deduped by
        // the verifier), let it settle, then count.
        try await Task.sleep(for: .seconds(3))
        let before = copies()
        #expect(before <= 1)
        // Apple's retry, once Kafka is back.
        let retried = await eventually(timeout: .seconds(15)) {
            (try? await TestHTTPClient.send("POST", url, headers: headers, body: body, timeout: 5))?.status == 200
        }
        #expect(retried)
        #expect(await eventually(timeout: .seconds(10)) { copies() == before + 1 })
        try await Task.sleep(for: .milliseconds(500))
        #expect(copies() == before + 1)
        let message = try #require(
            recorder.all.last {
                (try? MessageCoding.decode(NotificationRecord.self, from: $0.value))?.signedPayload == payload
            })
        #expect(message.key == Array("2000000777".utf8))
        let metrics = try await TestHTTPClient.send("GET", ingest.url("/metrics")).text
        #expect(metrics.contains(#"ingest_notifications_total{outcome="unavailable"} 1"#))
        #expect(metrics.contains(#"ingest_notifications_total{outcome="accepted"} 1"#))
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("reusing an Idempotency-Key gives the same id; both copies carry it")
    func idempotencyKeyReuse() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(.ingest, environment: cluster.environment)
        let recorder = try TopicRecorder(bootstrapServers: cluster.bootstrapServers)
        let headers = ["Idempotency-Key": "retry-me-1"]
        let body: [String: Any] = ["receipt_data": "aGVsbG8=", "order_id": "o-9"]
        let first = try await TestHTTPClient.postJSON(ingest.url("/v1/receipts"), body, headers: headers)
        let second = try await TestHTTPClient.postJSON(ingest.url("/v1/receipts"), body, headers: headers)
        #expect(first.status == 202)
        #expect(second.status == 202)
        #expect(first.jsonObject?["submission_id"] as? String == "retry-me-1")
        #expect(second.jsonObject?["submission_id"] as? String == "retry-me-1")
        _ = await eventually(timeout: .seconds(10)) { recorder.messages(for: "retry-me-1").count == 2 }
        let copies = recorder.messages(for: "retry-me-1")
        #expect(copies.count == 2)
        // Same key, so the same partition: the verifier sees them in order and gives the same verdict twice.
        #expect(Set(copies.map(\.partition)).count == 1)
        let conflicting = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"), body.merging(["submission_id": "other"]) { $1 }, headers: headers)
        #expect(conflicting.status == 400)
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("an unresponsive broker: 503 within the delivery deadline, and every 202 is on the topic")
    func brokerDown() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(
            .ingest,
            environment: cluster.environment.merging(["INGEST_KAFKA_DELIVERY_TIMEOUT_MS": "1500"]) { $1 })
        let recorder = try TopicRecorder(bootstrapServers: cluster.bootstrapServers)
        var acknowledged: Set<String> = []

        let before = try await TestHTTPClient.postJSON(
            ingest.url("/v1/receipts"), ["receipt_data": "aGVsbG8=", "submission_id": "before-1"])
        #expect(before.status == 202)
        acknowledged.insert("before-1")

        cluster.process.send(signal: SIGSTOP)
        let started = ContinuousClock.now
        var statuses: [Int] = []
        try await withThrowingTaskGroup(of: (String, TestHTTPResponse).self) { group in
            for index in 0..<4 {
                group.addTask {
                    let id = "during-\(index)"
                    let response = try await TestHTTPClient.postJSON(
                        ingest.url("/v1/receipts"), ["receipt_data": "aGVsbG8=", "submission_id": id], timeout: 10)
                    return (id, response)
                }
            }
            for try await (id, response) in group {
                statuses.append(response.status)
                if response.status == 202 { acknowledged.insert(id) }
                if response.status == 503 {
                    #expect(response.header("Retry-After") != nil)
                    #expect(["kafka_timeout", "kafka_unavailable"].contains(Self.errorCode(response) ?? ""))
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        cluster.process.send(signal: SIGCONT)
        #expect(statuses.allSatisfy { $0 == 503 }, "\(statuses)")
        #expect(elapsed < .seconds(4), "answers took \(elapsed)")

        // After recovery submissions are accepted again.
        let recovered = await eventually(timeout: .seconds(15)) {
            let response = try? await TestHTTPClient.postJSON(
                ingest.url("/v1/receipts"), ["receipt_data": "aGVsbG8=", "submission_id": "after-1"], timeout: 5)
            return response?.status == 202
        }
        #expect(recovered)
        acknowledged.insert("after-1")
        #expect(await recorder.waitForAll(acknowledged).isEmpty)
        #expect(await ingest.stop() == 0)
        await cluster.stop()
    }

    @Test("SIGTERM under load: exits 0 and every 202 is on the topic")
    func sigtermUnderLoad() async throws {
        let cluster = try await Self.startCluster()
        let ingest = try await ServiceProcess.start(.ingest, environment: cluster.environment)
        let recorder = try TopicRecorder(bootstrapServers: cluster.bootstrapServers)
        let acknowledged = Locked<Set<String>>([])
        let otherStatuses = Locked<[Int]>([])
        let stopLoad = Atomic<Bool>(false)
        let port = ingest.port

        // Eight keep-alive clients posting as fast as they can, on their own threads (blocking sockets).
        let clientsDone = DispatchGroup()
        for client in 0..<8 {
            clientsDone.enter()
            Thread.detachNewThread {
                defer { clientsDone.leave() }
                var connection = try? HTTPTestConnection(port: port, timeoutSeconds: 10)
                var sequence = 0
                while !stopLoad.load(ordering: .relaxed), let current = connection {
                    sequence += 1
                    let id = "load-\(client)-\(sequence)"
                    do {
                        let response = try current.request(
                            "POST", "/v1/receipts", headers: [("Content-Type", "application/json")],
                            body: Array(#"{"receipt_data":"aGVsbG8=","submission_id":"\#(id)"}"#.utf8))
                        if response.status == 202 {
                            acknowledged.withLock { _ = $0.insert(id) }
                        } else {
                            otherStatuses.withLock { $0.append(response.status) }
                            if response.headers["connection"]?.lowercased() == "close" {
                                connection = try? HTTPTestConnection(port: port, timeoutSeconds: 10)
                            }
                        }
                    } catch {
                        // Closed by the draining server: reconnect (refused once the listener is gone).
                        connection = try? HTTPTestConnection(port: port, timeoutSeconds: 10)
                    }
                }
            }
        }
        _ = await eventually(timeout: .seconds(10)) { acknowledged.withLock { $0.count } >= 200 }
        ingest.process.send(signal: SIGTERM)
        let status = await ingest.process.waitForExit(timeout: .seconds(20))
        stopLoad.store(true, ordering: .relaxed)
        await withCheckedContinuation { continuation in
            clientsDone.notify(queue: .global()) { continuation.resume() }
        }
        #expect(status == 0)
        let ids = acknowledged.withLock { $0 }
        #expect(ids.count >= 200)
        #expect(otherStatuses.withLock { $0 }.allSatisfy { $0 == 503 })
        let missing = await recorder.waitForAll(ids)
        #expect(missing.isEmpty, "\(missing.count) acknowledged submissions are not on the topic")
        #expect(ingest.process.stderrLines.contains { $0.contains("\"msg\":\"receipt-ingest stopped\"") })
        await cluster.stop()
    }

    @Test("--help documents the settings; a missing KAFKA_BOOTSTRAP_SERVERS exits 2 naming it")
    func helpAndConfiguration() async throws {
        let help = try ManagedProcess(executable: try TestBinaries.path("receipt-ingest"), arguments: ["--help"])
        #expect(await help.waitForExit(timeout: .seconds(10)) == 0)
        #expect(help.stdoutLines.contains { $0.contains("INGEST_KAFKA_DELIVERY_TIMEOUT_MS") })

        let unconfigured = try ManagedProcess(
            executable: try TestBinaries.path("receipt-ingest"), environment: ["KAFKA_BOOTSTRAP_SERVERS": ""])
        #expect(await unconfigured.waitForExit(timeout: .seconds(10)) == 2)
        #expect(unconfigured.stderrLines.contains { $0.contains("KAFKA_BOOTSTRAP_SERVERS") })
    }
}
