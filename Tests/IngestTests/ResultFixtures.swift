import Foundation
import Ingest
import Kafka
import ReceiptModel
import Synchronization
import ServiceSupport

/// Result messages as the verifier writes them, for feeding the index in tests.
enum ResultFixtures {
    /// The receipt the tests post (`{"receipt_data":"aGVsbG8=", ...}`).
    static let receipt = "aGVsbG8="

    /// The fingerprint of a submission of `receipt` without expectations: what results carry by default, so that a
    /// test posting that receipt again resubmits "the same" submission.
    static let fingerprint = Submission(submissionId: "any", receiptData: receipt, submittedAtMs: 0).fingerprint

    static func result(
        _ id: String, outcome: Outcome = .verified, transactionId: String = "1000", verifiedAtMs: Int64? = nil,
        clientId: String? = nil, fingerprint: String? = ResultFixtures.fingerprint
    ) -> VerificationResult {
        let transaction = VerifiedTransaction(
            TransactionFields(
                transactionId: transactionId, originalTransactionId: transactionId, productId: "com.example.coins",
                quantity: 1, purchaseDateMs: 1_690_000_000_000),
            environment: .production)
        let reason: Reason? =
            switch outcome {
            case .verified: nil
            case .rejected: .invalidReceipt
            case .failed: .appleUnavailable
            }
        return VerificationResult(
            submissionId: id, orderId: "order-\(id)", userId: nil, clientId: clientId, outcome: outcome,
            reason: reason, source: .verifyReceipt, message: nil, appleStatus: 0,
            environment: .production, bundleId: "com.example.app",
            transactions: outcome == .verified ? [transaction] : [], submissionFingerprint: fingerprint, attempts: 1,
            verifiedAtMs: verifiedAtMs ?? Int64(Date().timeIntervalSince1970 * 1000))
    }

    static func bytes(
        _ id: String, outcome: Outcome = .verified, clientId: String? = nil,
        fingerprint: String? = ResultFixtures.fingerprint
    ) throws -> [UInt8] {
        VerificationResultJSON.encode(result(id, outcome: outcome, clientId: clientId, fingerprint: fingerprint))
    }

    static func message(_ value: [UInt8], offset: Int64 = 0, timestampMs: Int64? = nil) -> KafkaMessage {
        KafkaMessage(
            topic: ServiceTopic.results.defaultName, partition: 0, offset: offset, key: nil, value: value,
            timestampMs: timestampMs)
    }
}

/// A `ResultFeed` the test drives: `emit` delivers a message as the follower's thread would.
final class FakeResultFeed: ResultFeed {
    /// In a struct: a `Locked` of a bare function type would wrap the closure in a new thunk on every access.
    private struct Sink: Sendable {
        let deliver: @Sendable (KafkaMessage) -> Void
    }

    private let deliver = Locked<Sink?>(nil)
    private let caughtUp: Atomic<Bool>
    private let closed = Atomic<Bool>(false)

    init(caughtUp: Bool = true) {
        self.caughtUp = Atomic(caughtUp)
    }

    func start(deliver: @escaping @Sendable (KafkaMessage) -> Void) {
        self.deliver.withLock { $0 = Sink(deliver: deliver) }
    }

    var isCaughtUp: Bool { caughtUp.load(ordering: .relaxed) }
    var isClosed: Bool { closed.load(ordering: .relaxed) }
    func setCaughtUp(_ value: Bool) { caughtUp.store(value, ordering: .relaxed) }

    func close(timeout: Duration) {
        closed.store(true, ordering: .relaxed)
    }

    func emit(_ message: KafkaMessage) {
        deliver.withLock { $0 }?.deliver(message)
    }

    func emit(_ value: [UInt8]) {
        emit(ResultFixtures.message(value, timestampMs: Int64(Date().timeIntervalSince1970 * 1000)))
    }
}
