/// The names of the contract's six topics, with the contract's defaults and one validation, shared by the services
/// and the tools (ingest, verifier, replay, backfill, tail).
public struct TopicNames: Sendable, Equatable {
    public var receipts: String
    public var results: String
    public var retry: String
    public var deadLetter: String
    /// App Store Server Notifications V2 as Apple posted them.
    public var notifications: String
    /// Purchase events made from verified notifications.
    public var events: String

    /// Every name not given is the contract's default.
    public init(
        receipts: String = ServiceTopic.receipts.defaultName, results: String = ServiceTopic.results.defaultName,
        retry: String = ServiceTopic.retry.defaultName, deadLetter: String = ServiceTopic.deadLetter.defaultName,
        notifications: String = ServiceTopic.notifications.defaultName,
        events: String = ServiceTopic.events.defaultName
    ) {
        self.receipts = receipts
        self.results = results
        self.retry = retry
        self.deadLetter = deadLetter
        self.notifications = notifications
        self.events = events
    }

    /// The name of `topic`.
    public subscript(topic: ServiceTopic) -> String {
        get {
            switch topic {
            case .receipts: receipts
            case .results: results
            case .retry: retry
            case .deadLetter: deadLetter
            case .notifications: notifications
            case .events: events
            }
        }
        set {
            switch topic {
            case .receipts: receipts = newValue
            case .results: results = newValue
            case .retry: retry = newValue
            case .deadLetter: deadLetter = newValue
            case .notifications: notifications = newValue
            case .events: events = newValue
            }
        }
    }

    /// Reads the names of `topics` from their variables (the others keep their defaults) and validates each.
    /// - Throws: `ConfigurationError` naming the first variable whose value is not a Kafka topic name.
    public static func fromEnvironment(
        _ settings: Settings, reading topics: [ServiceTopic] = ServiceTopic.allCases
    ) throws(ConfigurationError) -> TopicNames {
        var names = TopicNames()
        for topic in topics {
            let name = settings.string(topic.variable, default: topic.defaultName)
            guard isValidName(name) else {
                throw ConfigurationError(
                    variable: topic.variable, problem: "'\(name)' is not a Kafka topic name (letters, digits, . _ -)")
            }
            names[topic] = name
        }
        return names
    }

    /// Whether Kafka accepts `name` as a topic name: 1 to 249 of `a-z A-Z 0-9 . _ -`, and not `.` or `..`.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 249 && name != "." && name != ".."
            && name.unicodeScalars.allSatisfy { scalar in
                ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                    || scalar == "." || scalar == "_" || scalar == "-"
            }
    }
}
