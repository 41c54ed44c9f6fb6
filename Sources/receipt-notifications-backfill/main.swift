// receipt-notifications-backfill: recovers App Store Server Notifications Apple could not deliver (or that were
// lost before the ingest) from Get Notification History and writes them to NOTIFICATIONS_TOPIC.

import AppStoreServerAPI
import Foundation
import Kafka
import NotificationBackfill
import ReceiptModel
import ServiceRuntime
import ServiceSupport
import SignedData

let usage = """
    Usage: receipt-notifications-backfill --since TIME [--until TIME] [--only-failures] [--dry-run]
                                          [--environment production|sandbox] [--bundle-id B]

    Pages through the App Store Server API's Get Notification History for the notifications Apple signed in
    [--since, --until) and writes each one to NOTIFICATIONS_TOPIC as a notification record (origin
    notification_history), keyed like the ingest keys Apple's posts; the verifiers turn them into purchase events
    as usual. Notifications that did arrive are harmless to write again: their events carry the same event_id.
    Prints one JSON line per page and a summary line; exits 0 when every record was acknowledged by Kafka (or with
    --dry-run), 1 when a write was not acknowledged or the paging failed, 2 on bad usage or settings.

      --since TIME         notifications signed at or after TIME (epoch milliseconds or 2026-01-31T12:00:00Z);
                           Apple keeps 180 days of production history and 30 of sandbox history
      --until TIME         ... and before TIME (default now)
      --only-failures      only notifications Apple could not deliver
      --dry-run            read and count, write nothing
      --environment E      production (default) or sandbox history
      --bundle-id B        the app (default: ALLOWED_BUNDLE_IDS when it names exactly one)

    Environment:
      KAFKA_BOOTSTRAP_SERVERS  Kafka bootstrap list (required)
      KAFKA_<PROPERTY>         any librdkafka property, e.g. KAFKA_SECURITY_PROTOCOL=SASL_SSL
      NOTIFICATIONS_TOPIC      default iap.notifications.submitted
      ALLOWED_BUNDLE_IDS       the app's bundle id (as the verifier's)
      APPLE_ISSUER_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE
                               the App Store Server API key (required)
      APPLE_SERVER_API_URL, APPLE_SERVER_API_SANDBOX_URL
                               the API (default https://api.storekit.apple.com and its sandbox)
      APPLE_SERVER_API_MAX_RPS this process's pace (default Apple's per-app limit)
      APPLE_TIMEOUT_MS         per-request timeout (default 30000)
      LOG_LEVEL                debug, info, warning, error (default info)
    """

enum BackfillMain {
    static func run() async -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let options: BackfillOptions
        let nowMs = SystemTime.wallMilliseconds()
        switch CommandLineTool(name: "receipt-notifications-backfill", usage: usage).parse(
            Array(CommandLine.arguments.dropFirst()), with: { arguments throws(CommandLineError) in
                try BackfillOptions.parse(&arguments, nowMs: nowMs)
            })
        {
        case .exit(let status): return status
        case .run(let parsed): options = parsed
        }
        let logger = Logger.fromEnvironment(label: "receipt-notifications-backfill", environment: environment)
        let settings = Settings(environment: environment)
        guard let kafka = ServiceMain.toolKafkaConfiguration(environment, logger: logger),
            let (serverAPI, timeoutMs) = ServiceMain.setting(logger: logger, { () throws(ConfigurationError) in
                (
                    try ServerAPISettings.fromEnvironment(settings),
                    try settings.int("APPLE_TIMEOUT_MS", default: 30_000, range: 1...600_000)
                )
            })
        else { return 2 }
        guard
            let credentials = serverAPI.toolCredentials(
                why: "Get Notification History is an App Store Server API call", logger: logger),
            let bundleId = ServiceMain.toolBundleId(options.bundleId, settings: settings, logger: logger)
        else { return 2 }
        guard
            let topic = ServiceMain.setting(logger: logger, { () throws(ConfigurationError) in
                try TopicNames.fromEnvironment(settings, reading: [.notifications]).notifications
            })
        else { return 2 }

        guard
            let client = AppStoreServerAPIClient.forTool(
                settings: serverAPI, credentials: credentials, requestTimeoutMs: timeoutMs, logger: logger)
        else { return 1 }
        defer { client.close() }
        guard let producer = ServiceMain.toolProducer(kafka, dryRun: options.dryRun, logger: logger) else { return 1 }
        defer { producer?.close(timeout: .seconds(10)) }
        logger.info(
            "backfilling notifications",
            [
                "since_ms": .int(Int(options.sinceMs)), "until_ms": .int(Int(options.untilMs)),
                "environment": .string(options.sandbox ? "Sandbox" : "Production"), "bundle_id": .string(bundleId),
                "topic": .string(topic), "only_failures": .bool(options.onlyFailures), "dry_run": .bool(options.dryRun),
            ])
        let source = ServerAPIHistory(
            client: client, bundleId: bundleId, environment: options.sandbox ? .sandbox : .production,
            logger: logger)
        let summary = await BackfillRun(
            options: options, source: source,
            writer: producer.map { KafkaNotificationRecordWriter(producer: $0, topic: topic) },
            // Unbuffered: a supervisor reading a pipe sees each page's line as it happens.
            output: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        ).run()
        if let error = summary.error { logger.error("backfill stopped early", ["error": .string(error)]) }
        if summary.failed > 0 {
            logger.error("Kafka did not acknowledge every record: run the backfill again (duplicates are harmless)",
                         ["failed": .int(summary.failed)])
        }
        return summary.succeeded ? 0 : 1
    }
}

exit(await BackfillMain.run())
