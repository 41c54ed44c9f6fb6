import Kafka
import ServiceSupport

/// Everything `receipt-ingest` reads from its environment, validated. Every variable is described in `helpText`.
public struct IngestSettings: Sendable {
    /// librdkafka properties from `KAFKA_*` (with `message.timeout.ms` defaulting to the delivery timeout).
    public var kafka: KafkaConfiguration
    public var receiptsTopic: String
    public var listen: ListenAddress
    /// Accepted `Authorization: Bearer` keys, optionally named (`INGEST_API_KEYS`); empty = no authentication.
    public var apiKeys: [APIKey]
    /// The proof kinds each key may submit (`INGEST_KEY_PROOFS`); a key not listed may submit
    /// `KeyProofLimits.defaultKinds` (no bare `transaction_id`), every kind when `apiKeys` is empty.
    public var keyProofs: KeyProofLimits
    /// Largest `POST /v1/receipts` body (`INGEST_MAX_BODY_BYTES`).
    public var maxBodyBytes: Int
    /// Largest `POST /v1/apple/notifications` body (`INGEST_NOTIFICATION_MAX_BODY_BYTES`).
    public var notificationMaxBodyBytes: Int
    /// Bound on request body bytes held across all connections while they are received
    /// (`INGEST_MAX_BUFFERED_BYTES`); past it new bodies are answered 503 `server_busy`.
    public var maxBufferedBytes: Int
    /// The topic Apple's notifications are written to (`NOTIFICATIONS_TOPIC`).
    public var notificationsTopic: String
    /// A submission not acknowledged by Kafka within this time is answered 503 (and may still be written later).
    /// From the environment it equals librdkafka's `message.timeout.ms` (`KAFKA_MESSAGE_TIMEOUT_MS`, when set,
    /// decides; the two set to different values are refused). See `effectiveDeliveryTimeoutMs`.
    public var deliveryTimeoutMs: Int
    /// The delivery timeout librdkafka applies: `message.timeout.ms` from `kafka` when it is a positive number (a
    /// settings value built in code may set it apart from `deliveryTimeoutMs`), else `deliveryTimeoutMs`.
    public var effectiveDeliveryTimeoutMs: Int {
        guard let text = kafka["message.timeout.ms"], let value = Int(text), value > 0 else { return deliveryTimeoutMs }
        return value
    }
    /// `Retry-After` seconds on 503 answers.
    public var retryAfterSeconds: Int
    public var httpThreads: Int
    /// Concurrent HTTP connections (`INGEST_MAX_CONNECTIONS`).
    public var maxConnections: Int
    /// Concurrent HTTP connections per client IP, 0 = unlimited (`INGEST_MAX_CONNECTIONS_PER_IP`).
    public var maxConnectionsPerIP: Int
    /// Idle keep-alive connections are closed after this; a kept-alive connection must complete its next request
    /// head within it (`INGEST_IDLE_TIMEOUT_SECONDS`).
    public var idleTimeoutSeconds: Int
    /// A new connection must complete its request head within this (`INGEST_HEADER_TIMEOUT_SECONDS`).
    public var headerTimeoutSeconds: Int
    /// A request body must arrive completely within this of its head (`INGEST_BODY_TIMEOUT_SECONDS`).
    public var bodyTimeoutSeconds: Int
    /// Largest request line plus headers; larger = 431 (`INGEST_MAX_HEADER_BYTES`).
    public var maxHeaderBytes: Int

    // Verdicts for clients (issue 6): the result index fed from `RESULTS_TOPIC`.

