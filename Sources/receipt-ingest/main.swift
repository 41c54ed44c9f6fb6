// receipt-ingest: the HTTP front door. Reads its settings, runs the ingest service over a Kafka producer, and on
// SIGTERM/SIGINT drains (stops accepting, waits for Kafka to acknowledge what it holds, flushes) and exits 0.

import Dispatch
import Foundation
import Ingest
import Kafka
import ServiceSupport

enum ReceiptIngestMain {
    static func run(arguments: [String], environment: [String: String]) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(IngestSettings.helpText)
            exit(0)
        }
        let logger = Logger.fromEnvironment(label: "receipt-ingest", environment: environment)
        if let unknown = arguments.first {
            logger.error("unknown argument '\(unknown)'; settings come from the environment (see --help)")
            exit(2)
        }
        let settings: IngestSettings
        do {
            settings = try IngestSettings.fromEnvironment(environment)
        } catch {
            logger.error("invalid configuration: \(error.description)", ["variable": .string(error.variable)])
            exit(2)
        }
        settings.kafka.logIgnoredServiceLinks(logger)
        // Writes to a client that went away must fail with EPIPE, not kill the process.
        signal(SIGPIPE, SIG_IGN)

        let metrics = MetricsRegistry()
        BuildInfo.register(in: metrics, prefix: "ingest", libraries: [("librdkafka_version", KafkaLibrary.version)])
        ProcessMetrics.register(in: metrics)
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: settings.kafka, logger: logger, metrics: metrics)
        } catch {
            logger.error("cannot create the Kafka producer: \(error.message)", ["kafka_code": .int(Int(error.code))])
            exit(2)
        }
        let resultFeed: KafkaResultFeed
        do {
            resultFeed = try KafkaResultFeed(
                configuration: settings.resultsKafka, topic: settings.resultsTopic, replay: settings.resultReplay,
                readBackLimit: settings.resultIndexLimits.maxEntries,
                readinessBound: .seconds(settings.resultReadinessTimeoutSeconds), logger: logger)
        } catch {
            logger.error(
                "cannot create the results follower: \(error.message)", ["kafka_code": .int(Int(error.code))])
            producer.close(timeout: .seconds(1))
            exit(2)
        }
        let service = IngestService(
            settings: settings, publisher: producer, resultFeed: resultFeed, logger: logger, metrics: metrics)
        do {
            try service.start()
        } catch {
            logger.error("cannot start the HTTP server: \(error)")
            resultFeed.close(timeout: .seconds(1))
            producer.close(timeout: .seconds(1))
            exit(1)
        }

        let shutdown = ShutdownSignal { signalName in
            logger.info("shutting down", ["signal": .string(signalName)])
            service.drain()
            let flushed = producer.flush(timeout: .seconds(10))
            producer.close(timeout: .seconds(5))
            logger.info("receipt-ingest stopped", ["flushed": .bool(flushed)])
            exit(0)
        }
        withExtendedLifetime(shutdown) {
            dispatchMain()
        }
    }
}

ReceiptIngestMain.run(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
