// embedded-kafka: one in-memory Kafka cluster (librdkafka's mock cluster) for tests, benchmarks and `make dev`.
// Prints `KAFKA_BOOTSTRAP_SERVERS=<list>` as its first stdout line, then serves until SIGTERM or SIGINT (exit 0).

import Dispatch
import EmbeddedKafka
import Foundation
import RDKafka
import ServiceRuntime
import ServiceSupport

enum EmbeddedKafkaMain {
    static let usage = """
        Usage: embedded-kafka [--brokers N] [--topics name:partitions,...]

        Runs an in-memory Kafka cluster (librdkafka's mock cluster) on 127.0.0.1 ephemeral ports.
        Prints KAFKA_BOOTSTRAP_SERVERS=<host:port,...> as the first line on stdout, then serves until SIGTERM or
        SIGINT, and exits 0. Data lives in memory only.

        Options:
          --brokers N                  number of brokers, ids 1...N (default 1)
          --topics name:partitions,... topics to create at start (others are auto-created with 4 partitions)
          --help                       this text

        Environment: LOG_LEVEL (debug, info, warning, error; default warning for this tool).
        """

    struct Options {
        var brokers = 1
        var topics: [(name: String, partitions: Int)] = []
    }

    static let tool = CommandLineTool(name: "embedded-kafka", usage: usage)

    static func parse(_ arguments: inout CommandLineArguments) throws(CommandLineError) -> Options {
        var options = Options()
        while let flag = try arguments.nextFlag() {
            switch flag {
            case "--brokers":
                options.brokers = try arguments.int(
                    for: flag, in: 1...16, problem: "--brokers needs a number from 1 to 16")
            case "--topics":
                let list = try arguments.value(for: flag, problem: "--topics needs name:partitions,...")
                for entry in list.split(separator: ",") {
                    let parts = entry.split(separator: ":")
                    guard parts.count == 2, !parts[0].isEmpty, let partitions = Int(parts[1]), partitions >= 1 else {
                        throw .usage("--topics entry '\(entry)' is not name:partitions (partitions >= 1)")
                    }
                    options.topics.append((String(parts[0]), partitions))
                }
            default:
                throw .unknownArgument(flag)
            }
        }
        return options
    }

    static func run() -> Int32 {
        let options: Options
        switch tool.parse(Array(CommandLine.arguments.dropFirst()), with: parse) {
        case .exit(let status): return status
        case .run(let parsed): options = parsed
        }
        let environment = ProcessInfo.processInfo.environment
        let level = environment["LOG_LEVEL"].flatMap(LogLevel.init(name:)) ?? .warning
        let logger = Logger(label: "embedded-kafka", threshold: level)

        let shutdown = ShutdownWaiter()
        let cluster: EmbeddedKafkaCluster
        do {
            cluster = try EmbeddedKafkaCluster(brokers: options.brokers, topics: options.topics, logger: logger)
        } catch {
            logger.error("cannot start the embedded Kafka cluster", ["error": .string(error.message)])
            return 1
        }
        print("KAFKA_BOOTSTRAP_SERVERS=\(cluster.bootstrapServers)")
        fflush(nil)  // all streams: stdout is a pipe in tests, block-buffered
        logger.info(
            "embedded Kafka cluster serving",
            [
                "bootstrap_servers": .string(cluster.bootstrapServers), "brokers": .int(options.brokers),
                "topics": .string(options.topics.map { "\($0.name):\($0.partitions)" }.joined(separator: ",")),
            ])
        logger.info("stopping", ["signal": .string(shutdown.wait())])
        cluster.close()
        return 0
    }
}

exit(EmbeddedKafkaMain.run())
