import AppStore
import AppStoreServerAPI
import Kafka
import Notifications
import ServiceRuntime
import ServiceSupport

/// Everything `receipt-verifier` reads from its environment, validated. Every variable is described in `helpText`.
public struct VerifierSettings: ServiceSettings {
    /// librdkafka properties from `KAFKA_*`, shared by the verifier's consumer and producer.
    public internal(set) var kafka: KafkaConfiguration
    var topics: TopicNames
    var groupId: String
    var metricsListen: ListenAddress
    /// The App Store client's settings (`APPLE_*`, `ALLOWED_BUNDLE_IDS`, `SANDBOX_POLICY`, `VERIFIER_MAX_IN_FLIGHT`).
    var appStore: AppStoreSettings
    /// The App Store Server API and signed data (`APPLE_ISSUER_ID`, ..., `SIGNED_TRANSACTION_CONFIRM`,
    /// `RECEIPT_BACKEND`).
    var serverAPI: ServerAPISettings
    /// `APPLE_REVOCATION_CHECK` and the OCSP settings (`APPLE_OCSP_*`).
    var revocation: RevocationSettings
    var limits: DispatchLimits
    /// How long one round of Apple calls (the client's in-process retries) may take before it counts as no verdict.
    var roundDeadline: Duration
    var retryPolicy: RetryRoundPolicy
    var breaker: AppleCircuitBreaker.Configuration
    /// How long a rebalance waits for in-flight work of revoked partitions.
    var revokeTimeout: Duration
    /// How long SIGTERM waits for in-flight work before abandoning it (it is redelivered after restart).
    var shutdownTimeout: Duration
    /// The least time between two commits of stored offsets (`VERIFIER_COMMIT_INTERVAL_MS`): a stored offset is
    /// committed at once when the last commit is older, else when it is. What a crash redoes is about the work in
    /// flight plus what finished in this interval.
    var commitInterval: Duration

    init(
        kafka: KafkaConfiguration, topics: TopicNames, groupId: String, metricsListen: ListenAddress,
        appStore: AppStoreSettings, serverAPI: ServerAPISettings, limits: DispatchLimits, roundDeadline: Duration,
        retryPolicy: RetryRoundPolicy, breaker: AppleCircuitBreaker.Configuration, revokeTimeout: Duration,
        shutdownTimeout: Duration, commitInterval: Duration = .milliseconds(100),
        revocation: RevocationSettings = RevocationSettings()
    ) {
        self.revocation = revocation
        self.kafka = kafka
        self.topics = topics
        self.groupId = groupId
        self.metricsListen = metricsListen
        self.appStore = appStore
        self.serverAPI = serverAPI
        self.limits = limits
        self.roundDeadline = roundDeadline
        self.retryPolicy = retryPolicy
        self.breaker = breaker
        self.revokeTimeout = revokeTimeout
        self.shutdownTimeout = shutdownTimeout
        self.commitInterval = commitInterval
    }

    /// What notifications must satisfy besides their signatures.
    var notificationPolicy: NotificationPolicy {
        NotificationPolicy(
            allowedBundleIds: appStore.verdictPolicy.allowedBundleIds,
            sandboxPolicy: appStore.verdictPolicy.sandboxPolicy, appAppleId: serverAPI.appAppleId)
    }

    /// Defaults the verifier applies to librdkafka properties `KAFKA_*` does not set: statistics every second
    /// (consumer lag, `/readyz`).
    static let kafkaDefaults: [String: String] = ["statistics.interval.ms": "1000"]

    /// Consumer-only defaults: a bounded prefetch (memory; the in-flight window is the real buffer). The fetch wait
    /// stays librdkafka's (500 ms): a real broker answers a fetch as soon as data arrives. Only librdkafka's mock
    /// cluster (`make dev`, tests, benchmarks) holds every fetch for the full wait, so those set
    /// `KAFKA_FETCH_WAIT_MAX_MS=10` themselves (docs/OPERATIONS.md). librdkafka sizes each partition's fetches
    /// from `queued.max.messages.kbytes` shared by the assigned partitions: with App Store notifications (~12 KB each)
    /// 16 MB over 80 partitions left ~15 notifications per partition per fetch and capped a verifier near 2,300
    /// events/s; 64 MB reaches ~5,000/s (bench/verifier.sh, notifications run) for at most 48 MB more memory.
    static let consumerDefaults: [String: String] = [
        "queued.max.messages.kbytes": "65536",
        "queued.min.messages": "20000",
    ]