    /// The topic results are read from (`RESULTS_TOPIC`).
    public var resultsTopic: String
    /// librdkafka properties for the results follower: `KAFKA_*` as given, without the producer defaults above. Its
    /// fetch wait is librdkafka's unless `KAFKA_FETCH_WAIT_MAX_MS` is set: a real broker answers a fetch as soon as
    /// results arrive, but librdkafka's mock cluster (`make dev`, tests, benchmarks) holds every fetch for the full
    /// wait, so those set 10 ms (up to half a second on every verdict otherwise).
    public var resultsKafka: KafkaConfiguration
    /// Bounds of the index (`RESULT_INDEX_MAX_ENTRIES`, `_MAX_BYTES`, `_MAX_PENDING`, `_MAX_AGE_SECONDS`).
    public var resultIndexLimits: ResultIndex.Limits
    /// How much of the results topic is read back at start (`RESULT_INDEX_REPLAY_SECONDS`).
    public var resultReplay: ResultReplayWindow
    /// The longest `/readyz` waits for the read-back (`RESULT_INDEX_READY_TIMEOUT_SECONDS`).
    public var resultReadinessTimeoutSeconds: Int
    /// The largest accepted `wait_ms` of `POST /v1/receipts?wait_ms=N` (`INGEST_MAX_WAIT_MS`); 0 disables waiting.
    public var maxWaitMs: Int

    public static let defaultNotificationMaxBodyBytes = 256 << 10
    public static let defaultMaxBufferedBytes = 64 << 20
    public static let defaultListen = "0.0.0.0:8080"
    // Connection defaults: see "Hostile clients" in docs/OPERATIONS.md for the reasoning and bench/hostile.sh for the
    // measurements behind them.
    public static let defaultMaxConnections = 10_000
    public static let defaultMaxConnectionsPerIP = 1_000
    public static let defaultIdleTimeoutSeconds = 30
    public static let defaultHeaderTimeoutSeconds = 10
    public static let defaultBodyTimeoutSeconds = 30
    public static let defaultMaxHeaderBytes = 8 * 1024
    public static let defaultReplaySeconds = 300
    public static let defaultMaxWaitMs = 30_000
    /// librdkafka's `linger.ms` for the ingest's producer unless `KAFKA_LINGER_MS` is set.
    public static let defaultLingerMs = "2"
    /// librdkafka's `queue.buffering.max.kbytes` for the ingest's producer unless `KAFKA_QUEUE_BUFFERING_MAX_KBYTES`
    /// is set: 256 MiB of submissions and notifications waiting for Kafka's acknowledgement (librdkafka's own default
    /// is 1 GiB). Past it new ones are answered 503 `kafka_queue_full` at once, so a slow cluster (or a flood of
    /// well-formed notifications, which need no key) cannot grow the ingest's memory further.
    public static let defaultProducerQueueKilobytes = "262144"

    public init(
        kafka: KafkaConfiguration, receiptsTopic: String = ServiceTopic.receipts.defaultName,
        listen: ListenAddress = ListenAddress(host: "0.0.0.0", port: 8080), apiKeys: [APIKey] = [],
        keyProofs: KeyProofLimits = KeyProofLimits(),
        maxBodyBytes: Int = 1 << 20, notificationMaxBodyBytes: Int = IngestSettings.defaultNotificationMaxBodyBytes,
        maxBufferedBytes: Int = IngestSettings.defaultMaxBufferedBytes,
        notificationsTopic: String = ServiceTopic.notifications.defaultName,
        deliveryTimeoutMs: Int = 10_000, retryAfterSeconds: Int = 1,
        httpThreads: Int = 2, maxConnections: Int = IngestSettings.defaultMaxConnections,
        maxConnectionsPerIP: Int = IngestSettings.defaultMaxConnectionsPerIP,
        idleTimeoutSeconds: Int = IngestSettings.defaultIdleTimeoutSeconds,
        headerTimeoutSeconds: Int = IngestSettings.defaultHeaderTimeoutSeconds,
        bodyTimeoutSeconds: Int = IngestSettings.defaultBodyTimeoutSeconds,
        maxHeaderBytes: Int = IngestSettings.defaultMaxHeaderBytes,
        resultsTopic: String = ServiceTopic.results.defaultName, resultsKafka: KafkaConfiguration? = nil,
        resultIndexLimits: ResultIndex.Limits = ResultIndex.Limits(),
        resultReplay: ResultReplayWindow = .seconds(IngestSettings.defaultReplaySeconds),
        resultReadinessTimeoutSeconds: Int = 10, maxWaitMs: Int = IngestSettings.defaultMaxWaitMs
    ) {
        self.kafka = kafka
        self.receiptsTopic = receiptsTopic
        self.listen = listen
        self.apiKeys = apiKeys
        self.keyProofs = keyProofs
        self.maxBodyBytes = maxBodyBytes
        self.notificationMaxBodyBytes = notificationMaxBodyBytes
        self.maxBufferedBytes = maxBufferedBytes
        self.notificationsTopic = notificationsTopic
        self.deliveryTimeoutMs = deliveryTimeoutMs
        self.retryAfterSeconds = retryAfterSeconds
        self.httpThreads = httpThreads
        self.maxConnections = maxConnections
        self.maxConnectionsPerIP = maxConnectionsPerIP
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.maxHeaderBytes = maxHeaderBytes
        self.resultsTopic = resultsTopic
        self.resultsKafka = resultsKafka ?? kafka
        self.resultIndexLimits = resultIndexLimits
        self.resultReplay = resultReplay
        self.resultReadinessTimeoutSeconds = resultReadinessTimeoutSeconds
        self.maxWaitMs = maxWaitMs
    }

