// receipt-reconcile: one reconciliation sweep (a CronJob's run): Apple's Get Notification History and Get Refund
// History against the ledger's PostgreSQL; what the ledger missed is produced once, for the ledger to apply by its
// own rules.

import AppStore
import AppStoreServerAPI
import Catalog
import Foundation
import Kafka
import Notifications
import Postgres
import Reconcile
import ReceiptModel
import ServiceRuntime
import ServiceSupport
import SignedData

let usage = """
    Usage: receipt-reconcile [--once] [--dry-run] [--environment production|sandbox] [--bundle-id B]
                             [--stop-after-pages N]

    Runs one reconciliation sweep and exits (a CronJob schedules the runs; --once says so explicitly):
      1. produces again the corrections an earlier sweep recorded but Kafka did not acknowledge (same ids);
      2. reads Get Notification History since the last sweep: a notification whose event the ledger never applied
         goes onto NOTIFICATIONS_TOPIC as Apple's signedPayload (the verifier turns it into its event);
      3. reads Get Refund History for the purchases credited within RECONCILE_CREDITED_WITHIN_DAYS (never checked
         and longest unchecked first) within RECONCILE_MAX_CALLS_PER_HOUR: a refund the ledger still credits and no
         notification explains becomes a debit event on EVENTS_TOPIC, id reconcile:refund:<transaction>:<revocation>.
    Reports drift (Apple refunded / ledger credited, and the reverse) in a JSON summary line and in its tables,
    which receipt-ledger exports as ledger_reconcile_* gauges. Progress is committed page by page: a sweep that
    stopped resumes where it was. Exits 0 when the sweep finished (a spent budget included), 1 when the database,
    Apple or Kafka failed, 2 on bad usage or settings, 3 after --stop-after-pages.

      --once               one sweep, then exit (the only mode)
      --dry-run            read and report drift; record, produce and move nothing
      --environment E      production (default) or sandbox: its history, cursor and purchases
      --bundle-id B        the app (default: ALLOWED_BUNDLE_IDS when it names exactly one)
      --stop-after-pages N crash drill: stop right after committing the N-th page, before producing it (exit 3)

    Environment:
      LEDGER_DATABASE_URL                 the ledger's PostgreSQL (required)
      RECONCILE_MAX_CALLS_PER_HOUR        Server API calls all sweeps of the last hour may make (default 1000)
      RECONCILE_CREDITED_WITHIN_DAYS      purchases credited this recently are checked (default 30, at most 180,
                                          30 for sandbox); also the first sweep's notification window
      RECONCILE_NOTIFICATION_LAG_MINUTES  notifications younger than this wait for the next sweep (default 60)
      KAFKA_BOOTSTRAP_SERVERS, KAFKA_<PROPERTY>
                                          Kafka (required), any librdkafka property
      NOTIFICATIONS_TOPIC, EVENTS_TOPIC   defaults iap.notifications.submitted, iap.purchase.events
      ALLOWED_BUNDLE_IDS, SANDBOX_POLICY, APPLE_APP_APPLE_ID, APPLE_ROOT_CERTIFICATES, PRODUCT_CATALOG_FILE
                                          as the verifier reads them (what passes its checks)
      APPLE_ISSUER_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE
                                          the App Store Server API key (required)
      APPLE_SERVER_API_URL, APPLE_SERVER_API_SANDBOX_URL, APPLE_SERVER_API_MAX_RPS, APPLE_TIMEOUT_MS
                                          the API, this process's pace, the per-request timeout
      APPLE_REVOCATION_CHECK, APPLE_OCSP_RESPONDER_URL, APPLE_OCSP_MAX_AGE_SECONDS, APPLE_OCSP_TIMEOUT_MS,
      APPLE_CA_BUNDLE                     revocation checks of Apple's signed data, as the verifier's (default
                                          ocsp; no answer stops the sweep, the next one resumes there)
      LOG_LEVEL                           debug, info, warning, error (default info)
    """