    /// Consumer properties the verifier sets whatever `KAFKA_*` says: it stores offsets as outputs are acknowledged
    /// and commits them promptly (`VERIFIER_COMMIT_INTERVAL_MS`), with auto-commit as the safety net that also
    /// commits on revoke and close, so with auto-commit off a rebalance or shutdown could leave stored offsets
    /// uncommitted.
    static let consumerOverrides: [String: String] = ["enable.auto.commit": "true"]

    /// The consumer's properties: `kafka` plus `consumerDefaults` where not set, and `consumerOverrides`.
    var consumerKafka: KafkaConfiguration {
        var configuration = kafka
        for (property, value) in Self.consumerDefaults where configuration[property] == nil {
            configuration[property] = value
        }
        for (property, value) in Self.consumerOverrides {
            configuration[property] = value
        }
        return configuration
    }

    /// The `KAFKA_*` settings `consumerOverrides` replaced, as `property=value` (the service logs a warning).
    var overriddenConsumerProperties: [String] {
        Self.consumerOverrides.keys.sorted().compactMap { property in
            guard let value = kafka[property], value.lowercased() != Self.consumerOverrides[property] else {
                return nil
            }
            return "\(property)=\(value)"
        }
    }

    /// librdkafka's `max.poll.interval.ms` default: a consumer that does not poll for this long leaves its group.
    static let defaultMaxPollIntervalMs = 300_000

