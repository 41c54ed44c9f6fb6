import FakeAppStore
import Foundation
import Kafka
import ReceiptModel
import SignedData
import Synchronization
import Testing

import TestPKI
import TestSupport
import ServiceSupport

/// App Store notifications for a `Pipeline`: a minted App Store-shaped PKI whose root the verifiers trust
/// (`APPLE_ROOT_CERTIFICATES`), notification records produced to `NOTIFICATIONS_TOPIC` as the ingest writes them, and
/// the events topic collected.
final class NotificationHarness: Sendable {
    static let notificationsTopic = "iap.notifications.submitted"
    static let eventsTopic = "iap.purchase.events"

    let pki: TestSigningPKI
    let directory: String
    let rootPath: String
    private let collector = Locked<TopicCollector?>(nil)

    init() throws {
        pki = try TestSigningPKI.mint()
        directory = NSTemporaryDirectory() + "notification-harness-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        rootPath = directory + "/root.pem"
        try Data(pki.rootCertificate.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The verifier settings that make it trust this PKI (and `extraRoots`). No revocation checks: the fake App
    /// Store's OCSP responder answers about its own chain only, not this PKI's.
    func verifierSettings(extraRoots: [String] = []) -> [String: String] {
        ["APPLE_ROOT_CERTIFICATES": ([rootPath] + extraRoots).joined(separator: ","), "APPLE_REVOCATION_CHECK": "off"]
    }

    /// Starts collecting the events topic of `pipeline`.
    func collectEvents(_ pipeline: Pipeline) throws {
        let events = try TopicCollector(bootstrapServers: pipeline.kafka.bootstrapServers, topic: Self.eventsTopic)
        collector.withLock { $0 = events }
    }

    var events: TopicCollector {
        get throws { try #require(collector.withLock { $0 }, "collectEvents was not called") }
    }

    /// A notification of `type` signed now.
    func notification(
        _ type: String, subtype: String? = nil, configure: (inout FakeNotification.Options) -> Void = { _ in }
    ) -> FakeNotification {
        var options = FakeNotification.Options()
        configure(&options)
        return FakeNotification.make(type: type, subtype: subtype, options: options)
    }

    /// The record the ingest would write for `notification` signed by `signer` (this PKI's by default).
    func record(_ notification: FakeNotification, signer: JWSSigner? = nil) throws -> (key: [UInt8], value: [UInt8]) {
        let signed = try notification.signedPayload(signer: signer ?? pki.signer)
        let value = try MessageCoding.encode(
            NotificationRecord(signedPayload: signed, receivedAtMs: Int64(Date().timeIntervalSince1970 * 1000)))
        let key = notification.transaction?.originalTransactionId ?? notification.notificationUUID
        return (Array(key.utf8), value)
    }

    /// Produces `record` to the notifications topic and waits for Kafka's acknowledgement.
    func produce(_ record: (key: [UInt8], value: [UInt8]), pipeline: Pipeline) async throws {
        _ = try await pipeline.producer.send(
            topic: Self.notificationsTopic, key: record.key, value: record.value, headers: [])
    }

    /// Every event written so far, decoded.
    func writtenEvents() throws -> [PurchaseEvent] {
        try events.messages.map { try MessageCoding.decode(PurchaseEvent.self, from: $0.value) }
    }

    /// Event ids with at least one event.
    func eventIds() throws -> Set<String> {
        Set(try events.messages.compactMap { $0.headers.value(named: MessageHeaders.eventId) }.map {
            String(decoding: $0, as: UTF8.self)
        })
    }

    /// Waits until every id in `ids` has an event.
    func waitForEvents(_ ids: some Collection<String>, timeout: Duration = .seconds(60)) async -> Bool {
        let wanted = Set(ids)
        return await eventually(timeout: timeout, interval: .milliseconds(200)) {
            (try? wanted.isSubset(of: self.eventIds())) ?? false
        }
    }

    func close() {
        collector.withLock { $0?.close() }
    }
}
