import Foundation
import Kafka
import ReceiptModel
import ServiceSupport
import Testing

import TestSupport
@testable import Verifier

/// Publish failures that retrying cannot fix: fatal producer errors, records too large, authorization.
@Suite("VerificationEngine: publish failures by kind")
struct PublishFailureTests {
    let verifier = FakeVerifier()
    let publisher = FakePublisher()
    let control = FakeControl()
    let clock = ManualClock()
    let registry = MetricsRegistry()

    func makeEngine(rounds: Int = 3, publishFailuresBeforeNotReady: Int = 10) -> VerificationEngine {
        var configuration = VerificationEngine.Configuration(
            topics: Samples.topics, limits: DispatchLimits(maxInFlight: 8, partitionWindow: 64),
            retryPolicy: RetryRoundPolicy(
                maximumRounds: rounds, initialBackoff: .seconds(10), maximumBackoff: .seconds(60)))
        configuration.publishBackoff = Backoff(initial: .milliseconds(10), maximum: .seconds(5))
        configuration.publishFailuresBeforeNotReady = publishFailuresBeforeNotReady
        let engine = VerificationEngine(
            configuration: configuration, verifier: verifier, publisher: publisher, control: control,
            clock: clock,
            logger: Logger(label: "test", threshold: .error), metrics: VerifierMetrics(registry: registry)
        )
        engine.partitionsAssigned([Samples.receipts, Samples.retry])
        return engine
    }

    static func kafkaFailure(_ code: KafkaErrorCode, fatal: Bool = false) -> PublishFailure {
        PublishFailure(
            KafkaError(code: code, message: "refused: \(KafkaError.describe(code: code))", isFatal: fatal)
        )
    }

