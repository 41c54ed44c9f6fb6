import AppStore
import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Testing

import TestSupport
@testable import Verifier

/// When an Apple slot (`VERIFIER_MAX_IN_FLIGHT`) is given back, and what still waits for Kafka (issue 43: the slot
/// cycle). The slot bounds calls to Apple: it is free as soon as Apple's answer arrives, on the thread that delivers
/// it, while the message's offset still waits for the acknowledgement of every record written for it.
@Suite("Apple slots")
struct AppleSlotTests {
    let verifier = FakeVerifier()
    let publisher = FakePublisher()
    let control = FakeControl()
    let clock = ManualClock()
    let registry = MetricsRegistry()

    func makeEngine(maxInFlight: Int, verifier: any SubmissionVerifying) -> VerificationEngine {
        let configuration = VerificationEngine.Configuration(
            topics: Samples.topics, limits: DispatchLimits(maxInFlight: maxInFlight, partitionWindow: 64),
            retryPolicy: RetryRoundPolicy(maximumRounds: 3, initialBackoff: .seconds(10), maximumBackoff: .seconds(60)))
        let engine = VerificationEngine(
            configuration: configuration, verifier: verifier, publisher: publisher, control: control, clock: clock,
            logger: Logger(label: "test", threshold: .error), metrics: VerifierMetrics(registry: registry))
        engine.partitionsAssigned([Samples.receipts])
        return engine
    }

    @Test func theSlotIsFreeWhenAppleAnswersWhileTheOffsetWaitsForKafka() async throws {
        let engine = makeEngine(maxInFlight: 1, verifier: verifier)
        publisher.state.withLock { $0.holdAcks = true }
        engine.consume(Samples.message("s-0", offset: 0))
        engine.consume(Samples.message("s-1", offset: 1))
        await settles("one submission at Apple, one waiting") {
            verifier.pendingIds.count == 1 && engine.snapshot.waitingForApple == 1
        }
        let first = try #require(verifier.pendingIds.first)
        let second = first == "s-0" ? "s-1" : "s-0"

        verifier.answer(first, with: Samples.verified())
        // Synchronously, on the thread that delivered the answer: the slot went to the waiting submission before
        // the answer's own result was even encoded (no hop through the work queue, no wait for Kafka).
        #expect(verifier.pendingIds == [second])
        #expect(engine.snapshot.appleInFlight == 1)
        #expect(engine.snapshot.waitingForApple == 0)

        // The first result is written, but Kafka has not acknowledged it: no offset is stored, so a crash now (the
        // answer in hand, the delivery report not) makes the group read both submissions again: at least once.
        await settles("the first result published, its acknowledgement held") { publisher.heldCount == 1 }
        await engine.settled()
        #expect(control.stored(Samples.receipts).isEmpty)
        #expect(engine.snapshot.liveMessages == 2)

        verifier.answer(second, with: Samples.verified())
        await settles("both results published, acknowledgements held") { publisher.heldCount == 2 }
        #expect(engine.snapshot.appleInFlight == 0)
        await engine.settled()
        #expect(control.stored(Samples.receipts).isEmpty)

        publisher.acknowledgeAllHeld()
        await settles("offset 2 stored once both were acknowledged") { control.stored(Samples.receipts).last == 2 }
        #expect(engine.snapshot.liveMessages == 0)
        #expect(publisher.records(of: .result).count == 2)
    }

    @Test func answersGivenInsideVerifyNeverNestRounds() async throws {
        // A verifier that answers before `verify` returns (the client shut down, a deadline already past): the slot
        // is then freed from the work queue, so 199 waiting submissions do not become 199 nested calls. The first
        // call is held until all the others wait for its slot.
        let nesting = NestingVerifier()
        let engine = makeEngine(maxInFlight: 1, verifier: nesting)
        for offset in 0..<200 { engine.consume(Samples.message("s-\(offset)", offset: Int64(offset))) }
        await settles("one submission at Apple, 199 waiting") { engine.snapshot.waitingForApple == 199 }
        nesting.answerHeld()
        await settles("every submission verified and written") { publisher.records(of: .result).count == 200 }
        #expect(nesting.calls == 200)
        #expect(nesting.deepest == 1)
        await settles("offset 200 stored") { control.stored(Samples.receipts).last == 200 }
    }
}

/// Holds the first submission until `answerHeld`; answers every later one `verified` inside `verify`, recording how
/// deeply `verify` calls nest on one thread.
final class NestingVerifier: SubmissionVerifying {
    private struct Depths {
        var byThread: [UInt: Int] = [:]
        var deepest = 0
        var calls = 0
        var held: (@Sendable (VerificationOutcome) -> Void)?
    }
    private let depths = Locked(Depths())

    var deepest: Int { depths.withLock { $0.deepest } }
    var calls: Int { depths.withLock { $0.calls } }

    func answerHeld() {
        let held = depths.withLock { depths in
            defer { depths.held = nil }
            return depths.held
        }
        held?(Samples.verified())
    }

    func verify(_ submission: Submission, completion: @escaping @Sendable (VerificationOutcome) -> Void) {
        let thread = UInt(bitPattern: Int(bitPattern: pthread_self()))
        let holds = depths.withLock { depths in
            depths.calls += 1
            if depths.calls == 1 {
                depths.held = completion
                return true
            }
            let depth = depths.byThread[thread, default: 0] + 1
            depths.byThread[thread] = depth
            depths.deepest = max(depths.deepest, depth)
            return false
        }
        guard !holds else { return }
        completion(Samples.verified())
        depths.withLock { $0.byThread[thread, default: 1] -= 1 }
    }
}
