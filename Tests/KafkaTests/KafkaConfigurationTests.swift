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

    @Test("an unknown property fails at client creation, naming the property and its variable")
    func unknownProperty() throws {
        var configuration = KafkaConfiguration.fromEnvironment(["KAFKA_NOT_A_PROPERTY": "1"])
        configuration.bootstrapServers = "127.0.0.1:1"
        let error = try #require(throws: KafkaError.self) {
            _ = try KafkaProducer(configuration: configuration, logger: quietLogger)
        }
        #expect(error.code == KafkaError.invalidArgument)
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
        let error = KafkaError(code: KafkaError.queueFull, message: "full")
        #expect(error.isQueueFull)
        #expect(error.isRetriable)
        #expect(!error.isFatal)
        #expect(KafkaError.queueFull == -184)
        #expect(KafkaError.describe(code: KafkaError.queueFull).lowercased().contains("queue full"))
    }

    @Test("fatal errors are never retriable")
    func fatal() {
        let error = KafkaError(code: KafkaError.timedOut, message: "x", isFatal: true)
        #expect(error.isFatal)
        #expect(!error.isRetriable)
        #expect(KafkaError(code: KafkaError.fatal, message: "x").isFatal)
        #expect(!KafkaError(code: KafkaError.messageSizeTooLarge, message: "x").isRetriable)
    }
}
