import Foundation
import AppStore
import Kafka
import ReceiptModel
import Synchronization
import TestSupport
import Testing
import ServiceSupport

@testable import Verifier

/// Records published records; acknowledges at once unless told to hold them, and can fail the next N publishes.
final class FakePublisher: RecordPublishing {
    struct State {
        var published: [OutgoingRecord] = []
        var held: [(OutgoingRecord, @Sendable (PublishFailure?) -> Void)] = []
        var holdAcks = false
        var failuresLeft = 0
        var attempts = 0
        /// When set, decides per record whether Kafka refuses it (checked before `failuresLeft`).
        var refuse: (@Sendable (OutgoingRecord) -> PublishFailure?)?
    }
    let state = Locked(State())

    func publish(_ record: OutgoingRecord, completion: @escaping @Sendable (PublishFailure?) -> Void) {
        enum Action {
            case ack
            case fail(PublishFailure)
            case hold
        }
        let action: Action = state.withLock { state in
            state.attempts += 1
            if let failure = state.refuse?(record) { return .fail(failure) }
            if state.failuresLeft > 0 {
                state.failuresLeft -= 1
                return .fail(PublishFailure(message: "injected failure"))
            }
            if state.holdAcks {
                state.held.append((record, completion))
                return .hold
            }
            state.published.append(record)
            return .ack
        }
        switch action {
        case .ack: completion(nil)
        case .fail(let failure): completion(failure)
        case .hold: break
        }
    }

    var published: [OutgoingRecord] { state.withLock { $0.published } }
    var heldCount: Int { state.withLock { $0.held.count } }

    /// Acknowledges the held record at `index` (in publish order among those still held).
    func acknowledgeHeld(at index: Int) {
        let completion = state.withLock { state in
            let (record, completion) = state.held.remove(at: index)
            state.published.append(record)
            return completion
        }
        completion(nil)
    }

    func acknowledgeAllHeld() {
        while heldCount > 0 { acknowledgeHeld(at: 0) }
    }

    func records(of kind: OutgoingRecordKind) -> [OutgoingRecord] { published.filter { $0.kind == kind } }
}

/// Holds verification requests until the test answers them.
final class FakeVerifier: SubmissionVerifying {
    let requests = Locked<[(Submission, @Sendable (VerificationOutcome) -> Void)]>([])
    /// When set, answers every request at once with this.
    let automatic = Locked<VerificationOutcome?>(nil)
    let calls = Atomic<Int>(0)

    func verify(_ submission: Submission, completion: @escaping @Sendable (VerificationOutcome) -> Void) {
        calls.add(1, ordering: .relaxed)
        if let outcome = automatic.withLock({ $0 }) {
            completion(outcome)
            return
        }
        requests.withLock { $0.append((submission, completion)) }
    }

    var pendingIds: [String] { requests.withLock { $0.map(\.0.submissionId) } }

    /// Answers the pending request for `submissionId`.
    func answer(_ submissionId: String, with outcome: VerificationOutcome) {
        let completion = requests.withLock { requests -> (@Sendable (VerificationOutcome) -> Void)? in
            guard let index = requests.firstIndex(where: { $0.0.submissionId == submissionId }) else { return nil }
            return requests.remove(at: index).1
        }
        completion?(outcome)
    }

    func answerAll(with outcome: VerificationOutcome) {
        for id in pendingIds { answer(id, with: outcome) }
    }
}

/// Records consumer control calls; the paused set is what the consumer would have.
final class FakeControl: PartitionControl {
    struct State {
        var paused: Set<TopicPartition> = []
        var intakeHeld = false
        var stored: [TopicPartition: [Int64]] = [:]
        var refuseStores = false
        var commitRequests = 0
    }
    let state = Locked(State())

    func pause(_ partitions: [TopicPartition]) { state.withLock { $0.paused.formUnion(partitions) } }
    func holdIntake(_ held: Bool) { state.withLock { $0.intakeHeld = held } }
    func resume(_ partitions: [TopicPartition], wakingFetchers: Bool) {
        state.withLock { $0.paused.subtract(partitions) }
    }

