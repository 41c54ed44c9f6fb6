// receipt-tail: prints the verification results on RESULTS_TOPIC as they arrive, one JSON object per line.

import Foundation
import Kafka
import ServiceRuntime
import ServiceSupport

enum ReceiptTailMain {
    static let usage = """
        Usage: receipt-tail [--from-beginning]

        Follows the results topic and prints each result message (JSON) on its own line on stdout.
        Starts at the end of every partition (only new results), or at the beginning with --from-beginning.
        Stops on SIGTERM or SIGINT. Logs (JSON) go to stderr.

        Environment:
          KAFKA_BOOTSTRAP_SERVERS  Kafka bootstrap list (required)
          KAFKA_<PROPERTY>         any librdkafka property, e.g. KAFKA_SECURITY_PROTOCOL=SASL_SSL
          RESULTS_TOPIC            topic to follow (default iap.receipts.results)
          LOG_LEVEL                debug, info, warning, error (default info)
        """

    /// Whether `--from-beginning` was given (the tool's only flag).
    static func parseFromBeginning(_ arguments: inout CommandLineArguments) throws(CommandLineError) -> Bool {
        var fromBeginning = false
        while let flag = try arguments.nextFlag() {
            guard flag == "--from-beginning" else { throw .unknownArgument(flag) }
            fromBeginning = true
        }
        return fromBeginning
    }

    static func run() -> Int32 {
        let fromBeginning: Bool
        switch CommandLineTool(name: "receipt-tail", usage: usage).parse(
            Array(CommandLine.arguments.dropFirst()), with: parseFromBeginning)
        {
        case .exit(let status): return status
        case .run(let parsed): fromBeginning = parsed
        }
        let environment = ProcessInfo.processInfo.environment
        let settings = Settings(environment: environment)
        let logger = Logger.fromEnvironment(label: "receipt-tail", environment: environment)
        guard let configuration = ServiceMain.toolKafkaConfiguration(environment, logger: logger),
            let topic = ServiceMain.setting(logger: logger, { () throws(ConfigurationError) in
                try TopicNames.fromEnvironment(settings, reading: [.results]).results
            })
        else { return 2 }

        let output = LineWriter()
        let follower: KafkaTopicFollower
        do {
            follower = try KafkaTopicFollower(
                configuration: configuration, topic: topic, startingAtTimestampMs: fromBeginning ? 0 : nil,
                logger: logger
            ) { message in
                output.write(message.value)
            }
        } catch {
            logger.error("cannot start", ["error": .string(error.message)])
            return 1
        }
        let shutdown = ShutdownWaiter()
        follower.start()
        logger.info("following", ["topic": .string(topic), "from_beginning": .bool(fromBeginning)])
        shutdown.wait()
        follower.close(timeout: .seconds(5))
        return 0
    }
}

/// Writes whole lines to stdout, unbuffered, so a reader sees each result as soon as it arrives.
final class LineWriter: Sendable {
    func write(_ bytes: [UInt8]) {
        var line = bytes
        // One result per line: a value with embedded newlines (not valid compact JSON) is flattened.
        for index in line.indices where line[index] == UInt8(ascii: "\n") || line[index] == UInt8(ascii: "\r") {
            line[index] = UInt8(ascii: " ")
        }
        line.append(UInt8(ascii: "\n"))
        FileDescriptorWrite.all(line, to: 1)
    }
}

exit(ReceiptTailMain.run())
