import Foundation
import Ingest
import Kafka
import ServiceSupport

#if canImport(Glibc)
import Glibc
#endif

// In-process ingest POST path: the ingest service (IngestService: libmicrohttpd, the HTTP server's threads,
// IngestHandler, SubmissionRequest, the result index, the submission's JSON) on a loopback port over a publisher
// that acknowledges every message at once, where librdkafka's delivery report would. A client in this process sends
// COUNT POSTs /v1/receipts of bench/ingest.sh's shape (a 1,536-byte receipt, 2 KiB base64; a unique submission_id;
// 997 users) one after another on one keep-alive connection, and reads each answer. No Kafka, no wrk.
// `valgrind --tool=callgrind` counts it repeatably (bench/ingest-callgrind.sh); the difference of two counts is the
// instructions per POST, server and client together (the client is a few hundred instructions of socket calls).
// Prints the answers by status; exits 1 unless every POST was answered 202.
//
//   ingest-path-bench COUNT

/// Acknowledges every message on the caller's thread with the next offset of partition 0.
final class AcknowledgingPublisher: SubmissionPublisher {
    /// Messages written so far (the next offset) and their bytes.
    private let written = Locked<(count: Int64, bytes: Int)>((0, 0))

    var isConnected: Bool { true }
    var bytes: Int { written.withLock { $0.bytes } }

    func publish(
        topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader],
        completion: @escaping @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void
    ) throws(KafkaError) {
        let offset = written.withLock { written in
            defer { written = (written.count + 1, written.bytes + value.count) }
            return written.count
        }
        completion(.success(KafkaDeliveryReport(topic: topic, partition: 0, offset: offset)))
    }
}

/// One blocking keep-alive HTTP/1.1 connection to 127.0.0.1:port.
struct LoopbackConnection {
    let socket: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16) {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var noDelay: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { fatalError("cannot connect to the ingest on port \(port)") }
    }

    /// Sends `request` and returns the answer's status (the body is read and dropped). Cheap on purpose (a few
    /// thousand instructions against the server's hundreds of thousands): bytes only, no String work.
    mutating func exchange(_ request: [UInt8]) -> Int {
        var sent = 0
        while sent < request.count {
            let written = request.withUnsafeBytes { send(socket, $0.baseAddress! + sent, request.count - sent, 0) }
            guard written > 0 else { fatalError("send failed") }
            sent += written
        }
        while true {
            if let (status, length) = Self.answer(in: buffer) {
                buffer.removeFirst(length)
                return status
            }
            let before = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: 4096))
            let read = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + before, 4096, 0) }
            guard read > 0 else { fatalError("the ingest closed the connection") }
            buffer.removeLast(4096 - read)
        }
    }

    /// The status and whole length of a complete answer at the start of `bytes` (head and Content-Length body).
    private static func answer(in bytes: [UInt8]) -> (Int, Int)? {
        bytes.withUnsafeBufferPointer { bytes -> (Int, Int)? in
            // "HTTP/1.1 202 ...": the status is bytes 9..<12.
            guard bytes.count >= 12, let headEnd = headEnd(bytes) else { return nil }
            let status = bytes[9..<12].reduce(0) { $0 * 10 + Int($1 &- 0x30) }
            let total = headEnd + contentLength(bytes[..<headEnd])
            return bytes.count >= total ? (status, total) : nil
        }
    }

    /// The index just past the head's blank line.
    private static func headEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 3
        while index < bytes.count {
            if bytes[index] == 0x0A, bytes[index - 1] == 0x0D, bytes[index - 2] == 0x0A, bytes[index - 3] == 0x0D {
                return index + 1
            }
            index += 1
        }
        return nil
    }

    /// The value of the head's Content-Length line (any case), 0 without one.
    private static func contentLength(_ head: Slice<UnsafeBufferPointer<UInt8>>) -> Int {
        let name = Array("\r\ncontent-length:".utf8)
        var index = head.startIndex
        while index + name.count <= head.endIndex {
            if zip(head[index..<index + name.count], name).allSatisfy({ ($0 | 0x20) == ($1 | 0x20) }) {
                var value = 0
                var digit = index + name.count
                while digit < head.endIndex, head[digit] == 0x20 { digit += 1 }
                while digit < head.endIndex, (0x30...0x39).contains(head[digit]) {
                    value = value * 10 + Int(head[digit] - 0x30)
                    digit += 1
                }
                return value
            }
            index += 1
        }
        return 0
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 2, let count = Int(arguments[1]), count > 0 else {
    FileHandle.standardError.write(Data("usage: ingest-path-bench COUNT\n".utf8))
    exit(2)
}

/// A fixed receipt (bench/ingest.sh draws one from /dev/urandom): the same bytes every run, so the same count.
var generator = UInt64(0x9E37_79B9_7F4A_7C15)
let receiptBytes = (0..<1_536).map { _ -> UInt8 in
    generator = generator &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return UInt8(truncatingIfNeeded: generator >> 56)
}
let receipt = Data(receiptBytes).base64EncodedString()
/// Every request built before the run (start-up, which the two-count difference cancels), each with its own id.
func request(_ index: Int) -> [UInt8] {
    let body = #"{"receipt_data":"\#(receipt)","submission_id":"bench-path-\#(index)","#
        + #""user_id":"user-\#(index % 997)"}"#
    let head = "POST /v1/receipts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + "Content-Length: \(body.utf8.count)\r\n\r\n"
    return Array((head + body).utf8)
}
let requests = (0..<count).map(request)

var settings = IngestSettings(
    kafka: KafkaConfiguration(), listen: ListenAddress(host: "127.0.0.1", port: 0), httpThreads: 1)
settings.resultIndexLimits.maxPending = max(settings.resultIndexLimits.maxPending, count)
let publisher = AcknowledgingPublisher()
let service = IngestService(
    settings: settings, publisher: publisher, logger: Logger(label: "ingest-path-bench", threshold: .warning),
    metrics: MetricsRegistry())
try service.start()

var connection = LoopbackConnection(port: service.port)
var statuses: [Int: Int] = [:]
let started = Date()
for index in 0..<count {
    statuses[connection.exchange(requests[index]), default: 0] += 1
}
let seconds = Date().timeIntervalSince(started)
close(connection.socket)
print(
    "\(count) POSTs: " + statuses.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        + ", \(publisher.bytes) bytes written, " + String(format: "%.2f s", seconds))
guard statuses[202] == count else {
    print("expected every POST answered 202")
    exit(1)
}
