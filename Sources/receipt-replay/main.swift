// receipt-replay: moves DLQ records back to the submissions (or retry) topic, filtered by reason and time.

import Foundation
import Kafka
import ReceiptModel
import Replay
import ServiceRuntime
import ServiceSupport

let usage = """
    Usage: receipt-replay [--dry-run] [--to submissions|retry] [--reason REASON]... [--since TIME] [--until TIME]
                          [--timeout-seconds N]

    Reads DLQ_TOPIC from the beginning up to its end at start, selects the records that match, and produces each
    selected submission back to RECEIPTS_TOPIC (--to submissions, the default: verified again from scratch) or to
    RETRY_TOPIC (--to retry: a new series of retry rounds, due at once). Replays are idempotent by submission_id:
    one submission is replayed at most once per run, and a replayed submission keeps its id, so its result carries
    the same verdict and credit_keys. A DLQ record of NOTIFICATIONS_TOPIC (an App Store notification that did not
    verify) goes back to NOTIFICATIONS_TOPIC unchanged whatever --to says, once per source offset per run (its event,
    if it verifies now, keeps Apple's notificationUUID as event_id). Prints one JSON line per DLQ record and a
    summary line; exits 0 when every selected record was acknowledged by Kafka (or with --dry-run), 1 otherwise, 2
    on bad usage.

      --dry-run            show what would move; produce nothing
      --to DEST            submissions (default) or retry
      --reason REASON      only this reason (repeatable): \(Reason.allCases.map(\.rawValue).joined(separator: ", "))
      --since TIME         only records that failed at or after TIME (epoch milliseconds or 2026-01-31T12:00:00Z)
      --until TIME         only records that failed before TIME
      --timeout-seconds N  give up reading the DLQ after N seconds (default 60)

    Environment:
      KAFKA_BOOTSTRAP_SERVERS  Kafka bootstrap list (required)
      KAFKA_<PROPERTY>         any librdkafka property, e.g. KAFKA_SECURITY_PROTOCOL=SASL_SSL
      DLQ_TOPIC                default iap.receipts.dlq
      RECEIPTS_TOPIC           default iap.receipts.submitted
      RETRY_TOPIC              default iap.receipts.retry
      NOTIFICATIONS_TOPIC      default iap.notifications.submitted
      LOG_LEVEL                debug, info, warning, error (default info)
    """

struct ReplayOptions {
    var dryRun = false
    var destination = ReplayDestination.submissions
    var filter = ReplayFilter()
    var timeoutSeconds = 60

    static func parse(_ arguments: inout CommandLineArguments) throws(CommandLineError) -> ReplayOptions {
        var options = ReplayOptions()
        while let flag = try arguments.nextFlag() {
            switch flag {
            case "--dry-run": options.dryRun = true
            case "--to":
                let name = try arguments.value(for: flag)
                guard let destination = ReplayDestination(rawValue: name) else {
                    throw .usage("--to takes submissions or retry, not '\(name)'")
                }
                options.destination = destination
            case "--reason":
                let name = try arguments.value(for: flag)
                guard let reason = Reason(rawValue: name) else { throw .usage("unknown reason '\(name)'") }
                options.filter.reasons.insert(reason)
            case "--since": options.filter.sinceMs = try arguments.epochMilliseconds(for: flag)
            case "--until": options.filter.untilMs = try arguments.epochMilliseconds(for: flag)
            case "--timeout-seconds":
                options.timeoutSeconds = try arguments.int(
                    for: flag, in: 1...Int.max, problem: "--timeout-seconds takes a positive number")
            default: throw .unknownArgument(flag)
            }
        }
        return options
    }
}

func exitCode() -> Int32 {
    let (options, environment, settings, logger): CommandLineTool.Start<ReplayOptions>
    switch CommandLineTool(name: "receipt-replay", usage: usage).start(with: ReplayOptions.parse) {
    case .exit(let status): return status
    case .run(let started): (options, environment, settings, logger) = started
    }
    guard let kafka = ServiceMain.toolKafkaConfiguration(environment, logger: logger),
        let topics = ServiceMain.setting(logger: logger, { () throws(ConfigurationError) in
            try TopicNames.fromEnvironment(settings, reading: [.deadLetter, .receipts, .retry, .notifications])
        })
    else { return 2 }
    do {
        let records = try DeadLetterReader.readAll(
            topic: topics.deadLetter, configuration: kafka, timeout: .seconds(options.timeoutSeconds), logger: logger)
        let run = ReplayRun(options: options, topics: topics, logger: logger)
        return try run.execute(records, kafka: kafka) ? 0 : 1
    } catch {
        logger.error("replay failed", ["error": .string(String(describing: error))])
        return 1
    }
}

exit(exitCode())