    func storeOffset(_ partition: TopicPartition, nextOffset: Int64) throws {
        struct NotAssigned: Error {}
        try state.withLock { state in
            if state.refuseStores { throw NotAssigned() }
            state.stored[partition, default: []].append(nextOffset)
        }
    }

    func requestCommit() { state.withLock { $0.commitRequests += 1 } }

    var paused: Set<TopicPartition> { state.withLock { $0.paused } }
    var intakeHeld: Bool { state.withLock { $0.intakeHeld } }
    var commitRequests: Int { state.withLock { $0.commitRequests } }
    func stored(_ partition: TopicPartition) -> [Int64] { state.withLock { $0.stored[partition] ?? [] } }
}

extension VerificationEngine {
    /// Returns once everything the engine was asked to do so far has been done (`waitForQueuedWork`, off the test's
    /// task): the point at which "nothing else happened" can be judged, without a sleep that hopes it is long enough.
    func settled() async {
        await Task.detached { self.waitForQueuedWork() }.value
    }
}

/// Waits for work hopping across Dispatch queues to settle (`eventually`), recording an issue naming `what` when it
/// does not.
func settles(
    _ what: String = "condition", sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async {
    if await !eventually(interval: .milliseconds(2), { condition() }) {
        Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
    }
}

enum Samples {
    static let receipts = TopicPartition(topic: "receipts", partition: 0)
    static let receipts1 = TopicPartition(topic: "receipts", partition: 1)
    static let retry = TopicPartition(topic: "retry", partition: 0)
    static let topics = TopicNames(receipts: "receipts", results: "results", retry: "retry", deadLetter: "dlq")
    static let receiptData =
        "TUlJVE5nWUpLb1pJaHZjTkFRY0NvSUlUSnpDQ0V5TUNBUUV4Q3pBSkJnVXJEZ01DR2dVQU1JSURWZ1lKS29aSWh2Y05BUWNC"

    static func submission(_ id: String, order: String? = "order-\(UUID().uuidString.prefix(4))") -> Submission {
        Submission(
            submissionId: id, receiptData: receiptData, orderId: order, userId: "user-1",
            expectedTransactionId: nil, expectedProductId: nil, submittedAtMs: 1_700_000_000_000)
    }

    static func message(
        _ id: String, offset: Int64, partition: TopicPartition = receipts, key: String? = "user-1"
    ) -> KafkaMessage {
        let bytes = SubmissionJSON.encode(submission(id))
        return KafkaMessage(partition: partition, offset: offset, key: key.map { Array($0.utf8) }, value: bytes)
    }

    static func verified(attempts: Int = 1) -> VerificationOutcome {
        .verdict(
            ReceiptVerdict(
                outcome: .verified, reason: nil, message: nil, appleStatus: 0, environment: .production,
                bundleId: "com.example.game",
                transactions: [
                    VerifiedTransaction(
                        TransactionFields(
                            transactionId: "1000000460004095", originalTransactionId: "1000000460004095",
                            productId: "gems_100", quantity: 1, purchaseDateMs: 1_539_946_248_000,
                            inAppOwnershipType: "PURCHASED"),
                        environment: .production)
                ],
                attempts: attempts))
    }

    static let unavailable = VerificationOutcome.unavailable(
        VerificationFailure(
            reason: .appleUnavailable, message: "HTTP 503", appleStatus: nil, environment: nil, attempts: 3))

    static func configurationError(_ status: Int, _ message: String, attempts: Int = 1) -> VerificationOutcome {
        .configurationError(
            VerificationFailure(
                reason: .configError, message: message, appleStatus: status, environment: .production,
                attempts: attempts))
    }
}

extension KafkaMessage {
    /// A consumed message on `partition` (the tests name partitions as `TopicPartition`s, like `Samples.receipts`).
    init(partition: TopicPartition, offset: Int64, key: [UInt8]?, value: [UInt8]) {
        self.init(topic: partition.topic, partition: partition.partition, offset: offset, key: key, value: value)
    }
}
