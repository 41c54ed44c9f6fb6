import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Testing

import TestSupport
@testable import Verifier

/// The engine end to end with in-memory fakes: what is written, and when offsets are stored.
@Suite("VerificationEngine with fakes")
struct VerificationEngineTests {
    let verifier = FakeVerifier()
    let publisher = FakePublisher()
    let control = FakeControl()
    let clock = ManualClock()
    let registry = MetricsRegistry()

    func makeEngine(
        maxInFlight: Int = 8, window: Int = 64, rounds: Int = 3,
        breaker: AppleCircuitBreaker.Configuration = .init(), publishFailuresBeforeNotReady: Int = 10
    ) -> VerificationEngine {
        var configuration = VerificationEngine.Configuration(
            topics: Samples.topics, limits: DispatchLimits(maxInFlight: maxInFlight, partitionWindow: window),
            retryPolicy: RetryRoundPolicy(
                maximumRounds: rounds, initialBackoff: .seconds(10), maximumBackoff: .seconds(60)),
            breaker: breaker)
        configuration.publishBackoff = Backoff(initial: .milliseconds(10), maximum: .seconds(5))
        configuration.publishFailuresBeforeNotReady = publishFailuresBeforeNotReady
        let engine = VerificationEngine(
            configuration: configuration, verifier: verifier, publisher: publisher, control: control, clock: clock,
            logger: Logger(label: "test", threshold: .error), metrics: VerifierMetrics(registry: registry))
        engine.partitionsAssigned([Samples.receipts, Samples.receipts1, Samples.retry])
        return engine
    }