    /// Reads and validates the settings.
    /// - Throws: `ConfigurationError` naming the first variable that is missing or invalid.
    public static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> VerifierSettings {
        let settings = Settings(environment: environment)
        _ = try settings.required("KAFKA_BOOTSTRAP_SERVERS")
        var kafka = KafkaConfiguration.fromEnvironment(environment)
        for (property, value) in kafkaDefaults where kafka[property] == nil {
            kafka[property] = value
        }
        let topics = try TopicNames.fromEnvironment(settings)
        let distinct = Set([
            topics.receipts, topics.results, topics.retry, topics.deadLetter, topics.notifications, topics.events,
        ])
        guard distinct.count == 6 else {
            throw ConfigurationError(
                variable: "RETRY_TOPIC",
                problem: "RECEIPTS_TOPIC, RESULTS_TOPIC, RETRY_TOPIC, DLQ_TOPIC, NOTIFICATIONS_TOPIC and EVENTS_TOPIC "
                    + "must differ")
        }
        let appStore = try AppStoreSettings.fromEnvironment(settings)
        let serverAPI = try ServerAPISettings.fromEnvironment(settings)
        let revocation = try RevocationSettings.fromEnvironment(settings)
        let maxInFlight = appStore.maxInFlight
        let window = try settings.int(
            "VERIFIER_PARTITION_WINDOW", default: max(4 * maxInFlight, 16), range: 2...10_000_000)
        let rounds = try settings.int("VERIFIER_RETRY_ROUNDS", default: 6, range: 1...1000)
        let backoff = try settings.int("VERIFIER_RETRY_BACKOFF_MS", default: 30_000, range: 0...86_400_000)
        let maxBackoff = try settings.int("VERIFIER_RETRY_MAX_BACKOFF_MS", default: 600_000, range: 0...604_800_000)
        guard maxBackoff >= backoff else {
            throw ConfigurationError(
                variable: "VERIFIER_RETRY_MAX_BACKOFF_MS", problem: "\(maxBackoff) is below VERIFIER_RETRY_BACKOFF_MS")
        }
        let breakerWindow = try settings.int("VERIFIER_BREAKER_WINDOW", default: 50, range: 1...100_000)
        let breakerMinimum = try settings.int(
            "VERIFIER_BREAKER_MIN_CALLS", default: min(20, breakerWindow), range: 1...breakerWindow)
        let ratio = try settings.double("VERIFIER_BREAKER_FAILURE_RATIO", default: 0.5)
        guard ratio > 0, ratio <= 1 else {
            throw ConfigurationError(variable: "VERIFIER_BREAKER_FAILURE_RATIO", problem: "\(ratio) is not in (0, 1]")
        }
        // The rebalance callback waits for in-flight work on the poll thread: past max.poll.interval.ms the consumer
        // would be thrown out of the group in the middle of the rebalance. Half of it leaves room for the rest.
        let maxPollMs = kafka["max.poll.interval.ms"].flatMap { Int($0) } ?? defaultMaxPollIntervalMs
        let revokeLimitMs = max(maxPollMs / 2, 0)
        let revokeMs = try settings.int(
            "VERIFIER_REVOKE_TIMEOUT_MS", default: min(5_000, revokeLimitMs), range: 0...3_600_000)
        guard revokeMs <= revokeLimitMs else {
            throw ConfigurationError(
                variable: "VERIFIER_REVOKE_TIMEOUT_MS",
                problem:
                    "\(revokeMs) is above half of max.poll.interval.ms (\(maxPollMs)): a rebalance waits that long "
                    + "on the poll thread")
        }
        let probeMs = try settings.int("VERIFIER_BREAKER_PROBE_MS", default: 1_000, range: 1...3_600_000)
        let maxProbeMs = try settings.int("VERIFIER_BREAKER_MAX_PROBE_MS", default: 15_000, range: probeMs...3_600_000)
        return VerifierSettings(
            kafka: kafka, topics: topics,
            groupId: settings.string("VERIFIER_GROUP_ID", default: "iap-verifier"),
            metricsListen: try settings.listenAddress("VERIFIER_METRICS_LISTEN", default: "0.0.0.0:9090"),
            appStore: appStore, serverAPI: serverAPI,
            limits: DispatchLimits(maxInFlight: maxInFlight, partitionWindow: window),
            roundDeadline: .milliseconds(
                try settings.int("VERIFIER_ROUND_DEADLINE_MS", default: 60_000, range: 100...3_600_000)),
            retryPolicy: RetryRoundPolicy(
                maximumRounds: rounds, initialBackoff: .milliseconds(backoff), maximumBackoff: .milliseconds(maxBackoff)
            ),
            breaker: AppleCircuitBreaker.Configuration(
                windowSize: breakerWindow, minimumObservations: breakerMinimum, failureRatio: ratio,
                initialProbeInterval: .milliseconds(probeMs), maximumProbeInterval: .milliseconds(maxProbeMs)),
            revokeTimeout: .milliseconds(revokeMs),
            shutdownTimeout: .milliseconds(
                try settings.int("VERIFIER_SHUTDOWN_TIMEOUT_MS", default: 20_000, range: 0...600_000)),
            commitInterval: .milliseconds(
                try settings.int("VERIFIER_COMMIT_INTERVAL_MS", default: 100, range: 0...60_000)),
            revocation: revocation)
    }