    /// The producer's delivery timeout: INGEST_KAFKA_DELIVERY_TIMEOUT_MS, written to `message.timeout.ms`, or
    /// KAFKA_MESSAGE_TIMEOUT_MS when that is set (the server's deadline and stop grace must follow what librdkafka
    /// really does). Both set to different values is refused, naming both.
    private static func deliveryTimeoutMs(
        _ settings: Settings, kafka: inout KafkaConfiguration
    ) throws(ConfigurationError) -> Int {
        let range = 100...300_000
        let ingestValue = try settings.int("INGEST_KAFKA_DELIVERY_TIMEOUT_MS", default: 10_000, range: range)
        guard let text = kafka["message.timeout.ms"] else {
            kafka["message.timeout.ms"] = String(ingestValue)
            return ingestValue
        }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(
                variable: "KAFKA_MESSAGE_TIMEOUT_MS",
                problem: "'\(text)' is not a whole number of milliseconds in \(range.lowerBound)...\(range.upperBound) "
                    + "(the ingest answers 503 when it passes)")
        }
        if settings.string("INGEST_KAFKA_DELIVERY_TIMEOUT_MS") != nil, value != ingestValue {
            throw ConfigurationError(
                variable: "KAFKA_MESSAGE_TIMEOUT_MS",
                problem: "is \(value) but INGEST_KAFKA_DELIVERY_TIMEOUT_MS is \(ingestValue): set only one of them, "
                    + "or both to the same value")
        }
        return value
    }

    /// Reads and validates the settings.
    /// - Throws: `ConfigurationError` naming the first variable that is missing or invalid.
    public static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> IngestSettings {
        let settings = Settings(environment: environment)
        _ = try settings.required("KAFKA_BOOTSTRAP_SERVERS")
        let resultsKafka = KafkaConfiguration.fromEnvironment(environment)
        var kafka = resultsKafka
        let deliveryTimeoutMs = try Self.deliveryTimeoutMs(settings, kafka: &kafka)
        // Every request waits for its batch: a short linger keeps latency low (bench/ingest.sh: 2 ms gave ~14k
        // requests/s with p99 ~12 ms on 2 cores, the producer's 5 ms default ~8k/s at the same concurrency).
        if kafka["linger.ms"] == nil {
            kafka["linger.ms"] = defaultLingerMs
        }
        if kafka["queue.buffering.max.kbytes"] == nil {
            kafka["queue.buffering.max.kbytes"] = defaultProducerQueueKilobytes
        }
        let topics = try TopicNames.fromEnvironment(settings, reading: [.receipts, .notifications, .results])
        let limits = ResultIndex.Limits(
            maxEntries: try settings.int("RESULT_INDEX_MAX_ENTRIES", default: 100_000, range: 1...100_000_000),
            maxBytes: try settings.int("RESULT_INDEX_MAX_BYTES", default: 256 << 20, range: 1024...(64 << 30)),
            maxPending: try settings.int("RESULT_INDEX_MAX_PENDING", default: 100_000, range: 1...100_000_000),
            maxAgeMs: Int64(try settings.int("RESULT_INDEX_MAX_AGE_SECONDS", default: 3600, range: 1...31_536_000))
                * 1000)
        let replay: ResultReplayWindow
        if settings.string("RESULT_INDEX_REPLAY_SECONDS")?.lowercased() == "all" {
            replay = .everything
        } else {
            replay = .seconds(
                try settings.int(
                    "RESULT_INDEX_REPLAY_SECONDS", default: defaultReplaySeconds, range: 0...31_536_000))
        }
        let apiKeys = try APIKey.parseList(settings.list("INGEST_API_KEYS"))
        let keyProofs = try KeyProofLimits.parseList(settings.list("INGEST_KEY_PROOFS"), keys: apiKeys)
        let maxBodyBytes = try settings.int("INGEST_MAX_BODY_BYTES", default: 1 << 20, range: 1024...(64 << 20))
        let notificationMaxBodyBytes = try settings.int(
            "INGEST_NOTIFICATION_MAX_BODY_BYTES", default: defaultNotificationMaxBodyBytes, range: 1024...(64 << 20))
        let maxBufferedBytes = try settings.int(
            "INGEST_MAX_BUFFERED_BYTES", default: defaultMaxBufferedBytes, range: (64 << 10)...(64 << 30))
        // A body larger than the bound could never be held: it would get 503 server_busy forever.
        guard maxBufferedBytes >= max(maxBodyBytes, notificationMaxBodyBytes) else {
            throw ConfigurationError(
                variable: "INGEST_MAX_BUFFERED_BYTES",
                problem: "is \(maxBufferedBytes), below the largest body accepted (INGEST_MAX_BODY_BYTES "
                    + "\(maxBodyBytes), INGEST_NOTIFICATION_MAX_BODY_BYTES \(notificationMaxBodyBytes)): raise it or "
                    + "lower those")
        }
        return IngestSettings(
            kafka: kafka, receiptsTopic: topics.receipts,
            listen: try settings.listenAddress("INGEST_LISTEN", default: defaultListen), apiKeys: apiKeys,
            keyProofs: keyProofs,
            maxBodyBytes: maxBodyBytes, notificationMaxBodyBytes: notificationMaxBodyBytes,
            maxBufferedBytes: maxBufferedBytes,
            notificationsTopic: topics.notifications,
            deliveryTimeoutMs: deliveryTimeoutMs,
            retryAfterSeconds: try settings.int("INGEST_RETRY_AFTER_SECONDS", default: 1, range: 1...3600),
            httpThreads: try settings.int("INGEST_HTTP_THREADS", default: 2, range: 1...64),
            maxConnections: try settings.int(
                "INGEST_MAX_CONNECTIONS", default: defaultMaxConnections, range: 1...1_000_000),
            maxConnectionsPerIP: try settings.int(
                "INGEST_MAX_CONNECTIONS_PER_IP", default: defaultMaxConnectionsPerIP, range: 0...1_000_000),
            idleTimeoutSeconds: try settings.int(
                "INGEST_IDLE_TIMEOUT_SECONDS", default: defaultIdleTimeoutSeconds, range: 1...3600),
            headerTimeoutSeconds: try settings.int(
                "INGEST_HEADER_TIMEOUT_SECONDS", default: defaultHeaderTimeoutSeconds, range: 1...3600),
            bodyTimeoutSeconds: try settings.int(
                "INGEST_BODY_TIMEOUT_SECONDS", default: defaultBodyTimeoutSeconds, range: 1...3600),
            maxHeaderBytes: try settings.int(
                "INGEST_MAX_HEADER_BYTES", default: defaultMaxHeaderBytes, range: 1024...(1 << 20)),
            resultsTopic: topics.results, resultsKafka: resultsKafka, resultIndexLimits: limits, resultReplay: replay,
            resultReadinessTimeoutSeconds: try settings.int(
                "RESULT_INDEX_READY_TIMEOUT_SECONDS", default: 10, range: 0...3600),
            maxWaitMs: try settings.int("INGEST_MAX_WAIT_MS", default: defaultMaxWaitMs, range: 0...300_000))
    }

    /// `receipt-ingest --help`.
    public static let helpText = """
        receipt-ingest: the HTTP front door of receipt verification. Validates submissions, writes them to Kafka and
        answers 202 only after Kafka acknowledged them.

        Usage: receipt-ingest [--help]
        Settings come from environment variables:

          KAFKA_BOOTSTRAP_SERVERS          required; Kafka bootstrap list (host:port,...)
          KAFKA_<PROPERTY>                 any librdkafka property, upper-cased with '.' as '_'
                                           (KAFKA_SECURITY_PROTOCOL=SASL_SSL sets security.protocol);
                                           the ingest's producer defaults to KAFKA_LINGER_MS=2 (low latency),
                                           KAFKA_QUEUE_BUFFERING_MAX_KBYTES=262144 (at most 256 MiB waiting
                                           for Kafka; more is answered 503 kafka_queue_full) and acks=all
                                           with idempotence (librdkafka's mock cluster also wants
                                           KAFKA_FETCH_WAIT_MAX_MS=10 for prompt verdicts; a real Kafka does not)
          RECEIPTS_TOPIC                   topic for submissions (default iap.receipts.submitted)
          INGEST_LISTEN                    HTTP address host:port (default 0.0.0.0:8080)
          INGEST_API_KEYS                  comma-separated keys accepted as 'Authorization: Bearer <key>',
                                           each 'key' or 'name:key' (the text before the first ':' is the name,
                                           [A-Za-z0-9._-]{1,64}; a key containing ':' needs a name). A named
                                           key writes its name as client_id and sees only its own submissions'
                                           results; unnamed keys see every result. Empty = no authentication
                                           (logged as a warning)
          INGEST_KEY_PROOFS                the proof kinds each key may submit, comma-separated entries
                                           'name:kind+kind' with kinds receipt_data, signed_transaction,
                                           transaction_id, signed_app_transaction. A key without an entry may
                                           submit receipt_data, signed_transaction and signed_app_transaction
                                           only: a bare transaction_id, which anyone who
                                           learns one could submit, needs a grant (server-to-server keys, e.g.
                                           backend:receipt_data+signed_transaction+transaction_id). The name
                                           '*' sets every key not listed, unnamed keys included
                                           ('*:receipt_data+signed_transaction+transaction_id' is the default
                                           before 2026-12). Another kind is 403 proof_not_allowed, before
                                           anything is written. The kind is the effective one: a signed
                                           transaction sent as receipt_data is signed_transaction. A name must
                                           be one of INGEST_API_KEYS (all its keys share the entry). With
                                           INGEST_API_KEYS empty (no authentication) every kind is accepted and
                                           this must be empty (default: empty)
          INGEST_MAX_BODY_BYTES            largest POST /v1/receipts body, 1024..67108864 (default 1048576);
                                           larger = 413
          INGEST_MAX_BUFFERED_BYTES        request body bytes held across all connections while they arrive,
                                           65536..68719476736 and at least the body limits (default 67108864);
                                           past it new bodies get 503 server_busy with Retry-After
          NOTIFICATIONS_TOPIC              topic for Apple's notifications (default iap.notifications.submitted)
          INGEST_NOTIFICATION_MAX_BODY_BYTES
                                           largest POST /v1/apple/notifications body, 1024..67108864
                                           (default 262144); larger = 413
          INGEST_KAFKA_DELIVERY_TIMEOUT_MS time Kafka has to acknowledge a submission before the request is
                                           answered 503, 100..300000 (default 10000); also librdkafka's
                                           message.timeout.ms. KAFKA_MESSAGE_TIMEOUT_MS may be set instead
                                           (same range); both with different values are refused
          INGEST_RETRY_AFTER_SECONDS       Retry-After on 503 answers, 1..3600 (default 1)
          INGEST_HTTP_THREADS              HTTP server threads, 1..64 (default 2)
          INGEST_MAX_CONNECTIONS           concurrent HTTP connections, 1..1000000 (default 10000); more are
                                           refused. Each is a file descriptor: the ingest raises its soft
                                           open-file limit to fit them (plus 256) when the hard limit allows,
                                           else accepts fewer (logged)
          INGEST_MAX_CONNECTIONS_PER_IP    concurrent connections per client IP, 0 = unlimited (default 1000);
                                           raise it, or 0, behind a proxy or NAT that funnels many clients
          INGEST_IDLE_TIMEOUT_SECONDS      idle keep-alive connections are closed after this, and a kept-alive
                                           connection must complete its next request head within it,
                                           1..3600 (default 30)
          INGEST_HEADER_TIMEOUT_SECONDS    a new connection that has not sent a complete request head
                                           (request line and headers) within this is closed, however slowly
                                           bytes trickle in, 1..3600 (default 10)
          INGEST_BODY_TIMEOUT_SECONDS      a request body not completely received within this of its head is
                                           dropped and the connection closed, 1..3600 (default 30)
          INGEST_MAX_HEADER_BYTES          largest request line plus headers, 1024..1048576 (default 8192);
                                           larger = 431
          LOG_LEVEL                        debug, info, warning or error (default info)

        Verdicts (GET /v1/receipts/{submission_id}, POST /v1/receipts?wait_ms=N): every instance follows
        RESULTS_TOPIC without a consumer group into a bounded in-memory index by submission_id.

          RESULTS_TOPIC                    topic the verifier writes results to (default iap.receipts.results)
          RESULT_INDEX_MAX_ENTRIES         results kept, oldest evicted first, 1..100000000 (default 100000)
          RESULT_INDEX_MAX_BYTES           result message bytes kept, oldest evicted first (default 268435456)
          RESULT_INDEX_MAX_PENDING         accepted submissions without a result remembered as "pending"
                                           (GET answers 202), oldest forgotten first (default 100000)
          RESULT_INDEX_MAX_AGE_SECONDS     results and pending submissions are forgotten this long after their
                                           time, 1..31536000 (default 3600)
          RESULT_INDEX_REPLAY_SECONDS      results of the last N seconds read back at start, so a restarted or
                                           new instance answers at once; 0 = none, 'all' = everything the topic
                                           retains (default 300). Read by offsets (on every Kafka, embedded-kafka
                                           included): each partition's share of RESULT_INDEX_MAX_ENTRIES most
                                           recent results, of which those younger than N seconds are kept
          RESULT_INDEX_READY_TIMEOUT_SECONDS
                                           /readyz waits for the read-back at most this long, 0..3600 (default 10)
          INGEST_MAX_WAIT_MS               largest wait_ms accepted (larger = 400), 0..300000 (default 30000);
                                           0 disables waiting

        Endpoints: POST /v1/receipts[?wait_ms=N], GET /v1/receipts/{submission_id}, POST /v1/apple/notifications
        (no API key), GET /healthz, GET /readyz, GET /metrics (see schemas/openapi.yaml).
        SIGTERM or SIGINT: stop accepting, answer waiting requests 202, wait for the submissions Kafka has not
        acknowledged yet, flush (up to the delivery timeout), exit 0.
        """
}
