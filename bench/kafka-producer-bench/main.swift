// kafka-producer-bench: produces N messages of S bytes with KafkaProducer as fast as it accepts them and reports
// the throughput (from the first send until every delivery report arrived). Run by bench/kafka-producer.sh, which
// compares it with `kcat -P` on the same embedded cluster.

import Foundation
import Kafka
import ServiceSupport
import Synchronization

enum ProducerBench {
    static let usage = """
        Usage: kafka-producer-bench --bootstrap host:port --topic NAME [--messages N] [--size BYTES] [-X prop=value]...

        Produces N (default 200000) messages of BYTES (default 1024) to NAME with the Kafka module's producer
        (its defaults: idempotent, linger.ms=5) and prints one line:
          messages=N bytes=B seconds=S messages_per_second=R megabytes_per_second=M failed=F
        """

    static func run() -> Int32 {
        var bootstrap: String?
        var topic: String?
        var messages = 200_000
        var size = 1024
        var extra: [String: String] = [:]
        var arguments = Array(CommandLine.arguments.dropFirst())[...]
        while let argument = arguments.popFirst() {
            switch argument {
            case "--bootstrap": bootstrap = arguments.popFirst()
            case "--topic": topic = arguments.popFirst()
            case "--messages": messages = arguments.popFirst().flatMap { Int($0) } ?? -1
            case "--size": size = arguments.popFirst().flatMap { Int($0) } ?? -1
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
        guard let bootstrap, let topic, messages > 0, size > 0 else {
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

        let start = Clock.monotonicNanoseconds()
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
        let seconds = Clock.secondsSince(start)
        producer.close(timeout: .seconds(5))
        let rate = Double(messages) / seconds
        print(
            "messages=\(messages) bytes=\(size) seconds=\(String(format: "%.3f", seconds)) "
                + "messages_per_second=\(Int(rate)) "
                + "megabytes_per_second=\(String(format: "%.1f", rate * Double(size) / 1_048_576)) "
                + "failed=\(failed.load(ordering: .relaxed)) queue_full_waits=\(queueFullWaits)")
        return failed.load(ordering: .relaxed) == 0 ? 0 : 1
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("kafka-producer-bench: \(message)\n".utf8))
    }
}

exit(ProducerBench.run())
