import ServiceSupport
import Testing

@testable import Verifier

@Suite("VerifierSettings")
struct VerifierSettingsTests {
    let minimal = ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "ALLOWED_BUNDLE_IDS": "com.example.game"]

    @Test func defaultsFollowTheContract() throws {
        let settings = try VerifierSettings.fromEnvironment(minimal)
        #expect(settings.topics == TopicNames())
        #expect(
            settings.topics.receipts == "iap.receipts.submitted" && settings.topics.deadLetter == "iap.receipts.dlq")
        #expect(settings.groupId == "iap-verifier")
        #expect(settings.limits.maxInFlight == 512 && settings.limits.partitionWindow == 2048)
        #expect(settings.metricsListen == ListenAddress(host: "0.0.0.0", port: 9090))
        #expect(settings.appStore.verdictPolicy.sandboxPolicy.rawValue == "accept")
        #expect(settings.kafka["bootstrap.servers"] == "127.0.0.1:9092")
        #expect(settings.consumerKafka["queued.max.messages.kbytes"] == "65536")
        #expect(settings.kafka["queued.max.messages.kbytes"] == nil)  // consumer-only: not given to the producer
        // Production defaults: librdkafka's fetch wait (only the mock cluster needs a short one; its users set it).
        #expect(settings.consumerKafka["fetch.wait.max.ms"] == nil)
        #expect(settings.retryPolicy.maximumRounds == 6)
        #expect(settings.commitInterval == .milliseconds(100))
    }

    @Test func everySettingIsRead() throws {
        var environment = minimal
        environment["RECEIPTS_TOPIC"] = "r"
        environment["RESULTS_TOPIC"] = "s"
        environment["RETRY_TOPIC"] = "t"
        environment["DLQ_TOPIC"] = "d"
        environment["VERIFIER_GROUP_ID"] = "g"
        environment["VERIFIER_MAX_IN_FLIGHT"] = "64"
        environment["VERIFIER_PARTITION_WINDOW"] = "100"
        environment["VERIFIER_METRICS_LISTEN"] = "127.0.0.1:0"
        environment["VERIFIER_ROUND_DEADLINE_MS"] = "1500"
        environment["VERIFIER_RETRY_ROUNDS"] = "2"
        environment["VERIFIER_RETRY_BACKOFF_MS"] = "100"
        environment["VERIFIER_RETRY_MAX_BACKOFF_MS"] = "400"
        environment["VERIFIER_BREAKER_WINDOW"] = "10"
        environment["VERIFIER_BREAKER_MIN_CALLS"] = "5"
        environment["VERIFIER_BREAKER_FAILURE_RATIO"] = "0.8"
        environment["VERIFIER_BREAKER_PROBE_MS"] = "200"
        environment["VERIFIER_BREAKER_MAX_PROBE_MS"] = "800"
        environment["VERIFIER_REVOKE_TIMEOUT_MS"] = "300"
        environment["VERIFIER_SHUTDOWN_TIMEOUT_MS"] = "700"
        environment["VERIFIER_COMMIT_INTERVAL_MS"] = "250"
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        let settings = try VerifierSettings.fromEnvironment(environment)
        #expect(settings.topics == TopicNames(receipts: "r", results: "s", retry: "t", deadLetter: "d"))
        #expect(settings.groupId == "g" && settings.limits.maxInFlight == 64 && settings.limits.partitionWindow == 100)
        #expect(settings.metricsListen.port == 0 && settings.roundDeadline == .milliseconds(1500))
        #expect(
            settings.retryPolicy
                == RetryRoundPolicy(
                    maximumRounds: 2, initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(400)))
        #expect(
            settings.breaker
                == AppleCircuitBreaker.Configuration(
                    windowSize: 10, minimumObservations: 5, failureRatio: 0.8, initialProbeInterval: .milliseconds(200),
                    maximumProbeInterval: .milliseconds(800)))
        #expect(settings.revokeTimeout == .milliseconds(300) && settings.shutdownTimeout == .milliseconds(700))
        #expect(settings.kafka["session.timeout.ms"] == "6000")
        #expect(settings.commitInterval == .milliseconds(250))
    }

    @Test(arguments: [
        ("KAFKA_BOOTSTRAP_SERVERS", ""), ("ALLOWED_BUNDLE_IDS", ""), ("VERIFIER_MAX_IN_FLIGHT", "0"),
        ("VERIFIER_METRICS_LISTEN", "nowhere"), ("RETRY_TOPIC", "bad topic"), ("RETRY_TOPIC", "iap.receipts.results"),
        ("VERIFIER_RETRY_ROUNDS", "zero"), ("VERIFIER_BREAKER_FAILURE_RATIO", "1.5"), ("SANDBOX_POLICY", "maybe"),
        ("VERIFIER_RETRY_MAX_BACKOFF_MS", "5"), ("VERIFIER_REVOKE_TIMEOUT_MS", "150001"),
        ("VERIFIER_COMMIT_INTERVAL_MS", "60001"), ("VERIFIER_COMMIT_INTERVAL_MS", "-1"),
    ])
    func invalidSettingsNameTheirVariable(variable: String, value: String) {
        var environment = minimal
        environment[variable] = value
        #expect(throws: ConfigurationError.self) { try VerifierSettings.fromEnvironment(environment) }
        do {
            _ = try VerifierSettings.fromEnvironment(environment)
        } catch {
            #expect(error.variable == variable)
        }
    }

    @Test func autoCommitCannotBeTurnedOffForTheConsumer() throws {
        var environment = minimal
        environment["KAFKA_ENABLE_AUTO_COMMIT"] = "false"
        let settings = try VerifierSettings.fromEnvironment(environment)
        #expect(settings.consumerKafka["enable.auto.commit"] == "true")
        #expect(settings.overriddenConsumerProperties == ["enable.auto.commit=false"])
        #expect(try VerifierSettings.fromEnvironment(minimal).overriddenConsumerProperties.isEmpty)
        #expect(try VerifierSettings.fromEnvironment(minimal).consumerKafka["enable.auto.commit"] == "true")
    }

    @Test func theRevokeTimeoutStaysBelowTheMaxPollInterval() throws {
        var environment = minimal
        environment["KAFKA_MAX_POLL_INTERVAL_MS"] = "8000"
        #expect(try VerifierSettings.fromEnvironment(environment).revokeTimeout == .milliseconds(4000))
        environment["VERIFIER_REVOKE_TIMEOUT_MS"] = "4001"
        #expect {
            try VerifierSettings.fromEnvironment(environment)
        } throws: { error in
            (error as? ConfigurationError)?.variable == "VERIFIER_REVOKE_TIMEOUT_MS"
        }
        environment["VERIFIER_REVOKE_TIMEOUT_MS"] = "4000"
        #expect(try VerifierSettings.fromEnvironment(environment).revokeTimeout == .milliseconds(4000))
        #expect(try VerifierSettings.fromEnvironment(minimal).revokeTimeout == .milliseconds(5000))
    }

    @Test func helpDocumentsEveryVariable() {
        for variable in [
            "KAFKA_BOOTSTRAP_SERVERS", "KAFKA_<PROPERTY>", "RECEIPTS_TOPIC", "RESULTS_TOPIC", "RETRY_TOPIC",
            "DLQ_TOPIC",
            "VERIFIER_GROUP_ID", "VERIFIER_MAX_IN_FLIGHT", "VERIFIER_METRICS_LISTEN", "VERIFIER_PARTITION_WINDOW",
            "VERIFIER_ROUND_DEADLINE_MS", "VERIFIER_RETRY_ROUNDS", "VERIFIER_RETRY_BACKOFF_MS",
            "VERIFIER_RETRY_MAX_BACKOFF_MS", "VERIFIER_BREAKER_WINDOW", "VERIFIER_BREAKER_MIN_CALLS",
            "VERIFIER_BREAKER_FAILURE_RATIO", "VERIFIER_BREAKER_PROBE_MS", "VERIFIER_BREAKER_MAX_PROBE_MS",
            "VERIFIER_REVOKE_TIMEOUT_MS", "VERIFIER_SHUTDOWN_TIMEOUT_MS", "VERIFIER_COMMIT_INTERVAL_MS",
            "APPLE_VERIFY_RECEIPT_URL",
            "APPLE_SANDBOX_VERIFY_RECEIPT_URL", "APPLE_SHARED_SECRET", "APPLE_TIMEOUT_MS", "APPLE_CA_BUNDLE",
            "APPLE_EXCLUDE_OLD_TRANSACTIONS", "APPLE_RETRY_MAX_ATTEMPTS", "APPLE_RETRY_21002_MAX_ATTEMPTS",
            "APPLE_RETRY_BASE_DELAY_MS", "APPLE_RETRY_MAX_DELAY_MS", "APPLE_21002_BURST_WINDOW",
            "APPLE_21002_BURST_MIN_ANSWERS", "APPLE_21002_BURST_SHARE", "APPLE_21002_BURST_MIN_RECEIPTS",
            "ALLOWED_BUNDLE_IDS", "SANDBOX_POLICY", "PRODUCT_CATALOG_FILE", "LOG_LEVEL", "APPLE_REVOCATION_CHECK",
            "APPLE_OCSP_RESPONDER_URL", "APPLE_OCSP_MAX_AGE_SECONDS", "APPLE_OCSP_TIMEOUT_MS",
        ] {
            #expect(VerifierSettings.helpText.contains(variable), "\(variable) is not in --help")
        }
    }

    @Test func revocationChecksDefaultToOCSPAndAreConfigurable() throws {
        let defaults = try VerifierSettings.fromEnvironment(minimal).revocation
        #expect(defaults.policy == .ocsp)
        #expect(defaults.checker.responderURL == nil)
        #expect(defaults.checker.maxAgeSeconds == 3_600)
        #expect(defaults.checker.timeoutMs == 5_000)

        var environment = minimal
        environment["APPLE_REVOCATION_CHECK"] = "off"
        #expect(try VerifierSettings.fromEnvironment(environment).revocation.policy == .off)
        environment["APPLE_REVOCATION_CHECK"] = "OCSP"
        environment["APPLE_OCSP_RESPONDER_URL"] = "http://ocsp-mirror.internal/ocsp"
        environment["APPLE_OCSP_MAX_AGE_SECONDS"] = "600"
        environment["APPLE_OCSP_TIMEOUT_MS"] = "2500"
        let read = try VerifierSettings.fromEnvironment(environment).revocation
        #expect(read.policy == .ocsp)
        #expect(read.checker.responderURL == "http://ocsp-mirror.internal/ocsp")
        #expect(read.checker.maxAgeSeconds == 600)
        #expect(read.checker.timeoutMs == 2_500)
        #expect(read.description.contains("ocsp-mirror.internal"))

        for (variable, value) in [
            ("APPLE_REVOCATION_CHECK", "crl"), ("APPLE_OCSP_RESPONDER_URL", "ocsp.apple.com"),
            ("APPLE_OCSP_MAX_AGE_SECONDS", "10"), ("APPLE_OCSP_TIMEOUT_MS", "0"),
        ] {
            var bad = minimal
            bad[variable] = value
            #expect {
                try VerifierSettings.fromEnvironment(bad)
            } throws: { error in
                (error as? ConfigurationError)?.variable == variable
            }
        }
    }
}
