import FakeAppStore
import Foundation
import Kafka
@testable import Notifications
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

import TestSupport
@testable import Verifier

/// Notifications through the engine with in-memory fakes: events written, offsets stored only after
/// acknowledgement, many in flight without Apple slots, windows pausing the partition.
@Suite("VerificationEngine with notifications")
struct NotificationEngineTests {
    let samples: NotificationSamples
    let verifier = FakeVerifier()
    let publisher = FakePublisher()
    let control = FakeControl()
    let clock = ManualClock()
    let registry = MetricsRegistry()
    let partition = NotificationSamples.notifications

    init() throws {
        samples = try NotificationSamples()
    }

    func makeEngine(
        maxInFlight: Int = 2, window: Int = 64, processor: NotificationProcessor? = nil
    ) -> VerificationEngine {
        var configuration = VerificationEngine.Configuration(
            topics: NotificationSamples.topics,
            limits: DispatchLimits(maxInFlight: maxInFlight, partitionWindow: window),
            retryPolicy: RetryRoundPolicy(maximumRounds: 3, initialBackoff: .seconds(10), maximumBackoff: .seconds(60)))
        configuration.publishBackoff = Backoff(initial: .milliseconds(10), maximum: .seconds(5))
        let engine = VerificationEngine(
            configuration: configuration, verifier: verifier, publisher: publisher, control: control, clock: clock,
            logger: Logger(label: "test", threshold: .error), metrics: VerifierMetrics(registry: registry),
            notifications: processor ?? samples.processor())
        engine.partitionsAssigned([partition])
        return engine
    }

