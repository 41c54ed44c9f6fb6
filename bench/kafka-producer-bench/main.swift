// kafka-producer-bench: produces N messages of S bytes with KafkaProducer as fast as it accepts them and reports
// the throughput (from the first send until every delivery report arrived). Run by bench/kafka-producer.sh, which
// compares it with `kcat -P` on the same embedded cluster.

import Foundation
import Kafka
import ServiceSupport
import Synchronization

enum ProducerBench {
    static let usage = """
        Usage: kafka-producer-bench --bootstrap host:port --topic NAME [--messages N] [--size BYTES]
                                    [--latency-samples N] [-X prop=value]...

        Produces N (default 200000) messages of BYTES (default 1024) to NAME with the Kafka module's producer
        (its defaults: idempotent, linger.ms=5) and prints one line:
          messages=N bytes=B seconds=S messages_per_second=R megabytes_per_second=M failed=F
        With --latency-samples N (default 0) it then sends N messages one at a time, each after the previous one was
        acknowledged, and prints the send-to-acknowledgement latency:
          latency_samples=N p50_ms=A p99_ms=B max_ms=C
        """

    static func run() -> Int32 {
        var bootstrap: String?
        var topic: String?
        var messages = 200_000
        var size = 1024
        var latencySamples = 0
        var extra: [String: String] = [:]
        var arguments = Array(CommandLine.arguments.dropFirst())[...]
        while let argument = arguments.popFirst() {
            switch argument {
            case "--bootstrap": bootstrap = arguments.popFirst()
            case "--topic": topic = arguments.popFirst()
            case "--messages": messages = arguments.popFirst().flatMap { Int($0) } ?? -1
            case "--size": size = arguments.popFirst().flatMap { Int($0) } ?? -1
            case "--latency-samples": latencySamples = arguments.popFirst().flatMap { Int($0) } ?? -1
            case "-X":
                guard let pair = arguments.popFirst(), let equals = pair.firstIndex(of: "=") else {
                    fail("-X needs prop=value")
                    return 2
                }
                extra[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            case "--help", "-h":
                print(usage)
                return 0
            default:
                fail("unknown argument '\(argument)'")
                return 2
            }
        }
        guard let bootstrap, let topic, messages > 0, size > 0, latencySamples >= 0 else {
            fail("--bootstrap and --topic are required; --messages and --size must be positive")
            return 2
        }

        var configuration = KafkaConfiguration(extra)
        configuration.bootstrapServers = bootstrap
        let logger = Logger(label: "kafka-producer-bench", threshold: .warning)
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: configuration, logger: logger)
        } catch {
            fail(error.message)
            return 1
        }
        // Distinct payloads (a counter in the first bytes) so nothing can be deduplicated along the way.
        var payload = [UInt8](repeating: UInt8(ascii: "x"), count: size)
        let delivered = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let total = messages
        let completion: @Sendable (Result<KafkaDeliveryReport, KafkaError>) -> Void = { result in
            if case .failure = result { failed.add(1, ordering: .relaxed) }
            if delivered.add(1, ordering: .relaxed).newValue == total { done.signal() }
        }

        let start = SystemTime.monotonicNanoseconds()
        var sent = 0
        var queueFullWaits = 0
        while sent < messages {
            var counter = sent
            for index in 0..<min(8, size) {
                payload[index] = UInt8(ascii: "0") + UInt8(counter % 10)
                counter /= 10
            }
            do {
                try producer.send(topic: topic, key: nil, value: payload, completion: completion)
                sent += 1
            } catch where error.isQueueFull {
                queueFullWaits += 1
                usleep(500)
            } catch {
                fail("send failed: \(error.message)")
                producer.close(timeout: .seconds(5))
                return 1
            }
        }
        done.wait()
        let seconds = SystemTime.secondsSince(start)
        let rate = Double(messages) / seconds
        print(
            "messages=\(messages) bytes=\(size) seconds=\(String(format: "%.3f", seconds)) "
                + "messages_per_second=\(Int(rate)) "
                + "megabytes_per_second=\(String(format: "%.1f", rate * Double(size) / 1_048_576)) "
                + "failed=\(failed.load(ordering: .relaxed)) queue_full_waits=\(queueFullWaits)")
        if latencySamples > 0, !measureLatency(producer, topic: topic, payload: payload, samples: latencySamples) {
            producer.close(timeout: .seconds(5))
            return 1
        }
        producer.close(timeout: .seconds(5))
        return failed.load(ordering: .relaxed) == 0 ? 0 : 1
    }

    /// Sends `samples` messages one after another (each once the previous was acknowledged) and prints the
    /// send-to-acknowledgement latency percentiles: what a request waiting for its Kafka acknowledgement pays.
    static func measureLatency(_ producer: KafkaProducer, topic: String, payload: [UInt8], samples: Int) -> Bool {
        var latencies: [Double] = []
        latencies.reserveCapacity(samples)
        let acknowledged = DispatchSemaphore(value: 0)
        let failures = Atomic<Int>(0)
        for _ in 0..<samples {
            let start = SystemTime.monotonicNanoseconds()
            do {
                try producer.send(topic: topic, key: nil, value: payload) { result in
                    if case .failure = result { failures.add(1, ordering: .relaxed) }
                    acknowledged.signal()
                }
            } catch {
                fail("send failed: \(error.message)")
                return false
            }
            acknowledged.wait()
            latencies.append(SystemTime.secondsSince(start) * 1000)
        }
        latencies.sort()
        let percentile = { (p: Double) in latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(
            "latency_samples=\(samples) p50_ms=\(String(format: "%.2f", percentile(0.5))) "
                + "p99_ms=\(String(format: "%.2f", percentile(0.99))) "
                + "max_ms=\(String(format: "%.2f", latencies.last ?? 0)) failed=\(failures.load(ordering: .relaxed))")
        return failures.load(ordering: .relaxed) == 0
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("kafka-producer-bench: \(message)\n".utf8))
    }
}

exit(ProducerBench.run())
