import Ingest
import Kafka
import ServiceSupport
import Testing

@Suite("receipt-ingest settings")
struct IngestSettingsTests {
    @Test("KAFKA_BOOTSTRAP_SERVERS is required")
    func bootstrapRequired() {
        #expect(throws: ConfigurationError(variable: "KAFKA_BOOTSTRAP_SERVERS", problem: "is required")) {
            try IngestSettings.fromEnvironment([:])
        }
    }

    @Test("defaults follow the contract")
    func defaults() throws {
        let settings = try IngestSettings.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "k1:9092"])
        #expect(settings.receiptsTopic == "iap.receipts.submitted")
        #expect(settings.listen == ListenAddress(host: "0.0.0.0", port: 8080))
        #expect(settings.apiKeys.isEmpty)
        #expect(settings.maxBodyBytes == 1_048_576)
        #expect(settings.deliveryTimeoutMs == 10_000)
        #expect(settings.kafka["bootstrap.servers"] == "k1:9092")
        #expect(settings.kafka["message.timeout.ms"] == "10000")
        #expect(settings.kafka["linger.ms"] == "2")
        #expect(settings.resultsTopic == "iap.receipts.results")
        #expect(settings.resultIndexLimits == ResultIndex.Limits(
            maxEntries: 100_000, maxBytes: 256 << 20, maxPending: 100_000, maxAgeMs: 3_600_000))
        #expect(settings.resultReplay == .seconds(300))
        #expect(settings.resultReadinessTimeoutSeconds == 10)
        #expect(settings.maxWaitMs == 30_000)
        #expect(settings.notificationsTopic == "iap.notifications.submitted")
        #expect(settings.notificationMaxBodyBytes == 262_144)
        #expect(settings.maxBufferedBytes == 67_108_864)
        #expect(settings.kafka["queue.buffering.max.kbytes"] == "262144")
        // Connection limits that hold against hostile clients out of the box (bench/hostile.sh).
        #expect(settings.maxConnections == 10_000)
        #expect(settings.maxConnectionsPerIP == 1_000)
        #expect(settings.idleTimeoutSeconds == 30)
        #expect(settings.headerTimeoutSeconds == 10)
        #expect(settings.bodyTimeoutSeconds == 30)
        #expect(settings.maxHeaderBytes == 8192)
        // The results follower gets the KAFKA_* properties without the producer's defaults.
        #expect(settings.resultsKafka["bootstrap.servers"] == "k1:9092")
        #expect(settings.resultsKafka["linger.ms"] == nil)
        #expect(settings.resultsKafka["message.timeout.ms"] == nil)
        // Production defaults: librdkafka's fetch wait (only the mock cluster needs a short one; its users set it).
        #expect(settings.resultsKafka["fetch.wait.max.ms"] == nil)
        #expect(settings.kafka["fetch.wait.max.ms"] == nil)
        let mockCluster = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k1:9092", "KAFKA_FETCH_WAIT_MAX_MS": "10",
        ])
        #expect(mockCluster.resultsKafka["fetch.wait.max.ms"] == "10")
    }

    @Test("every setting is read")
    func allSettings() throws {
        let settings = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092", "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "RECEIPTS_TOPIC": "custom.topic", "INGEST_LISTEN": "127.0.0.1:9999", "INGEST_API_KEYS": " a , b ,,",
            "INGEST_MAX_BODY_BYTES": "4096", "INGEST_KAFKA_DELIVERY_TIMEOUT_MS": "2500",
            "INGEST_RETRY_AFTER_SECONDS": "5", "INGEST_HTTP_THREADS": "4", "INGEST_MAX_CONNECTIONS": "100",
            "INGEST_MAX_CONNECTIONS_PER_IP": "10", "INGEST_IDLE_TIMEOUT_SECONDS": "7",
            "RESULTS_TOPIC": "custom.results", "RESULT_INDEX_MAX_ENTRIES": "50", "RESULT_INDEX_MAX_BYTES": "65536",
            "RESULT_INDEX_MAX_PENDING": "20", "RESULT_INDEX_MAX_AGE_SECONDS": "60", "RESULT_INDEX_REPLAY_SECONDS": "30",
            "RESULT_INDEX_READY_TIMEOUT_SECONDS": "3", "INGEST_MAX_WAIT_MS": "1500",
            "NOTIFICATIONS_TOPIC": "custom.notifications", "INGEST_NOTIFICATION_MAX_BODY_BYTES": "2048",
            "INGEST_MAX_BUFFERED_BYTES": "1048576", "INGEST_HEADER_TIMEOUT_SECONDS": "3",
            "INGEST_BODY_TIMEOUT_SECONDS": "4", "INGEST_MAX_HEADER_BYTES": "16384",
            "KAFKA_QUEUE_BUFFERING_MAX_KBYTES": "1024",
        ])
        #expect(settings.headerTimeoutSeconds == 3)
        #expect(settings.bodyTimeoutSeconds == 4)
        #expect(settings.maxHeaderBytes == 16384)
        #expect(settings.kafka["queue.buffering.max.kbytes"] == "1024")
        #expect(settings.notificationsTopic == "custom.notifications")
        #expect(settings.notificationMaxBodyBytes == 2048)
        #expect(settings.maxBufferedBytes == 1_048_576)
        #expect(settings.resultsTopic == "custom.results")
        #expect(settings.resultIndexLimits == ResultIndex.Limits(
            maxEntries: 50, maxBytes: 65536, maxPending: 20, maxAgeMs: 60_000))
        #expect(settings.resultReplay == .seconds(30))
        #expect(settings.resultReadinessTimeoutSeconds == 3)
        #expect(settings.maxWaitMs == 1500)
        #expect(settings.resultsKafka["security.protocol"] == "SASL_SSL")
        #expect(settings.kafka["security.protocol"] == "SASL_SSL")
        #expect(settings.kafka["message.timeout.ms"] == "2500")
        #expect(settings.receiptsTopic == "custom.topic")
        #expect(settings.listen == ListenAddress(host: "127.0.0.1", port: 9999))
        #expect(settings.apiKeys == [APIKey(key: "a"), APIKey(key: "b")])
        #expect(settings.maxBodyBytes == 4096)
        #expect(settings.deliveryTimeoutMs == 2500)
        #expect(settings.retryAfterSeconds == 5)
        #expect(settings.httpThreads == 4)
        #expect(settings.maxConnections == 100)
        #expect(settings.maxConnectionsPerIP == 10)
        #expect(settings.idleTimeoutSeconds == 7)
    }

    @Test("explicit KAFKA_MESSAGE_TIMEOUT_MS and KAFKA_LINGER_MS are kept")
    func explicitMessageTimeout() throws {
        let settings = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k:1", "KAFKA_MESSAGE_TIMEOUT_MS": "1234", "KAFKA_LINGER_MS": "7",
        ])
        #expect(settings.kafka["message.timeout.ms"] == "1234")
        #expect(settings.kafka["linger.ms"] == "7")
        // The server's deadline and stop grace follow what librdkafka really does.
        #expect(settings.deliveryTimeoutMs == 1234)
        #expect(settings.effectiveDeliveryTimeoutMs == 1234)
    }

    @Test("KAFKA_MESSAGE_TIMEOUT_MS and INGEST_KAFKA_DELIVERY_TIMEOUT_MS: equal is fine, different or unusable refused")
    func conflictingDeliveryTimeouts() throws {
        let same = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k:1", "KAFKA_MESSAGE_TIMEOUT_MS": "3000",
            "INGEST_KAFKA_DELIVERY_TIMEOUT_MS": "3000",
        ])
        #expect(same.deliveryTimeoutMs == 3000)
        do {
            _ = try IngestSettings.fromEnvironment([
                "KAFKA_BOOTSTRAP_SERVERS": "k:1", "KAFKA_MESSAGE_TIMEOUT_MS": "60000",
                "INGEST_KAFKA_DELIVERY_TIMEOUT_MS": "3000",
            ])
            Issue.record("different delivery timeouts were accepted")
        } catch {
            #expect(error.variable == "KAFKA_MESSAGE_TIMEOUT_MS")
            #expect(error.problem.contains("INGEST_KAFKA_DELIVERY_TIMEOUT_MS"))
        }
        for unusable in ["0", "soon", "900000"] {
            #expect(throws: ConfigurationError.self) {
                try IngestSettings.fromEnvironment([
                    "KAFKA_BOOTSTRAP_SERVERS": "k:1", "KAFKA_MESSAGE_TIMEOUT_MS": unusable,
                ])
            }
        }
    }

    @Test("settings built in code: message.timeout.ms in the Kafka properties is the delivery timeout that counts")
    func effectiveDeliveryTimeout() {
        var kafka = KafkaConfiguration()
        kafka["message.timeout.ms"] = "4500"
        let settings = IngestSettings(kafka: kafka, deliveryTimeoutMs: 10_000)
        #expect(settings.effectiveDeliveryTimeoutMs == 4500)
        #expect(IngestSettings(kafka: KafkaConfiguration(), deliveryTimeoutMs: 700).effectiveDeliveryTimeoutMs == 700)
    }

    @Test("RESULT_INDEX_REPLAY_SECONDS: 'all' reads everything back, 0 nothing, N the index's worth by offsets")
    func replayWindow() throws {
        let all = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k:1", "RESULT_INDEX_REPLAY_SECONDS": "ALL",
        ])
        #expect(all.resultReplay == .everything)
        #expect(ResultReplayWindow.everything.followerStart(nowMs: 1_000_000, readBackLimit: 10) == .beginning)
        #expect(ResultReplayWindow.seconds(0).followerStart(nowMs: 1_000_000, readBackLimit: 10) == .end)
        #expect(
            ResultReplayWindow.seconds(300).followerStart(nowMs: 1_000_000, readBackLimit: 100_000)
                == .recent(messages: 100_000, notBeforeMs: 700_000))
    }

    @Test("INGEST_MAX_BUFFERED_BYTES below a body limit is refused (such bodies could never be held)")
    func bufferedBelowBodyLimit() {
        for variable in ["INGEST_MAX_BODY_BYTES", "INGEST_NOTIFICATION_MAX_BODY_BYTES"] {
            do {
                _ = try IngestSettings.fromEnvironment([
                    "KAFKA_BOOTSTRAP_SERVERS": "k:1", "INGEST_MAX_BUFFERED_BYTES": "1048576", variable: "2097152",
                ])
                Issue.record("a buffered bound below \(variable) was accepted")
            } catch {
                #expect(error.variable == "INGEST_MAX_BUFFERED_BYTES")
                #expect(error.problem.contains(variable))
            }
        }
    }

    @Test("INGEST_API_KEYS: named and unnamed entries; the name is the text before the first ':'")
    func namedKeys() throws {
        let settings = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k:1",
            "INGEST_API_KEYS": "billing:k1, support:k2 ,k3,ops.team-2:a:b:c,billing:k4",
        ])
        #expect(
            settings.apiKeys == [
                APIKey(name: "billing", key: "k1"), APIKey(name: "support", key: "k2"), APIKey(key: "k3"),
                APIKey(name: "ops.team-2", key: "a:b:c"), APIKey(name: "billing", key: "k4"),
            ])
    }

    @Test("INGEST_API_KEYS problems are refused without echoing the key", arguments: [
        "bad name:secret-1", ":secret-1", "n:", "\(String(repeating: "n", count: 65)):secret-1",
        "a:secret-1,b:secret-1", "secret-1,b:secret-1",
    ])
    func invalidKeys(value: String) {
        do {
            _ = try IngestSettings.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "k:1", "INGEST_API_KEYS": value])
            Issue.record("INGEST_API_KEYS=\(value) was accepted")
        } catch {
            #expect(error.variable == "INGEST_API_KEYS")
            #expect(!error.problem.contains("secret-1"))
        }
    }

    @Test("INGEST_KEY_PROOFS: kinds per key name, shared by every key under it; unlisted keys without transaction_id")
    func keyProofs() throws {
        let settings = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k:1",
            "INGEST_API_KEYS": "app:k1,app:k2,partner:k3,backend:k4,k5",
            "INGEST_KEY_PROOFS": " app : receipt_data + signed_transaction , partner:transaction_id+transaction_id",
        ])
        #expect(
            settings.keyProofs
                == KeyProofLimits(["app": [.receiptData, .signedTransaction], "partner": [.transactionId]]))
        #expect(!settings.keyProofs.allows(.transactionId, for: .client("app"), authenticationEnabled: true))
        #expect(settings.keyProofs.allows(.signedTransaction, for: .client("app"), authenticationEnabled: true))
        #expect(!settings.keyProofs.allows(.receiptData, for: .client("partner"), authenticationEnabled: true))
        #expect(settings.keyProofs.allows(.transactionId, for: .client("partner"), authenticationEnabled: true))
        // Not listed (a named key, an unnamed one): receipts, signed transactions and app transactions, no bare
        // transaction id.
        for caller in [Caller.client("backend"), .unrestricted] {
            #expect(settings.keyProofs.allowedKinds(for: caller, authenticationEnabled: true) == [
                .receiptData, .signedTransaction, .signedAppTransaction,
            ])
            #expect(!settings.keyProofs.allows(.transactionId, for: caller, authenticationEnabled: true))
        }
        // Unset: every key has the default, which grants no transaction_id (the 2026-12 breaking default).
        let unset = try IngestSettings.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "k:1", "INGEST_API_KEYS": "app:k1"])
        #expect(unset.keyProofs.isEmpty)
        #expect(unset.keyProofs == KeyProofLimits())
        #expect(!unset.keyProofs.allows(.transactionId, for: .client("app"), authenticationEnabled: true))
        #expect(unset.keyProofs.allows(.receiptData, for: .client("app"), authenticationEnabled: true))
        #expect(unset.keyProofs.allows(.signedTransaction, for: .client("app"), authenticationEnabled: true))
        // No keys at all: no authentication, so nobody to grant anything to; every kind is accepted.
        let open = try IngestSettings.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "k:1"])
        for kind in ProofKind.allCases {
            #expect(open.keyProofs.allows(kind, for: .unrestricted, authenticationEnabled: false))
        }
    }

    @Test("INGEST_KEY_PROOFS '*' sets every key not listed by name, unnamed keys included; named entries still win")
    func keyProofsEveryOtherKey() throws {
        let settings = try IngestSettings.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "k:1", "INGEST_API_KEYS": "app:k1,backend:k2,k3",
            "INGEST_KEY_PROOFS": "*:receipt_data+signed_transaction+transaction_id,app:signed_transaction",
        ])
        #expect(
            settings.keyProofs
                == KeyProofLimits(
                    ["app": [.signedTransaction]], unlisted: [.receiptData, .signedTransaction, .transactionId]))
        #expect(!settings.keyProofs.isEmpty)
        for caller in [Caller.client("backend"), .unrestricted] {
            #expect(settings.keyProofs.allows(.transactionId, for: caller, authenticationEnabled: true))
        }
        #expect(!settings.keyProofs.allows(.transactionId, for: .client("app"), authenticationEnabled: true))
        #expect(!settings.keyProofs.allows(.receiptData, for: .client("app"), authenticationEnabled: true))
        // Without keys there is nothing to grant: an entry is a mistake, refused at start.
        do {
            _ = try IngestSettings.fromEnvironment([
                "KAFKA_BOOTSTRAP_SERVERS": "k:1", "INGEST_KEY_PROOFS": "*:receipt_data",
            ])
            Issue.record("INGEST_KEY_PROOFS without INGEST_API_KEYS was accepted")
        } catch {
            #expect(error.variable == "INGEST_KEY_PROOFS")
            #expect(error.problem.contains("INGEST_API_KEYS is empty"), "\(error.problem)")
        }
    }

    @Test("INGEST_KEY_PROOFS problems are refused at start, saying what is wrong", arguments: [
        ("app", "must be name:kind+kind"),
        ("nobody:receipt_data", "'nobody' is not the name of a key in INGEST_API_KEYS"),
        ("k5:receipt_data", "gives a key of INGEST_API_KEYS where its name belongs"),
        ("secret-1:receipt_data", "gives a key of INGEST_API_KEYS where its name belongs"),
        ("app:receipts",
         "'receipts' is not a proof kind (receipt_data, signed_transaction, transaction_id, signed_app_transaction)"),
        ("app:", "needs at least one proof kind"),
        ("app:receipt_data+", "needs at least one proof kind"),
        ("app:receipt_data,app:transaction_id", "entry 2: 'app' is listed twice"),
        ("*:receipt_data,*:transaction_id", "entry 2: '*' is listed twice"),
        ("*:", "needs at least one proof kind"),
    ])
    func invalidKeyProofs(value: String, problem: String) {
        do {
            _ = try IngestSettings.fromEnvironment([
                "KAFKA_BOOTSTRAP_SERVERS": "k:1", "INGEST_API_KEYS": "app:secret-1,k5", "INGEST_KEY_PROOFS": value,
            ])
            Issue.record("INGEST_KEY_PROOFS=\(value) was accepted")
        } catch {
            #expect(error.variable == "INGEST_KEY_PROOFS")
            #expect(error.problem.contains(problem), "\(error.problem)")
            #expect(!error.problem.contains("secret-1") && !error.problem.contains("k5"))
        }
    }

    @Test("invalid values name their variable", arguments: [
        ("INGEST_LISTEN", "nonsense"), ("INGEST_MAX_BODY_BYTES", "10"), ("INGEST_KAFKA_DELIVERY_TIMEOUT_MS", "abc"),
        ("RECEIPTS_TOPIC", "bad topic"), ("INGEST_HTTP_THREADS", "0"), ("RESULTS_TOPIC", "bad/topic"),
        ("RESULT_INDEX_MAX_ENTRIES", "0"), ("RESULT_INDEX_MAX_AGE_SECONDS", "x"), ("RESULT_INDEX_REPLAY_SECONDS", "-1"),
        ("RESULT_INDEX_REPLAY_SECONDS", "some"), ("INGEST_MAX_WAIT_MS", "300001"), ("RESULT_INDEX_MAX_BYTES", "1"),
        ("NOTIFICATIONS_TOPIC", "bad topic"), ("INGEST_NOTIFICATION_MAX_BODY_BYTES", "100"),
        ("INGEST_MAX_BUFFERED_BYTES", "1000"),
    ])
    func invalid(variable: String, value: String) {
        do {
            _ = try IngestSettings.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "k:1", variable: value])
            Issue.record("\(variable)=\(value) was accepted")
        } catch {
            #expect(error.variable == variable)
        }
    }

    @Test("--help documents every variable the settings read")
    func helpMentionsEverything() {
        for variable in [
            "KAFKA_BOOTSTRAP_SERVERS", "KAFKA_<PROPERTY>", "RECEIPTS_TOPIC", "INGEST_LISTEN", "INGEST_API_KEYS",
            "INGEST_MAX_BODY_BYTES", "INGEST_KAFKA_DELIVERY_TIMEOUT_MS", "INGEST_RETRY_AFTER_SECONDS",
            "INGEST_HTTP_THREADS", "INGEST_MAX_CONNECTIONS", "INGEST_MAX_CONNECTIONS_PER_IP",
            "INGEST_IDLE_TIMEOUT_SECONDS", "LOG_LEVEL", "RESULTS_TOPIC", "RESULT_INDEX_MAX_ENTRIES",
            "RESULT_INDEX_MAX_BYTES", "RESULT_INDEX_MAX_PENDING", "RESULT_INDEX_MAX_AGE_SECONDS",
            "RESULT_INDEX_REPLAY_SECONDS", "RESULT_INDEX_READY_TIMEOUT_SECONDS", "INGEST_MAX_WAIT_MS",
            "NOTIFICATIONS_TOPIC", "INGEST_NOTIFICATION_MAX_BODY_BYTES", "INGEST_MAX_BUFFERED_BYTES",
            "INGEST_HEADER_TIMEOUT_SECONDS", "INGEST_BODY_TIMEOUT_SECONDS", "INGEST_MAX_HEADER_BYTES",
            "KAFKA_QUEUE_BUFFERING_MAX_KBYTES", "INGEST_KEY_PROOFS",
        ] {
            #expect(IngestSettings.helpText.contains(variable), "\(variable) missing from --help")
        }
    }
}