    private var heldCount: Int {
        registry.render().split(separator: "\n").first { $0.hasPrefix("verifier_notifications_held_total ") }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test func aNotificationWhoseRevocationStatusIsUnavailableIsHeldNeverDLQdAndVerifiedOnceTheResponderAnswers()
        async throws
    {
        let responder = samples.pki.ocspResponder()
        responder.mode = .fail
        let engine = makeEngine(processor: samples.processor(revocation: samples.revocationChecker(responder)))
        let record = try charges(1)[0]
        engine.consume(NotificationSamples.message(record.value, offset: 0))
        await settles("the notification held") { heldCount == 1 }
        #expect(publisher.records(of: .event).isEmpty)
        #expect(publisher.records(of: .deadLetter).isEmpty)
        #expect(control.stored(partition).isEmpty, "its offset waits")
        // Retried after 1 s: still no answer, held again (2 s next).
        clock.advance(by: .seconds(1))
        await settles("held a second time") { heldCount == 2 }
        #expect(publisher.records(of: .deadLetter).isEmpty)

        responder.mode = .answer
        clock.advance(by: .seconds(2))
        await settles("the event written") { publisher.records(of: .event).count == 1 }
        await settles("its offset stored") { control.stored(partition) == [1] }
        #expect(publisher.records(of: .event).first?.header(MessageHeaders.eventId) == record.uuid)
        #expect(publisher.records(of: .deadLetter).isEmpty)
        #expect(heldCount == 2)
        #expect(VerificationEngine.notificationRetryDelay(attempt: 0) == .seconds(1))
        #expect(VerificationEngine.notificationRetryDelay(attempt: 10) == .seconds(60))
    }

    @Test func aNotificationSignedByARevokedCertificateGoesToTheDLQAsInvalidSignature() async throws {
        let responder = samples.pki.ocspResponder()
        responder.setRevoked(samples.pki.leaf.certificate.serialNumberHex)
        let engine = makeEngine(processor: samples.processor(revocation: samples.revocationChecker(responder)))
        let record = try charges(1)[0]
        engine.consume(NotificationSamples.message(record.value, offset: 0))
        await settles("the DLQ record written") { publisher.records(of: .deadLetter).count == 1 }
        let dead = try MessageCoding.decode(
            DeadLetterRecord.self, from: try #require(publisher.records(of: .deadLetter).first).value)
        #expect(dead.reason == .invalidSignature)
        #expect(publisher.records(of: .event).isEmpty)
        #expect(heldCount == 0)
    }

    /// `count` signed ONE_TIME_CHARGE records with original transaction ids `otx-<index>`.
    func charges(_ count: Int) throws -> [(uuid: String, value: [UInt8])] {
        try (0..<count).map { index in
            let notification = samples.notification("ONE_TIME_CHARGE") {
                $0.transactionId = String(2_000_000_000_000_000 + index)
                $0.originalTransactionId = "otx-\(index)"
            }
            return (notification.notificationUUID, try samples.record(notification))
        }
    }

    @Test func manyNotificationsAreInFlightAtOnceAndOffsetsWaitForTheirAcknowledgements() async throws {
        let engine = makeEngine(maxInFlight: 2)
        publisher.state.withLock { $0.holdAcks = true }
        let records = try charges(20)
        for (offset, record) in records.enumerated() {
            engine.consume(NotificationSamples.message(record.value, offset: Int64(offset)))
        }
        // All twenty are written at once although only two Apple calls could be in flight: they need none.
        await settles("twenty events waiting for Kafka") { publisher.heldCount == 20 }
        #expect(verifier.calls.load(ordering: .relaxed) == 0)
        #expect(control.stored(partition).isEmpty)

        let heldIds = publisher.state.withLock { $0.held.map { $0.0.header(MessageHeaders.eventId)! } }
        publisher.acknowledgeHeld(at: heldIds.firstIndex(of: records[5].uuid)!)
        await engine.settled()
        #expect(control.stored(partition).isEmpty, "offset 5 acknowledged, but 0...4 are not")
        let rest = publisher.state.withLock { $0.held.map { $0.0.header(MessageHeaders.eventId)! } }
        publisher.acknowledgeHeld(at: rest.firstIndex(of: records[0].uuid)!)
        await settles("offset 1 stored") { control.stored(partition) == [1] }
        publisher.acknowledgeAllHeld()
        await settles("every offset stored") { control.stored(partition).last == 20 }

        let events = publisher.records(of: .event)
        #expect(events.count == 20 && events.allSatisfy { $0.topic == "events" })
        for (index, record) in records.enumerated() {
            let written = try #require(events.first { $0.header(MessageHeaders.eventId) == record.uuid })
            #expect(written.header(MessageHeaders.eventType) == "credit")
            #expect(written.key == Array("otx-\(index)".utf8))
            let event = try MessageCoding.decode(PurchaseEvent.self, from: written.value)
            #expect(event.eventId == record.uuid && event.type == .credit)
        }
        #expect(engine.snapshot.liveMessages == 0)
        let metrics = registry.render()
        #expect(
            metrics.contains(#"verifier_notification_events_total{type="credit",notification_type="ONE_TIME_CHARGE"} 20"#))
        #expect(metrics.contains(#"verifier_records_published_total{kind="event"} 20"#))
        #expect(metrics.contains("verifier_notification_to_event_seconds_count 20"))
    }

    @Test func aNotificationThatDoesNotVerifyIsADLQRecordAndItsOffsetWaitsForIt() async throws {
        let engine = makeEngine()
        publisher.state.withLock { $0.holdAcks = true }
        let bad = try samples.record(samples.notification("REFUND"), defect: .wrongSignature)
        engine.consume(NotificationSamples.message(bad, offset: 7, key: "otx-9"))
        await settles("the DLQ record waits for Kafka") { publisher.heldCount == 1 }
        #expect(control.stored(partition).isEmpty)
        publisher.acknowledgeAllHeld()
        await settles("offset stored after the DLQ record") { control.stored(partition) == [8] }

        #expect(publisher.records(of: .event).isEmpty)
        let written = try #require(publisher.records(of: .deadLetter).first)
        #expect(written.topic == "dlq" && written.key == Array("otx-9".utf8))
        #expect(written.header(MessageHeaders.dlqReason) == "invalid_signature")
        #expect(written.header(MessageHeaders.submissionId) == nil)
        let dead = try MessageCoding.decode(DeadLetterRecord.self, from: written.value)
        #expect(dead.submissionId == nil && dead.reason == .invalidSignature && dead.attempts == 0)
        #expect(dead.sourceTopic == "notifications" && dead.sourceOffset == 7)
        #expect(dead.originalValue == ReceiptModel.Base64.encode(bad))
        #expect(dead.message.contains("signature"))
        let metrics = registry.render()
        #expect(metrics.contains(#"verifier_notification_rejections_total{reason="invalid_signature"} 1"#))
        #expect(metrics.contains(#"verifier_dlq_records_total{reason="invalid_signature"} 1"#))
        #expect(!metrics.contains(#"verifier_notification_events_total{type="debit",notification_type="REFUND"} 1"#))
    }

    @Test func aFullWindowPausesTheNotificationsPartitionUntilAcknowledged() async throws {
        let engine = makeEngine(window: 4)
        publisher.state.withLock { $0.holdAcks = true }
        for (offset, record) in try charges(6).enumerated() {
            engine.consume(NotificationSamples.message(record.value, offset: Int64(offset)))
        }
        await settles("six events held") { publisher.heldCount == 6 }
        #expect(control.paused.contains(partition))
        publisher.acknowledgeAllHeld()
        await settles("resumed once the window drained") { !control.paused.contains(partition) }
        await settles("all stored") { control.stored(partition).last == 6 }
        _ = engine
    }

    @Test func aDuplicateDeliveryWritesTheSameEventAgain() async throws {
        let engine = makeEngine()
        let record = try samples.record(samples.notification("DID_RENEW"))
        engine.consume(NotificationSamples.message(record, offset: 0))
        engine.consume(NotificationSamples.message(record, offset: 1))
        await settles("two events") { publisher.records(of: .event).count == 2 }
        let events = publisher.records(of: .event)
        #expect(events[0] == events[1], "a redelivery must carry the same event_id and content")
        await settles("both stored") { control.stored(partition).last == 2 }
    }

    @Test func submissionsAndNotificationsShareTheEngine() async throws {
        let engine = makeEngine()
        engine.partitionsAssigned([Samples.receipts])
        verifier.automatic.withLock { $0 = Samples.verified() }
        engine.consume(Samples.message("s-1", offset: 0))
        engine.consume(NotificationSamples.message(try charges(1)[0].value, offset: 0))
        await settles("a result and an event") {
            publisher.records(of: .result).count == 1 && publisher.records(of: .event).count == 1
        }
        await settles("both partitions stored") {
            control.stored(Samples.receipts) == [1] && control.stored(partition) == [1]
        }
        #expect(verifier.calls.load(ordering: .relaxed) == 1)
    }
}

extension NotificationEngineTests {
    @Test func notificationsInProgressAreBoundedAcrossTheirPartitions() async throws {
        var configuration = VerificationEngine.Configuration(
            topics: NotificationSamples.topics,
            limits: DispatchLimits(
                maxInFlight: 2, partitionWindow: 1_000, partitionResumeMark: 500, pendingLimit: 8,
                pendingResumeMark: 4, directLimit: 4),
            retryPolicy: RetryRoundPolicy(maximumRounds: 3, initialBackoff: .seconds(10), maximumBackoff: .seconds(60)))
        configuration.publishBackoff = Backoff(initial: .milliseconds(10), maximum: .seconds(5))
        let engine = VerificationEngine(
            configuration: configuration, verifier: verifier, publisher: publisher, control: control, clock: clock,
            logger: Logger(label: "test", threshold: .error), metrics: VerifierMetrics(registry: registry),
            notifications: samples.processor())
        let other = TopicPartition(topic: "notifications", partition: 1)
        engine.partitionsAssigned([partition, other])
        publisher.state.withLock { $0.holdAcks = true }
        for (offset, record) in try charges(4).enumerated() {
            engine.consume(NotificationSamples.message(record.value, offset: Int64(offset)))
        }
        await settles("four events held") { publisher.heldCount == 4 }
        // The window (1,000) is far away; the direct limit (4) pauses both notification partitions.
        #expect(control.paused == [partition, other])
        publisher.acknowledgeAllHeld()
        await settles("resumed") { control.paused.isEmpty }
    }
}
