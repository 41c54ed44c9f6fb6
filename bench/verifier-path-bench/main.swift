import AppStore
import FakeAppStore
import Foundation
import HTTPClient
import Kafka
import ReceiptModel
import ServiceSupport
import Synchronization
import Verifier

// In-process verifier path: COUNT submissions of the shape bench/verifier.sh produces (a valid fake receipt with one
// transaction, ids `bench-<n>`, keys `user-<n mod 1024>`, the `submission-id` header) each taken through the
// verifier's own per-message work on this thread: the message's bytes decoded and validated (MessageTriage), one
// round at Apple (ReceiptVerifier over VerifyReceiptBackend: the request body built, Apple's answer parsed and
// judged by the verdict rules) and the result record encoded (RoundOutcomeRouter, OutputFactory). Apple's answer is
// the fake App Store's own body for that receipt, handed over by a transport stub where libcurl would hand it over:
// no Kafka, no network, no threads. `valgrind --tool=callgrind` counts it repeatably (bench/verifier-callgrind.sh).
// Prints the messages, the results and their bytes; exits 1 unless every message gave one `verified` result.
//
//   verifier-path-bench COUNT

/// Answers every request at once, on the caller's thread, with the fake App Store's body for the bench's receipt.
final class CannedVerifyReceiptTransport: HTTPTransport {
    private let body: [UInt8]
    private let requests = Atomic<Int>(0)

    init(body: [UInt8]) {
        self.body = body
    }

    /// Requests answered (one per message when nothing is redirected or retried).
    var requestCount: Int { requests.load(ordering: .relaxed) }

    func send(
        _ request: HTTPClientRequest,
        completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        requests.add(1, ordering: .relaxed)
        completion(.success(HTTPClientResponse(status: 200, body: body, httpVersion: "1.1")))
    }

    func close() {}
}

/// What came out: records by outcome and their bytes.
struct Tally {
    var verified = 0
    var other = 0
    var bytes = 0
}

let arguments = CommandLine.arguments
guard arguments.count == 2, let count = Int(arguments[1]), count > 0 else {
    FileHandle.standardError.write(Data("usage: verifier-path-bench COUNT\n".utf8))
    exit(2)
}

/// bench/verifier-bench's receipt (VerifierBench.receipt): the fake answers it 0 with one transaction.
let receipt = Data(#"{"scenario":"valid","transactions":[{"id":"2000000123","product":"gems_100"}]}"#.utf8)
    .base64EncodedString()
guard let answer = FakeVerifyReceiptAnswer.validBody(for: receipt) else {
    FileHandle.standardError.write(Data("the bench receipt is not a valid fake scenario\n".utf8))
    exit(1)
}

let topics = TopicNames(receipts: "bench.submitted", results: "bench.results", retry: "bench.retry", deadLetter: "bench.dlq")
/// 1,024 distinct messages, reused round robin: building them is start-up, which the two-count difference cancels.
let messages = (0..<1_024).map { index -> KafkaMessage in
    let id = "bench-\(index)"
    let value = """
        {"schema_version":1,"submission_id":"\(id)","receipt_data":"\(receipt)","order_id":"order-\(id)",\
        "user_id":"user-\(index)","submitted_at_ms":1700000000000}
        """
    return KafkaMessage(
        topic: topics.receipts, partition: Int32(index % 8), offset: Int64(index), key: Array("user-\(index)".utf8),
        value: Array(value.utf8), headers: [KafkaHeader(name: MessageHeaders.submissionId, string: id)])
}

let logger = Logger(label: "verifier-path-bench", threshold: .warning)
let metrics = MetricsRegistry()
let transport = CannedVerifyReceiptTransport(body: answer)
let backend = VerifyReceiptBackend(
    client: transport,
    endpoints: .init(production: "http://127.0.0.1:9/verifyReceipt", sandbox: "http://127.0.0.1:9/sandbox/verifyReceipt"),
    sharedSecret: nil, metrics: metrics, logger: logger)
let verifier = ReceiptVerifier(
    backend: backend, policy: VerdictPolicy(allowedBundleIds: ["com.example.game"]), logger: logger, metrics: metrics)
let path = SubmissionMessagePath(topics: topics, verifier: verifier)
let tally = Locked(Tally())

let started = Date()
for index in 0..<count {
    path.process(messages[index % messages.count], nowMs: 1_700_000_000_000) { records in
        tally.withLock { tally in
            for record in records {
                if record.kind == .result, record.header(MessageHeaders.outcome) == Outcome.verified.rawValue {
                    tally.verified += 1
                } else {
                    tally.other += 1
                }
                tally.bytes += record.value.count
            }
        }
    }
}
let seconds = Date().timeIntervalSince(started)
let outcome = tally.withLock { $0 }
print(
    "\(count) messages: \(outcome.verified) verified results, \(outcome.other) other records, "
        + "\(outcome.bytes) bytes of records, \(transport.requestCount) verifyReceipt calls, "
        + String(format: "%.2f s", seconds))
guard outcome.verified == count, outcome.other == 0, transport.requestCount == count else {
    print("expected one verified result and one verifyReceipt call per message")
    exit(1)
}
