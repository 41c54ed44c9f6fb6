import ServiceSupport
import Testing

@Suite struct TopicNamesTests {
    @Test func theDefaultsAreTheContractsNames() {
        let names = TopicNames()
        #expect(names.receipts == "iap.receipts.submitted")
        #expect(names.results == "iap.receipts.results")
        #expect(names.retry == "iap.receipts.retry")
        #expect(names.deadLetter == "iap.receipts.dlq")
        #expect(names.notifications == "iap.notifications.submitted")
        #expect(names.events == "iap.purchase.events")
        #expect(ServiceTopic.allCases.map(\.variable) == [
            "RECEIPTS_TOPIC", "RESULTS_TOPIC", "RETRY_TOPIC", "DLQ_TOPIC", "NOTIFICATIONS_TOPIC", "EVENTS_TOPIC",
        ])
        for topic in ServiceTopic.allCases { #expect(names[topic] == topic.defaultName) }
    }

    @Test func onlyTheTopicsAToolReadsComeFromTheEnvironment() throws {
        let settings = Settings(environment: ["RESULTS_TOPIC": "my.results", "DLQ_TOPIC": "not valid!"])
        let names = try TopicNames.fromEnvironment(settings, reading: [.results, .receipts])
        #expect(names.results == "my.results")
        #expect(names.receipts == "iap.receipts.submitted")
        #expect(names.deadLetter == "iap.receipts.dlq", "not read, so neither taken nor validated")
    }

    @Test func anInvalidNameIsRefusedNamingItsVariable() {
        let settings = Settings(environment: ["DLQ_TOPIC": "dead letters"])
        #expect(
            throws: ConfigurationError(
                variable: "DLQ_TOPIC", problem: "'dead letters' is not a Kafka topic name (letters, digits, . _ -)")
        ) { try TopicNames.fromEnvironment(settings) }
    }

    @Test func kafkasTopicNameRulesAreChecked() {
        for valid in ["a", "iap.receipts.submitted", "A-b_c.9", String(repeating: "x", count: 249)] {
            #expect(TopicNames.isValidName(valid), "\(valid)")
        }
        for invalid in ["", ".", "..", "a b", "a/b", "ü", String(repeating: "x", count: 250)] {
            #expect(!TopicNames.isValidName(invalid), "\(invalid)")
        }
    }

    @Test func aNameCanBeSetThroughItsTopic() {
        var names = TopicNames()
        names[.events] = "events.v2"
        #expect(names.events == "events.v2" && names[.events] == "events.v2")
    }
}