    /// `receipt-verifier --help`.
    public static let helpText = """
        receipt-verifier: consumer-group worker that verifies each submission (a receipt with Apple's verifyReceipt
        or the App Store Server API, a StoreKit 2 signed transaction locally and optionally with the API, a
        transaction id with the API) and writes exactly one result per submission (at-least-once; results are
        idempotent by submission_id and credit_key).

        Usage: receipt-verifier [--help]
        Settings come from environment variables:

          KAFKA_BOOTSTRAP_SERVERS        required; Kafka bootstrap list (host:port,...)
          KAFKA_<PROPERTY>               any librdkafka property, upper-cased with '.' as '_'
                                         (KAFKA_SECURITY_PROTOCOL=SASL_SSL sets security.protocol); the verifier
                                         defaults KAFKA_STATISTICS_INTERVAL_MS=1000,
                                         KAFKA_QUEUED_MAX_MESSAGES_KBYTES=65536 and KAFKA_QUEUED_MIN_MESSAGES=20000
                                         for its consumer (librdkafka's mock cluster also wants
                                         KAFKA_FETCH_WAIT_MAX_MS=10; a real Kafka does not); its producer is
                                         idempotent (acks=all); its consumer always auto-commits the offsets
                                         it stores (KAFKA_ENABLE_AUTO_COMMIT=false is ignored, with a warning)
          RECEIPTS_TOPIC                 submissions to verify (default iap.receipts.submitted)
          RESULTS_TOPIC                  one result per submission (default iap.receipts.results)
          RETRY_TOPIC                    delayed re-verification, also consumed (default iap.receipts.retry)
          DLQ_TOPIC                      what could not be processed, for replay (default iap.receipts.dlq)
          NOTIFICATIONS_TOPIC            App Store Server Notifications V2 to verify, also consumed
                                         (default iap.notifications.submitted)
          EVENTS_TOPIC                   purchase events from verified notifications (default iap.purchase.events)
          VERIFIER_GROUP_ID              consumer group (default iap-verifier)
          VERIFIER_MAX_IN_FLIGHT         Apple verifications in flight per process, 1..100000 (default 512)
          VERIFIER_METRICS_LISTEN        /healthz, /readyz, /metrics address host:port (default 0.0.0.0:9090)
          VERIFIER_PARTITION_WINDOW      messages one partition may hold unfinished (including finished ones
                                         behind a slow one) before it is paused; resumed at half
                                         (default 4 x VERIFIER_MAX_IN_FLIGHT)
          VERIFIER_ROUND_DEADLINE_MS     time one round of Apple calls (with the client's in-process retries) may
                                         take before it counts as no verdict, 100..3600000 (default 60000)
          VERIFIER_RETRY_ROUNDS          rounds before a submission fails with apple_unavailable, 1..1000
                                         (default 6); later rounds go through RETRY_TOPIC
          VERIFIER_RETRY_BACKOFF_MS      wait after the first failed round, doubling per round (default 30000)
          VERIFIER_RETRY_MAX_BACKOFF_MS  longest wait between rounds (default 600000)
          VERIFIER_BREAKER_WINDOW        recent rounds the Apple-outage breaker looks at (default 50)
          VERIFIER_BREAKER_MIN_CALLS     rounds needed before it may open (default 20)
          VERIFIER_BREAKER_FAILURE_RATIO share of those without a verdict that opens it, (0, 1] (default 0.5);
                                         while open, new work waits (lag, not failures) and rounds do not count
          VERIFIER_BREAKER_PROBE_MS      first wait before a probe while open, doubling (default 1000)
          VERIFIER_BREAKER_MAX_PROBE_MS  longest wait between probes (default 15000)
          VERIFIER_REVOKE_TIMEOUT_MS     rebalance: time in-flight work of revoked partitions gets, at most half
                                         of max.poll.interval.ms (default 5000)
          VERIFIER_SHUTDOWN_TIMEOUT_MS   SIGTERM: time in-flight work gets before it is left for redelivery
                                         (default 20000)
          VERIFIER_COMMIT_INTERVAL_MS    least time between two commits of the offsets stored as outputs are
                                         acknowledged, 0..60000 (default 100): after a crash the next owner redoes
                                         the work in flight plus what finished within this interval
          APPLE_VERIFY_RECEIPT_URL       production endpoint (default https://buy.itunes.apple.com/verifyReceipt);
                                         https:// (http:// only on loopback: 127.0.0.0/8, ::1, localhost)
          APPLE_SANDBOX_VERIFY_RECEIPT_URL sandbox endpoint (default https://sandbox.itunes.apple.com/verifyReceipt)
          APPLE_SHARED_SECRET            app-specific shared secret (password), sent when set; never logged
          APPLE_TIMEOUT_MS               per-request timeout, 1..600000 (default 30000)
          APPLE_CA_BUNDLE                PEM file of CAs to trust instead of the system store
          APPLE_EXCLUDE_OLD_TRANSACTIONS send exclude-old-transactions (default false)
          APPLE_RETRY_MAX_ATTEMPTS       calls per round, 1..100 (default 4)
          APPLE_RETRY_21002_MAX_ATTEMPTS 21002 answers before invalid_receipt, 1..100 (default 3)
          APPLE_RETRY_BASE_DELAY_MS      first in-round retry delay (default 250)
          APPLE_RETRY_MAX_DELAY_MS       longest in-round retry delay (default 5000)
          APPLE_21002_BURST_WINDOW       recent Apple answers with a status the 21002-burst detector looks at,
                                         process-wide (default 100)
          APPLE_21002_BURST_MIN_ANSWERS  answers needed before a burst can be seen (default 20)
          APPLE_21002_BURST_SHARE        share of them that are 21002 for a burst, (0, 1] (default 0.5); during
                                         a burst 21002 is an outage: retried like a 5xx, never invalid_receipt
          APPLE_21002_BURST_MIN_RECEIPTS distinct receipts among those 21002 answers (default 5)
          ALLOWED_BUNDLE_IDS             required; comma-separated bundle ids whose receipts may be verified
          SANDBOX_POLICY                 accept (result says environment Sandbox) or reject (sandbox_not_allowed)
                                         (default accept); the environment is what Apple's answer says; Xcode and
                                         LocalTesting signed data are never accepted
          APP_ACCOUNT_TOKEN_POLICY       check (default: compared when a submission names expected_app_account_token)
                                         or require (a submission without one is account_mismatch)
          PRODUCT_CATALOG_FILE           JSON catalog of product ids: type and the credit object copied into each
                                         transaction; unlisted products are not creditable (unknown_product).
                                         Re-read within a second of a change; an invalid file keeps the previous
                                         catalog (and stops the start when there is none). Default: no catalog
          APPLE_ISSUER_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE
                                         App Store Server API key (issuer id, key id, the .p8 file read at
                                         start): all three or none; needed for transaction_id submissions,
                                         SIGNED_TRANSACTION_CONFIRM=always and RECEIPT_BACKEND=server-api
          APPLE_SERVER_API_URL           production API (default https://api.storekit.apple.com)
          APPLE_SERVER_API_SANDBOX_URL   sandbox API (default https://api.storekit-sandbox.apple.com); both https
                                         (plain http only to a loopback host)
          APPLE_ROOT_CERTIFICATES        comma-separated DER/PEM files: the only roots signed transactions and
                                         notifications may chain to (default the shipped Apple Root CA - G3)
          APPLE_RECEIPT_ROOT_CERTIFICATES roots of receipts' PKCS#7 signatures with RECEIPT_BACKEND=server-api
                                         (default the shipped Apple Inc. Root)
          APPLE_APP_APPLE_ID             the app's numeric Apple id (Production notifications of other apps are
                                         refused: bundle_mismatch)
          APPLE_SERVER_API_MAX_RPS       this process's production pace per API endpoint, the sandbox's a tenth
                                         (default 50, Apple's per-app limit: divide it across replicas)
          SIGNED_TRANSACTION_CONFIRM     always (also ask Get Transaction Info: Apple's current state; for an app
                                         transaction Get App Transaction Info) or never (local signature check
                                         only) (default always with an API key, else never)
          RECEIPT_BACKEND                verify-receipt (Apple's legacy endpoint) or server-api (receipt signature
                                         checked locally, then Get Transaction History; needs the API key)
                                         (default verify-receipt)
          APPLE_REVOCATION_CHECK         ocsp (OCSP for the leaf and intermediate of every signing chain, as
                                         Apple's libraries with online checks; no answer = retry later, revoked =
                                         invalid_signature) or off (air-gapped deployments) (default ocsp)
          APPLE_OCSP_RESPONDER_URL       send every OCSP request here (a proxy, a mirror, the fake App Store's
                                         /ocsp) instead of the certificates' own URLs (http://ocsp.apple.com/...)
          APPLE_OCSP_MAX_AGE_SECONDS     longest use of an OCSP answer, also bounded by its nextUpdate; refreshed
                                         in the background from half of it, 60..604800 (default 3600)
          APPLE_OCSP_TIMEOUT_MS          one OCSP request, 100..60000 (default 5000)
          LOG_LEVEL                      debug, info, warning or error (default info)

        Endpoints on VERIFIER_METRICS_LISTEN: GET /healthz (alive), GET /readyz (Kafka connected, not draining),
        GET /metrics (Prometheus text). /healthz fails after a fatal Kafka error; /readyz also fails after 10
        publishes in a row that retrying cannot fix (topic ACLs, unknown topic).
        SIGTERM or SIGINT: stop fetching, let in-flight work finish (up to VERIFIER_SHUTDOWN_TIMEOUT_MS), store
        and commit offsets, close, exit 0. Work not finished is redelivered; nothing acknowledged is lost.
        """
}
