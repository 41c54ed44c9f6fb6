import Kafka
import ServiceSupport
import Testing

@Suite("KafkaConfiguration")
struct KafkaConfigurationTests {
    @Test("KAFKA_<PROPERTY> variables map to lower-case dotted properties; other variables are ignored")
    func environmentMapping() {
        let configuration = KafkaConfiguration.fromEnvironment([
            "KAFKA_BOOTSTRAP_SERVERS": "a:9092,b:9092",
            "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "KAFKA_SASL_MECHANISM": " PLAIN ",
            "KAFKA_LINGER_MS": "",
            "RESULTS_TOPIC": "x",
            "KAFKA_": "ignored",
            "KAFKAESQUE": "ignored",
        ])
        #expect(
            configuration.properties == [
                "bootstrap.servers": "a:9092,b:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
            ])
        #expect(configuration.bootstrapServers == "a:9092,b:9092")
        #expect(KafkaConfiguration.propertyName(forVariable: "KAFKA_QUEUE_BUFFERING_MAX_MS") == "queue.buffering.max.ms")
        #expect(KafkaConfiguration.propertyName(forVariable: "APPLE_TIMEOUT_MS") == nil)
    }

    /// What Kubernetes injects for Services named `kafka`, `kafka-bootstrap` (port `tcp-clients`) and
    /// `kafka-kafka-bootstrap` (Strimzi's name for a cluster called `kafka`), against real properties and typos.
    static let serviceLinkCases: [(variable: String, isServiceLink: Bool)] = [
        ("KAFKA_SERVICE_HOST", true),
        ("KAFKA_SERVICE_PORT", true),
        ("KAFKA_SERVICE_PORT_TCP_CLIENTS", true),
        ("KAFKA_PORT", true),
        ("KAFKA_PORT_9092_TCP", true),
        ("KAFKA_PORT_9092_TCP_PROTO", true),
        ("KAFKA_PORT_9092_TCP_PORT", true),
        ("KAFKA_PORT_9092_TCP_ADDR", true),
        ("KAFKA_PORT_9094_UDP_ADDR", true),
        ("KAFKA_BOOTSTRAP_SERVICE_HOST", true),
        ("KAFKA_BOOTSTRAP_PORT_9093_TCP_ADDR", true),
        ("KAFKA_KAFKA_BOOTSTRAP_SERVICE_PORT_TCP_REPLICATION", true),
        ("KAFKA_KAFKA_BOOTSTRAP_PORT", true),
        // librdkafka properties and near misses stay properties (and a typo is refused when the client is made).
        ("KAFKA_BOOTSTRAP_SERVERS", false),
        ("KAFKA_SASL_KERBEROS_SERVICE_NAME", false),
        ("KAFKA_SERVICE", false),
        ("KAFKA_SERVICE_HOSTS", false),
        ("KAFKA_SERVICE_HOST_X", false),
        ("KAFKA_PORT_9092", false),
        ("KAFKA_PORT_9092_HTTP", false),
        ("KAFKA_PORT_99999_TCP", false),
        ("KAFKA_PORT_0_TCP", false),
        ("KAFKA_PORT_9092_TCP_HOST", false),
        ("KAFKA_PORT_9092_TCP_ADDR_X", false),
        ("KAFKA__PORT", false),
        ("KAFKA_service_host", false),
        ("KAFKA_", false),
        ("KAFKAS_SERVICE_HOST", false),
    ]

    @Test("Kubernetes service-link variables are recognised by shape", arguments: serviceLinkCases)
    func serviceLinkShapes(variable: String, isServiceLink: Bool) {
        #expect(KubernetesServiceLinks.isServiceLink(variable) == isServiceLink)
    }

    @Test("service-link variables are skipped, listed sorted and logged once; a typo beside them is still refused")
    func serviceLinksIgnored() throws {
        let links = [
            "KAFKA_SERVICE_HOST": "10.0.0.11", "KAFKA_SERVICE_PORT": "9092", "KAFKA_PORT": "tcp://10.0.0.11:9092",
            "KAFKA_PORT_9092_TCP": "tcp://10.0.0.11:9092", "KAFKA_PORT_9092_TCP_PROTO": "tcp",
            "KAFKA_PORT_9092_TCP_PORT": "9092", "KAFKA_PORT_9092_TCP_ADDR": "10.0.0.11",
        ]
        let configuration = KafkaConfiguration.fromEnvironment(
            links.merging(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", "KAFKA_LINGER_MS": "3"]) { $1 })
        #expect(configuration.properties == ["bootstrap.servers": "127.0.0.1:1", "linger.ms": "3"])
        #expect(configuration.ignoredServiceLinkVariables == links.keys.sorted())
        let producer = try KafkaProducer(configuration: configuration, logger: quietLogger)
        producer.close(timeout: .milliseconds(100))

        let lines = CollectedLogLines()
        configuration.logIgnoredServiceLinks(Logger(label: "test", threshold: .debug, sink: lines))
        let logged = lines.all
        #expect(logged.count == 1)
        #expect(logged.first?.contains("\"level\":\"warning\"") == true)
        #expect(logged.first?.contains(links.keys.sorted().joined(separator: ",")) == true)
        #expect(logged.first?.contains("10.0.0.11") == false)
        KafkaConfiguration.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "x:1"])
            .logIgnoredServiceLinks(Logger(label: "test", threshold: .debug, sink: lines))
        #expect(lines.all.count == 1)

        var typo = KafkaConfiguration.fromEnvironment(links.merging(["KAFKA_LINGER_MSS": "3"]) { $1 })
        typo.bootstrapServers = "127.0.0.1:1"
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: typo, logger: quietLogger)
        }
        #expect(error.message.contains("KAFKA_LINGER_MSS"))
    }

    @Test("an unknown property fails at client creation, naming the property and its variable")
    func unknownProperty() throws {
        var configuration = KafkaConfiguration.fromEnvironment(["KAFKA_NOT_A_PROPERTY": "1"])
        configuration.bootstrapServers = "127.0.0.1:1"
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: configuration, logger: quietLogger)
        }
        #expect(error.code == KafkaErrorCode.invalidArgument)
        #expect(error.message.contains("not.a.property"))
        #expect(error.message.contains("KAFKA_NOT_A_PROPERTY"))
        #expect(!error.isRetriable)
    }

    @Test("an invalid value fails at client creation with librdkafka's reason")
    func invalidValue() throws {
        let configuration = KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "linger.ms": "soon"])
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: configuration, logger: quietLogger)
        }
        #expect(error.message.contains("linger.ms"))
        #expect(error.message.contains("soon"))
    }

    @Test("the consumer refuses an invalid property too")
    func consumerInvalidProperty() throws {
        let configuration = KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "session.timeout.ms": "-5"])
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaConsumer(
                configuration: configuration, groupId: "g", topics: ["t"], delegate: RecordingDelegate(),
                logger: quietLogger)
        }
        #expect(error.message.contains("session.timeout.ms"))
    }

    @Test("values of secret properties are not echoed in errors")
    func secretsNotEchoed() throws {
        let configuration = KafkaConfiguration([
            "bootstrap.servers": "127.0.0.1:1", "ssl.key.password.nonexistent": "hunter2",
        ])
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: configuration, logger: quietLogger)
        }
        #expect(!error.message.contains("hunter2"))
        #expect(error.message.contains("ssl.key.password.nonexistent"))
    }

    @Test("conflicting settings detected by rd_kafka_new are reported")
    func conflictingSettings() throws {
        let configuration = KafkaConfiguration([
            "bootstrap.servers": "127.0.0.1:1", "enable.idempotence": "true", "acks": "1",
        ])
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: configuration, logger: quietLogger)
        }
        #expect(error.message.contains("acks") || error.message.contains("idempotence"))
    }

    @Test("a weaker acks without an idempotence setting gives a non-idempotent producer instead of an error")
    func weakerAcks() throws {
        // The producer does not expose its effective librdkafka configuration. What shows idempotence is off:
        // librdkafka refuses idempotence with acks=1 when the client is made, and idempotence is the default here,
        // so the same settings with idempotence left on are refused while these are accepted.
        #expect(KafkaProducer.defaultProperties["enable.idempotence"] == "true")
        #expect(throws: KafkaError.self) {
            _ = try KafkaProducer(
                configuration: KafkaConfiguration([
                    "bootstrap.servers": "127.0.0.1:1", "acks": "1", "enable.idempotence": "true",
                ]),
                logger: quietLogger)
        }
        let producer = try KafkaProducer(
            configuration: KafkaConfiguration(["bootstrap.servers": "127.0.0.1:1", "acks": "1"]), logger: quietLogger)
        producer.close(timeout: .milliseconds(100))
    }
}

@Suite("KafkaError")
struct KafkaErrorTests {
    @Test("queue full is distinct and retriable; named codes match librdkafka")
    func queueFull() {
        let error = KafkaError(code: KafkaErrorCode.queueFull, message: "full")
        #expect(error.isQueueFull)
        #expect(error.isRetriable)
        #expect(!error.isFatal)
        #expect(KafkaErrorCode.queueFull.rawValue == -184)
        #expect(KafkaError.describe(code: KafkaErrorCode.queueFull).lowercased().contains("queue full"))
    }

    @Test("fatal errors are never retriable")
    func fatal() {
        let error = KafkaError(code: KafkaErrorCode.timedOut, message: "x", isFatal: true)
        #expect(error.isFatal)
        #expect(!error.isRetriable)
        #expect(KafkaError(code: KafkaErrorCode.fatal, message: "x").isFatal)
        #expect(!KafkaError(code: KafkaErrorCode.messageSizeTooLarge, message: "x").isRetriable)
    }
}

/// Log lines written to it, for tests.
final class CollectedLogLines: LogSink {
    private let lines = Locked<[String]>([])

    func write(line: String) { lines.withLock { $0.append(line) } }

    var all: [String] { lines.withLock { $0 } }
}