    @Test func kafkaErrorsAreClassified() {
        let tooLarge = Self.kafkaFailure(KafkaErrorCode.messageSizeTooLarge)
        #expect(
            tooLarge.isMessageTooLarge && !tooLarge.isRetriable && !tooLarge.isFatal
                && tooLarge.code == .messageSizeTooLarge && tooLarge.code?.rawValue == 10)
        let timedOut = Self.kafkaFailure(KafkaErrorCode.messageTimedOut)
        #expect(timedOut.isRetriable && !timedOut.isMessageTooLarge)
        let fatal = Self.kafkaFailure(KafkaErrorCode.fatal)
        #expect(fatal.isFatal && !fatal.isRetriable)
        #expect(!Self.kafkaFailure(.topicAuthorizationFailed).isRetriable)  // a code the project does not name
        #expect(!Self.kafkaFailure(KafkaErrorCode.unknownTopic).isRetriable)  // needs an operator, not time
        #expect(Self.kafkaFailure(KafkaErrorCode.queueFull).isQueueFull)
    }

    @Test func aFatalProducerErrorMakesTheProcessUnhealthyAndLeavesTheOffset() async throws {
        let engine = makeEngine()
        verifier.automatic.withLock { $0 = Samples.verified() }
        publisher.state.withLock {
            $0.refuse = { _ in Self.kafkaFailure(KafkaErrorCode.fatal, fatal: true) }
        }
        #expect(engine.livenessProblem == nil)
        engine.consume(Samples.message("s-1", offset: 0))
        await settles("abandoned") {
            engine.snapshot.liveMessages == 0 && publisher.state.withLock { $0.attempts } == 1
        }
        #expect(try #require(engine.livenessProblem).contains("fatal"))
        #expect(engine.publishingProblem != nil)
        #expect(clock.pendingTimers == 0)  // not retried: a restart redelivers it
        #expect(control.stored(Samples.receipts).isEmpty)
        #expect(
            registry.render().contains(
                #"verifier_publish_failures_total{kind="result",retriable="false"} 1"#))
    }

    @Test func aDeadLetterTooLargeIsWrittenWithoutTheOriginalBytes() async throws {
        let engine = makeEngine()
        publisher.state.withLock {
            $0.refuse = { record in
                guard record.kind == .deadLetter,
                    let dead = try? MessageCoding.decode(DeadLetterRecord.self, from: record.value),
                    !dead.originalValue.isEmpty
                else { return nil }
                return Self.kafkaFailure(KafkaErrorCode.messageSizeTooLarge)
            }
        }
        engine.consume(
            KafkaMessage(partition: Samples.receipts, offset: 7, key: nil, value: Array("{not json".utf8))
        )
        await settles("offset stored") { control.stored(Samples.receipts) == [8] }
        let record = try #require(publisher.records(of: .deadLetter).first)
        let dead = try MessageCoding.decode(DeadLetterRecord.self, from: record.value)
        #expect(dead.originalValue == "")
        #expect(dead.message.contains("too large"))
        #expect(dead.sourceTopic == "receipts" && dead.sourcePartition == 0 && dead.sourceOffset == 7)
        #expect(dead.reason == .malformedSubmission)
        #expect(record.header(MessageHeaders.dlqReason) == "malformed_submission")
        #expect(
            registry.render().contains(#"verifier_dlq_records_total{reason="malformed_submission"} 1"#))
    }

    @Test func aRetryRecordTooLargeEndsTheSubmissionAsAFinalFailure() async throws {
        let engine = makeEngine(rounds: 3)
        publisher.state.withLock {
            $0.refuse = { $0.kind == .retry ? Self.kafkaFailure(KafkaErrorCode.messageSizeTooLarge) : nil }
        }
        engine.consume(Samples.message("s-big", offset: 3))
        await settles("Apple called") { verifier.pendingIds == ["s-big"] }
        verifier.answer("s-big", with: Samples.unavailable)
        await settles("offset stored") { control.stored(Samples.receipts) == [4] }
        #expect(publisher.records(of: .retry).isEmpty)
        let result = try MessageCoding.decode(
            VerificationResult.self, from: try #require(publisher.records(of: .result).first).value)
        #expect(
            result.submissionId == "s-big" && result.outcome == .failed
                && result.reason == .appleUnavailable)
        #expect(result.attempts == 3)
        let dead = try MessageCoding.decode(
            DeadLetterRecord.self, from: try #require(publisher.records(of: .deadLetter).first).value)
        #expect(dead.originalValue == "" && dead.sourceOffset == 3 && dead.reason == .appleUnavailable)
        #expect(dead.submissionId == "s-big")
        #expect(clock.pendingTimers == 0)
        let text = registry.render()
        #expect(
            text.contains(#"verifier_results_total{outcome="failed",reason="apple_unavailable"} 1"#))
        #expect(text.contains("verifier_retries_total 0"))
    }

    @Test func anAuthorizationFailureIsRetriedCountedAndMakesTheProcessNotReady() async throws {
        let engine = makeEngine(publishFailuresBeforeNotReady: 3)
        verifier.automatic.withLock { $0 = Samples.verified() }
        publisher.state.withLock {  // TOPIC_AUTHORIZATION_FAILED on the results topic only
            $0.refuse = { $0.topic == "results" ? Self.kafkaFailure(.topicAuthorizationFailed) : nil }
        }
        engine.consume(Samples.message("s-1", offset: 0))
        await settles("first failure") {
            publisher.state.withLock { $0.attempts } == 1 && clock.pendingTimers == 1
        }
        #expect(engine.publishingProblem == nil)
        clock.advance(by: .milliseconds(10))
        await settles("second failure") {
            publisher.state.withLock { $0.attempts } == 2 && clock.pendingTimers == 1
        }
        clock.advance(by: .milliseconds(20))
        await settles("third failure") {
            publisher.state.withLock { $0.attempts } == 3 && clock.pendingTimers == 1
        }
        let problem = try #require(engine.publishingProblem)
        #expect(problem.contains("results") && problem.contains("29"))
        #expect(engine.livenessProblem == nil)
        #expect(control.stored(Samples.receipts).isEmpty)
        #expect(
            registry.render().contains(
                #"verifier_publish_failures_total{kind="result",retriable="false"} 3"#))

        // Writes to other topics succeeding do not hide the broken one.
        engine.consume(KafkaMessage(partition: Samples.receipts, offset: 1, key: nil, value: Array("x".utf8)))
        await settles("DLQ record written") { publisher.records(of: .deadLetter).count == 1 }
        #expect(engine.publishingProblem != nil)

        // The operator fixes the ACL: the next attempt succeeds and the process is ready again.
        publisher.state.withLock { $0.refuse = nil }
        clock.advance(by: .milliseconds(40))
        await settles("stored") { control.stored(Samples.receipts) == [2] }
        #expect(engine.publishingProblem == nil)
    }
}

extension KafkaErrorCode {
    /// The broker's TOPIC_AUTHORIZATION_FAILED (29): a code production code does not act on by name.
    static let topicAuthorizationFailed = KafkaErrorCode(rawValue: 29)
}