enum ReconcileMain {
    static func run() async -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let options: ReconcileOptions
        switch CommandLineTool(name: "receipt-reconcile", usage: usage).parse(
            Array(CommandLine.arguments.dropFirst()),
            with: { arguments throws(CommandLineError) in try ReconcileOptions.parse(&arguments) })
        {
        case .exit(let status): return status
        case .run(let parsed): options = parsed
        }
        let logger = Logger.fromEnvironment(label: "receipt-reconcile", environment: environment)
        let settings = Settings(environment: environment)
        guard let kafka = options.dryRun ? KafkaConfiguration.fromEnvironment(environment)
                : ServiceMain.toolKafkaConfiguration(environment, logger: logger),
            let (reconcile, appStore, serverAPI, timeoutMs, topics, revocationSettings) = ServiceMain.setting(
                logger: logger, { () throws(ConfigurationError) in
                    (
                        try ReconcileSettings.fromEnvironment(settings, environment: options.environment),
                        try AppStoreSettings.fromEnvironment(settings),
                        try ServerAPISettings.fromEnvironment(settings),
                        try settings.int("APPLE_TIMEOUT_MS", default: 30_000, range: 1...600_000),
                        try TopicNames.fromEnvironment(settings, reading: [.notifications, .events]),
                        try RevocationSettings.fromEnvironment(settings)
                    )
                })
        else { return 2 }
        guard
            let credentials = serverAPI.toolCredentials(
                why: "Get Notification History and Get Refund History are App Store Server API calls", logger: logger),
            let bundleId = ServiceMain.toolBundleId(options.bundleId, settings: settings, logger: logger)
        else { return 2 }
        var catalog: ProductCatalogFile?
        if let path = appStore.productCatalogFile {
            do {
                catalog = try ProductCatalogFile(path: path, logger: logger.named("product-catalog"))
            } catch {
                logger.error("invalid configuration: \(error)", ["variable": "PRODUCT_CATALOG_FILE"])
                return 2
            }
        }
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(connectionString: reconcile.databaseURL, connectTimeoutSeconds: 10)
        } catch {
            logger.error("cannot connect to LEDGER_DATABASE_URL", ["error": .string("\(error)")])
            return 1
        }
        defer { connection.close() }

        guard
            let client = AppStoreServerAPIClient.forTool(
                settings: serverAPI, credentials: credentials, requestTimeoutMs: timeoutMs, logger: logger)
        else { return 1 }
        defer { client.close() }
        guard let producer = ServiceMain.toolProducer(kafka, dryRun: options.dryRun, logger: logger) else { return 1 }
        defer { producer?.close(timeout: .seconds(10)) }

        let revocation: RevocationClient
        do {
            revocation = try RevocationClient(
                settings: revocationSettings, trustedRoots: serverAPI.rootCertificates,
                caBundlePath: appStore.caBundlePath, logger: logger.named("ocsp"))
        } catch {
            logger.error("cannot create the OCSP client", ["error": .string("\(error)")])
            return 1
        }
        defer { revocation.close() }
        let verifier = AppleSignedDataVerifier(trustedRoots: serverAPI.rootCertificates, revocation: revocation.checker)
        let policy = NotificationPolicy(
            allowedBundleIds: appStore.verdictPolicy.allowedBundleIds, sandboxPolicy: appStore.verdictPolicy.sandboxPolicy,
            appAppleId: serverAPI.appAppleId)
        logger.info(
            "reconciling",
            [
                "environment": .string(options.environment.rawValue), "bundle_id": .string(bundleId),
                "dry_run": .bool(options.dryRun), "max_calls_per_hour": .int(reconcile.maxCallsPerHour),
                "credited_within_days": .int(reconcile.creditedWithinDays),
                "notifications_topic": .string(topics.notifications), "events_topic": .string(topics.events),
            ])
        let history = ServerAPIHistory(
            client: client, bundleId: bundleId, environment: options.environment, logger: logger)
        let sweep = ReconcileSweep(
            options: options, settings: reconcile, topics: topics, connection: connection,
            notifications: history, refunds: history,
            processor: NotificationProcessor(verifier: verifier, policy: policy, catalog: catalog),
            refundEvents: RefundDebitEvent(verifier: verifier, policy: policy, catalog: catalog),
            producer: producer.map { KafkaCorrectionProducer(producer: $0) }, logger: logger,
            // Unbuffered: a supervisor reading a pipe sees each page's line as it happens.
            output: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) })
        let outcome = await sweep.run()
        switch outcome {
        case .succeeded: break
        case .failed(let message): logger.error("the sweep failed; the next one resumes from what was committed", ["error": .string(message)])
        case .stoppedForDrill: logger.warning("stopped after --stop-after-pages; the next sweep resumes")
        }
        return outcome.exitStatus
    }
}

exit(await ReconcileMain.run())
