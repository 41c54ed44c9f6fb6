import HTTPServer
import Kafka
import Testing

@testable import Ingest

/// The one mapping from a write Kafka did not take to the HTTP answer, for submissions and notifications.
@Suite("Kafka write answers")
struct KafkaWriteAnswerTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let failure: KafkaWriteFailure
        let kind: PendingKafkaAnswer.Kind
        let status: Int
        let code: String
        /// Whether the submission id stays reserved (the message may be in Kafka after all).
        let mayHaveBeenWritten: Bool
        var testDescription: String { "\(kind) \(failure) → \(status) \(code)" }
    }

    static let queueFull = KafkaError(code: KafkaErrorCode.queueFull, message: "Local: Queue full")
    static let timedOut = KafkaError(code: KafkaErrorCode.messageTimedOut, message: "Local: Message timed out")
    static let tooLarge = KafkaError(code: KafkaErrorCode.messageSizeTooLarge, message: "Broker: Message size too large")
    static let transport = KafkaError(code: .transport, message: "Local: Broker transport failure")

    static let rows: [Row] = [
        Row(failure: .noBroker, kind: .submission, status: 503, code: "kafka_unavailable", mayHaveBeenWritten: false),
        Row(failure: .refused(queueFull), kind: .submission, status: 503, code: "kafka_queue_full",
            mayHaveBeenWritten: false),
        Row(failure: .refused(tooLarge), kind: .submission, status: 413, code: "body_too_large",
            mayHaveBeenWritten: false),
        Row(failure: .refused(transport), kind: .submission, status: 503, code: "kafka_unavailable",
            mayHaveBeenWritten: false),
        Row(failure: .failed(timedOut), kind: .submission, status: 503, code: "kafka_timeout",
            mayHaveBeenWritten: true),
        Row(failure: .failed(transport), kind: .submission, status: 503, code: "kafka_unavailable",
            mayHaveBeenWritten: false),
        Row(failure: .noReport(afterMs: 30_000), kind: .submission, status: 503, code: "kafka_timeout",
            mayHaveBeenWritten: true),
        Row(failure: .noBroker, kind: .notification, status: 503, code: "kafka_unavailable",
            mayHaveBeenWritten: false),
        Row(failure: .refused(queueFull), kind: .notification, status: 503, code: "kafka_queue_full",
            mayHaveBeenWritten: false),
        Row(failure: .refused(tooLarge), kind: .notification, status: 503, code: "kafka_unavailable",
            mayHaveBeenWritten: false),
        Row(failure: .failed(timedOut), kind: .notification, status: 503, code: "kafka_timeout",
            mayHaveBeenWritten: true),
        Row(failure: .failed(transport), kind: .notification, status: 503, code: "kafka_unavailable",
            mayHaveBeenWritten: false),
        Row(failure: .noReport(afterMs: 30_000), kind: .notification, status: 503, code: "kafka_timeout",
            mayHaveBeenWritten: true),
    ]

    @Test("status, code and Retry-After by failure and kind", arguments: rows)
    func answer(_ row: Row) {
        let answer = APIError.kafkaWrite(
            row.failure, of: row.kind, id: "sub-1", retryAfter: 7, deliveryTimeoutMs: 30_000)
        #expect(answer.status == row.status)
        #expect(answer.code == row.code)
        #expect(row.failure.mayHaveBeenWritten == row.mayHaveBeenWritten)
        let retryAfter = answer.response.headers.first { $0.0 == "Retry-After" }?.1
        // Every 503 tells when to come back; a message too large must not be sent again as it is.
        #expect(retryAfter == (row.status == 503 ? "7" : nil))
        if row.kind == .submission {
            #expect(String(decoding: answer.response.body, as: UTF8.self).contains("\"submission_id\":\"sub-1\""))
        }
    }
}