    @Test func offsetsAreStoredOnlyAfterResultsAreAcknowledgedInPrefixOrder() async throws {
        let engine = makeEngine()
        publisher.state.withLock { $0.holdAcks = true }
        for offset in 0..<3 { engine.consume(Samples.message("s-\(offset)", offset: Int64(offset))) }
        await settles("three Apple calls") { verifier.pendingIds.count == 3 }
        // Apple answers out of order.
        for id in ["s-2", "s-0", "s-1"] { verifier.answer(id, with: Samples.verified()) }
        await settles("three results waiting for Kafka") { publisher.heldCount == 3 }
        #expect(control.stored(Samples.receipts).isEmpty)

        let order = publisher.state.withLock { $0.held.map { $0.0.header(MessageHeaders.submissionId)! } }
        publisher.acknowledgeHeld(at: order.firstIndex(of: "s-2")!)
        await engine.settled()
        #expect(control.stored(Samples.receipts).isEmpty)  // 0 and 1 are not acknowledged yet
        let rest = publisher.state.withLock { $0.held.map { $0.0.header(MessageHeaders.submissionId)! } }
        publisher.acknowledgeHeld(at: rest.firstIndex(of: "s-0")!)
        await settles("offset 1 stored") { control.stored(Samples.receipts) == [1] }
        publisher.acknowledgeAllHeld()
        await settles("offset 3 stored") { control.stored(Samples.receipts) == [1, 3] }
        let results = publisher.records(of: .result)
        #expect(results.count == 3)
        #expect(
            results.allSatisfy { $0.key == Array("user-1".utf8) && $0.header(MessageHeaders.outcome) == "verified" })
        #expect(engine.snapshot.liveMessages == 0)
        #expect(registry.render().contains(#"verifier_results_total{outcome="verified",reason="none"} 3"#))
    }

    @Test func tooManySubmissionsWaitingForAppleHoldTheConsumersIntakeWithoutPausingIt() async throws {
        // One Apple slot: the pending gate holds the intake at 4 waiting and releases it at 2.
        let engine = makeEngine(maxInFlight: 1)
        for offset in 0..<5 { engine.consume(Samples.message("s-\(offset)", offset: Int64(offset))) }
        await settles("the intake held") { control.intakeHeld }
        #expect(control.paused.isEmpty)
        #expect(engine.snapshot.intakeHeld)
        // One at a time, in whatever order triage (on the work pool) queued them.
        var answered: Set<String> = []
        for _ in 0..<5 {
            await settles("one more submission at Apple") { verifier.pendingIds.count == 1 }
            let id = try #require(verifier.pendingIds.first)
            verifier.answer(id, with: Samples.verified())
            answered.insert(id)
        }
        #expect(answered == Set((0..<5).map { "s-\($0)" }))
        await settles("the intake released") { !control.intakeHeld }
        #expect(control.paused.isEmpty)
        await settles("every offset stored") { control.stored(Samples.receipts).last == 5 }
    }

    @Test func aFailedPublishIsRetriedAndTheOffsetWaitsForIt() async throws {
        let engine = makeEngine()
        verifier.automatic.withLock { $0 = Samples.verified() }
        publisher.state.withLock { $0.failuresLeft = 2 }
        engine.consume(Samples.message("s-1", offset: 5))
        await settles("first attempt failed, next scheduled") {
            publisher.state.withLock { $0.attempts } == 1 && clock.pendingTimers == 1
        }
        clock.advance(by: .milliseconds(10))
        await settles("second attempt failed, next scheduled with twice the wait") {
            publisher.state.withLock { $0.attempts } == 2 && clock.pendingTimers == 1
        }
        #expect(control.stored(Samples.receipts).isEmpty)
        clock.advance(by: .milliseconds(10))
        #expect(publisher.state.withLock { $0.attempts } == 2)
        clock.advance(by: .milliseconds(10))
        await settles("stored after the retry succeeded") { control.stored(Samples.receipts) == [6] }
        #expect(publisher.records(of: .result).count == 1)
        #expect(registry.render().contains(#"verifier_publish_failures_total{kind="result",retriable="true"} 2"#))
    }

    @Test func aMalformedMessageNeverBlocksItsPartition() async throws {
        let engine = makeEngine()
        verifier.automatic.withLock { $0 = Samples.verified() }
        engine.consume(KafkaMessage(partition: Samples.receipts, offset: 0, key: nil, value: Array("not json".utf8)))
        engine.consume(Samples.message("s-1", offset: 1))
        await settles("both offsets stored") { control.stored(Samples.receipts).last == 2 }
        #expect(publisher.records(of: .deadLetter).count == 1)
        #expect(publisher.records(of: .result).count == 1)
    }

    @Test func aSubmissionWithoutVerdictGoesToTheRetryTopicAndIsRetriedWhenDue() async throws {
        let engine = makeEngine(rounds: 2)
        engine.consume(Samples.message("s-1", offset: 0))
        await settles("Apple called") { verifier.pendingIds == ["s-1"] }
        verifier.answer("s-1", with: Samples.unavailable)
        await settles("retry record written") { publisher.records(of: .retry).count == 1 }
        await settles("input offset stored") { control.stored(Samples.receipts) == [1] }
        #expect(publisher.records(of: .result).isEmpty)

        // The retry record comes back on the retry topic: held (its partition paused) until due.
        let retry = publisher.records(of: .retry)[0]
        engine.consume(KafkaMessage(partition: Samples.retry, offset: 0, key: retry.key, value: retry.value))
        await settles("retry partition paused") { control.paused.contains(Samples.retry) }
        #expect(!control.paused.contains(Samples.receipts))
        #expect(verifier.pendingIds.isEmpty)
        clock.advance(by: .seconds(9))
        #expect(verifier.pendingIds.isEmpty)
        clock.advance(by: .seconds(1))
        await settles("second round started") { verifier.pendingIds == ["s-1"] }
        await settles("retry partition resumed") { !control.paused.contains(Samples.retry) }

        // The last round fails too: DLQ record plus a failed / apple_unavailable result.
        verifier.answer("s-1", with: Samples.unavailable)
        await settles("retry offset stored") { control.stored(Samples.retry) == [1] }
        let result = try MessageCoding.decode(
            VerificationResult.self, from: try #require(publisher.records(of: .result).first).value)
        #expect(result.outcome == .failed && result.reason == .appleUnavailable && result.attempts == 6)
        let dlq = try MessageCoding.decode(
            DeadLetterRecord.self, from: try #require(publisher.records(of: .deadLetter).first).value)
        #expect(dlq.sourceTopic == "retry" && dlq.reason == .appleUnavailable)
    }

    @Test func aRetryRecordDueFarAheadWaitsNoLongerThanTheLongestBackoff() async throws {
        let engine = makeEngine(rounds: 3)
        let record = RetryRecord(
            submission: Samples.submission("s-far"), round: 1, attempts: 2,
            notBeforeMs: clock.wallMilliseconds() + 86_400_000, lastAppleStatus: nil, lastError: "timeout")
        engine.consume(
            KafkaMessage(partition: Samples.retry, offset: 0, key: nil, value: RetryRecordJSON.encode(record)))
        await settles("held") { clock.pendingTimers == 1 && control.paused.contains(Samples.retry) }
        clock.advance(by: .seconds(59))
        #expect(verifier.pendingIds.isEmpty)
        clock.advance(by: .seconds(1))  // the policy's maximum backoff is 60 s
        await settles("verified after the longest backoff") { verifier.pendingIds == ["s-far"] }
        // Answered, its result is published and the retry partition resumes. (Left unanswered, the fake verifier's
        // completion would keep the engine alive in a cycle that LeakSanitizer reports.)
        verifier.answerAll(with: Samples.verified())
        await settles("its result published") {
            publisher.records(of: .result).count == 1 && !control.paused.contains(Samples.retry)
        }
    }

    @Test func anAppleOutageHoldsWorkBackWithoutFailedResults() async throws {
        let engine = makeEngine(
            maxInFlight: 4, rounds: 2,
            breaker: .init(windowSize: 4, minimumObservations: 4, failureRatio: 0.5, initialProbeInterval: .seconds(1)))
        for offset in 0..<4 { engine.consume(Samples.message("s-\(offset)", offset: Int64(offset))) }
        await settles("four at Apple") { verifier.pendingIds.count == 4 }
        verifier.answerAll(with: Samples.unavailable)
        await settles("breaker open") { engine.snapshot.breakerOpen }
        engine.consume(Samples.message("s-4", offset: 4))
        await settles("everything paused with work waiting") {
            engine.snapshot.waitingForApple == 1
                && control.paused.isSuperset(of: [Samples.receipts, Samples.receipts1])
        }
        // The round that failed once the breaker was open is not counted: all four wait on the retry topic.
        await settles("four retry records") { publisher.records(of: .retry).count == 4 }
        #expect(publisher.records(of: .result).isEmpty)
        #expect(verifier.pendingIds.isEmpty)

        clock.advance(by: .seconds(1))
        engine.tick()
        await settles("one probe") { verifier.pendingIds == ["s-4"] }
        verifier.answer("s-4", with: Samples.verified())
        await settles("breaker closed") { !engine.snapshot.breakerOpen }
        await settles("resumed") { control.paused.isEmpty }
        await settles("probe result written") { publisher.records(of: .result).count == 1 }
        #expect(registry.render().contains(#"verifier_breaker_transitions_total{to="open"} 1"#))
    }

    @Test func revokeWaitsBoundedlyAndLateRoundsWriteNothing() async throws {
        let engine = makeEngine()
        engine.consume(Samples.message("s-0", offset: 0))
        engine.consume(Samples.message("s-1", offset: 1))
        await settles("two at Apple") { verifier.pendingIds.count == 2 }
        verifier.answer("s-0", with: Samples.verified())
        await settles("first stored") { control.stored(Samples.receipts) == [1] }

        let started = ContinuousClock.now
        engine.partitionsRevoking([Samples.receipts], timeout: .milliseconds(50))
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(registry.render().contains("verifier_abandoned_messages_total 1"))
        // s-1 finishes after the partition was given up: the new owner reads it again, so nothing is written here
        // (no second retry chain) and its offset is not stored.
        #expect(engine.snapshot.appleInFlight == 1)  // still at Apple: the wait below is for its late end
        verifier.answer("s-1", with: Samples.unavailable)
        // The late round has reached its end (the engine counts it off Apple) before "nothing written" is judged.
        await settles("late round ended") { engine.snapshot.appleInFlight == 0 }
        await engine.settled()
        #expect(publisher.published.count == 1)
        #expect(publisher.state.withLock { $0.attempts } == 1)
        #expect(control.stored(Samples.receipts) == [1])
        #expect(engine.snapshot.appleInFlight == 0)
        #expect(registry.render().contains("verifier_abandoned_messages_total 1"))
        engine.consume(Samples.message("s-2", offset: 2))  // no longer assigned: ignored
        await engine.settled()
        #expect(verifier.pendingIds.isEmpty)
    }

    @Test func aPositionResetBackwardsProcessesTheMessageAgainAndDropsTheOldRound() async throws {
        let engine = makeEngine()
        engine.consume(Samples.message("s-5", offset: 5))
        await settles("at Apple") { verifier.pendingIds == ["s-5"] }
        // librdkafka reset the position to an earlier offset (OFFSET_OUT_OF_RANGE after a truncation).
        engine.consume(Samples.message("s-3", offset: 3))
        await settles("the earlier offset is processed") { verifier.pendingIds.count == 2 }
        #expect(engine.snapshot.appleInFlight == 2)
        verifier.answer("s-5", with: Samples.unavailable)
        verifier.answer("s-3", with: Samples.verified())
        await settles("stored") { control.stored(Samples.receipts) == [4] }
        await settles("both rounds ended") { engine.snapshot.appleInFlight == 0 }
        await engine.settled()
        #expect(publisher.published.count == 1)  // the old position's round wrote nothing
        #expect(publisher.records(of: .result).first?.header(MessageHeaders.submissionId) == "s-3")
        #expect(control.stored(Samples.receipts) == [4])
        #expect(registry.render().contains("verifier_abandoned_messages_total 1"))
        #expect(engine.snapshot.liveMessages == 0 && engine.snapshot.appleInFlight == 0)
    }

    @Test func drainFinishesInFlightWorkAndStoresItsOffsets() async throws {
        let engine = makeEngine(maxInFlight: 1)
        engine.consume(Samples.message("s-0", offset: 0))
        // Decoding runs on a concurrent queue: wait, so that the first offset is the one at Apple.
        await settles("first at Apple") { verifier.pendingIds == ["s-0"] }
        engine.consume(Samples.message("s-1", offset: 1))
        await settles("one at Apple, one waiting") {
            verifier.pendingIds.count == 1 && engine.snapshot.waitingForApple == 1
        }
        // Apple answers once the drain has begun (and so dropped the waiting one).
        let answer = Task.detached {
            await settles("draining") { engine.snapshot.stopping }
            verifier.answerAll(with: Samples.verified())
        }
        let drained = await Task.detached { engine.drain(within: .seconds(2)) }.value
        await answer.value
        #expect(drained)
        #expect(control.stored(Samples.receipts) == [1])
        #expect(control.paused.isSuperset(of: [Samples.receipts, Samples.receipts1, Samples.retry]))
        #expect(verifier.calls.load(ordering: .relaxed) == 1)  // the waiting one was left for redelivery
    }

    @Test func roundsEndingAfterTheDrainGaveUpWriteNothing() async throws {
        let engine = makeEngine()
        engine.consume(Samples.message("s-0", offset: 0))
        await settles("at Apple") { verifier.pendingIds == ["s-0"] }
        let drained = await Task.detached { engine.drain(within: .milliseconds(30)) }.value
        #expect(!drained)
        // The App Store client is closed after the drain: its running rounds end without a verdict.
        #expect(engine.snapshot.appleInFlight == 1)  // still at Apple: the wait below is for its late end
        verifier.answerAll(with: Samples.unavailable)
        await settles("late round ended") { engine.snapshot.appleInFlight == 0 }
        await engine.settled()
        #expect(publisher.published.isEmpty)  // no retry record: the message is read again after the restart
        #expect(publisher.state.withLock { $0.attempts } == 0)
        #expect(control.stored(Samples.receipts).isEmpty)
        #expect(registry.render().contains("verifier_abandoned_messages_total 1"))
        #expect(engine.snapshot.appleInFlight == 0 && engine.snapshot.liveMessages == 0)
    }

    @Test func aConfigurationErrorIsCountedForAlerting() async throws {
        let engine = makeEngine()
        verifier.automatic.withLock {
            $0 = Samples.configurationError(21004, "shared secret mismatch")
        }
        engine.consume(Samples.message("s-1", offset: 0))
        await settles("stored") { control.stored(Samples.receipts) == [1] }
        #expect(verifier.calls.load(ordering: .relaxed) == 1)
        let text = registry.render()
        #expect(text.contains("verifier_config_errors_total 1"))
        #expect(text.contains(#"verifier_dlq_records_total{reason="config_error"} 1"#))
        #expect(text.contains(#"verifier_results_total{outcome="failed",reason="config_error"} 1"#))
    }
}

@Suite("ConsumerControlApplier")
struct ConsumerControlApplierTests {
    @Test func anOvertakenBatchNeitherUndoesAPauseNorMovesAnOffsetBack() {
        let control = FakeControl()
        let applier = ConsumerControlApplier(control: control, logger: Logger(label: "test", threshold: .error))
        let p = Samples.receipts
        applier.apply(ControlBatch(sequence: 2, actions: [.pause(p), .storeOffset(p, nextOffset: 10, epoch: 1)]))
        applier.apply(ControlBatch(sequence: 1, actions: [.resume(p), .storeOffset(p, nextOffset: 5, epoch: 1)]))
        #expect(control.paused == [p])
        #expect(control.stored(p) == [10])
        applier.apply(ControlBatch(sequence: 3, actions: [.resume(p), .storeOffset(p, nextOffset: 3, epoch: 2)]))
        #expect(control.paused.isEmpty)
        #expect(control.stored(p) == [10, 3])  // a new assignment epoch starts over
    }

    @Test func aBatchThatStoredAnOffsetAsksForACommitAndOthersDoNot() {
        let control = FakeControl()
        let applier = ConsumerControlApplier(control: control, logger: Logger(label: "test", threshold: .error))
        let p = Samples.receipts
        applier.apply(ControlBatch(sequence: 1, actions: [.pause(p)]))
        #expect(control.commitRequests == 0)
        applier.apply(ControlBatch(sequence: 2, actions: [.storeOffset(p, nextOffset: 10, epoch: 1), .resume(p)]))
        #expect(control.commitRequests == 1)
        // Nothing new stored (an offset that does not advance): no commit asked for.
        applier.apply(ControlBatch(sequence: 3, actions: [.storeOffset(p, nextOffset: 10, epoch: 1)]))
        #expect(control.commitRequests == 1)
        // A store the consumer refuses (partition no longer assigned): nothing to commit either.
        control.state.withLock { $0.refuseStores = true }
        applier.apply(ControlBatch(sequence: 4, actions: [.storeOffset(p, nextOffset: 11, epoch: 1)]))
        #expect(control.commitRequests == 1)
        control.state.withLock { $0.refuseStores = false }
        applier.apply(ControlBatch(sequence: 5, actions: [.storeOffset(p, nextOffset: 12, epoch: 1)]))
        #expect(control.commitRequests == 2)
        #expect(control.stored(p) == [10, 12])
    }
}
