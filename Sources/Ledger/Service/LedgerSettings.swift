import Kafka
import LedgerRules
import ServiceRuntime
import ServiceSupport

/// Everything `receipt-ledger` reads from its environment, validated. Every variable is described in `helpText`.
public struct LedgerSettings: ServiceSettings {
    public var kafka: KafkaConfiguration
    public var topics: LedgerTopics
    public var databaseURL: String
    public var groupId: String
    public var listen: ListenAddress
    /// Bearer keys accepted by the API (`name:key` or `key`, parsed as the ingest's: `BearerKey`); empty = no
    /// authentication (logged as a warning).
    public var apiKeys: [BearerKey]
    public var ownershipPolicy: OwnershipPolicy
    /// What a Sandbox purchase is worth here (`LEDGER_SANDBOX_POLICY`).
    public var sandboxPolicy: SandboxPolicy
    /// What a refund does with the part of a purchase already spent (`LEDGER_CLAWBACK`).
    public var clawback: ClawbackPolicy
    /// `PRODUCT_CATALOG_FILE` (validated; nil: unset): the item names spends and grants may name, followed as the
    /// file changes.
    public var productCatalogFile: String?
    /// What the ledger may rebind when its database was bound to another cluster or topic (`LEDGER_REBIND`).
    public var rebind: Set<KafkaBinding.Rebind>
    /// `LEDGER_ACCEPT_OFFSET_GAP`: per partition, the stored offset of the gap the operator accepts
    /// (`KafkaBinding.OffsetGap`).
    public var acceptedOffsetGaps: [TopicPartition: Int64]
    /// Most messages applied in one database transaction.
    public var batchSize: Int
    /// Most messages fetched and not yet applied; fetching pauses above it (memory stays bounded).
    public var maxBufferedMessages: Int
    /// How long SIGTERM waits for the batch being applied.
    public var shutdownTimeout: Duration
    /// The refund responder (`LEDGER_CONSUMPTION_*`).
    public var consumption: ConsumptionSettings

    public init(
        kafka: KafkaConfiguration, topics: LedgerTopics, databaseURL: String, groupId: String = "iap-ledger",
        listen: ListenAddress = ListenAddress(host: "0.0.0.0", port: 8081), apiKeys: [BearerKey] = [],
        ownershipPolicy: OwnershipPolicy = .keep, sandboxPolicy: SandboxPolicy = .separate,
        clawback: ClawbackPolicy = .floor, productCatalogFile: String? = nil,
        rebind: Set<KafkaBinding.Rebind> = [], acceptedOffsetGaps: [TopicPartition: Int64] = [:], batchSize: Int = 500,
        maxBufferedMessages: Int = 20_000, shutdownTimeout: Duration = .seconds(30),
        consumption: ConsumptionSettings = ConsumptionSettings()
    ) {
        self.kafka = kafka
        self.topics = topics
        self.databaseURL = databaseURL
        self.groupId = groupId
        self.listen = listen
        self.apiKeys = apiKeys
        self.ownershipPolicy = ownershipPolicy
        self.sandboxPolicy = sandboxPolicy
        self.clawback = clawback
        self.productCatalogFile = productCatalogFile
        self.rebind = rebind
        self.acceptedOffsetGaps = acceptedOffsetGaps
        self.batchSize = batchSize
        self.maxBufferedMessages = maxBufferedMessages
        self.shutdownTimeout = shutdownTimeout
        self.consumption = consumption
    }

    /// - Throws: `ConfigurationError` naming the first variable that is missing or invalid.
    public static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> LedgerSettings {
        let settings = Settings(environment: environment)
        let kafka = KafkaConfiguration.fromEnvironment(environment)
        guard kafka.bootstrapServers != nil else {
            throw ConfigurationError(variable: "KAFKA_BOOTSTRAP_SERVERS", problem: "is required")
        }
        let names = try TopicNames.fromEnvironment(settings, reading: [.results, .events])
        let policyName = try settings.choice(
            "LEDGER_OWNERSHIP_POLICY", from: OwnershipPolicy.allCases.map(\.rawValue), default: "keep")
        let sandboxName = try settings.choice(
            "LEDGER_SANDBOX_POLICY", from: SandboxPolicy.allCases.map(\.rawValue), default: "separate")
        let clawbackName = try settings.choice(
            "LEDGER_CLAWBACK", from: ClawbackPolicy.allCases.map(\.rawValue), default: "floor")
        let catalogFile = settings.string("PRODUCT_CATALOG_FILE")
        if let catalogFile { try WalletItems.check(catalogFile) }
        var rebind: Set<KafkaBinding.Rebind> = []
        for name in settings.list("LEDGER_REBIND") {
            guard let value = KafkaBinding.Rebind(rawValue: name) else {
                throw ConfigurationError(
                    variable: "LEDGER_REBIND",
                    problem: "'\(name)' is not one of \(KafkaBinding.Rebind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            rebind.insert(value)
        }
        var acceptedGaps: [TopicPartition: Int64] = [:]
        for entry in settings.list("LEDGER_ACCEPT_OFFSET_GAP") {
            guard let gap = KafkaBinding.acceptedGap(entry) else {
                throw ConfigurationError(
                    variable: "LEDGER_ACCEPT_OFFSET_GAP",
                    problem: "'\(entry)' is not topic:partition:stored offset, as the ledger's error names the gap")
            }
            guard [names.results, names.events].contains(gap.partition.topic) else {
                throw ConfigurationError(
                    variable: "LEDGER_ACCEPT_OFFSET_GAP",
                    problem: "'\(entry)' names a topic the ledger does not read (\(names.results), \(names.events))")
            }
            guard acceptedGaps.updateValue(gap.stored, forKey: gap.partition) == nil else {
                throw ConfigurationError(
                    variable: "LEDGER_ACCEPT_OFFSET_GAP", problem: "names \(gap.partition) twice")
            }
        }
        let apiKeys = try BearerKey.fromSettings(settings, variable: "LEDGER_API_KEYS")
        return LedgerSettings(
            kafka: kafka, topics: LedgerTopics(results: names.results, events: names.events),
            databaseURL: try settings.required("LEDGER_DATABASE_URL"),
            groupId: settings.string("LEDGER_GROUP_ID", default: "iap-ledger"),
            listen: try settings.listenAddress("LEDGER_LISTEN", default: "0.0.0.0:8081"), apiKeys: apiKeys,
            ownershipPolicy: OwnershipPolicy(rawValue: policyName) ?? .keep,
            sandboxPolicy: SandboxPolicy(rawValue: sandboxName) ?? .separate,
            clawback: ClawbackPolicy(rawValue: clawbackName) ?? .floor, productCatalogFile: catalogFile, rebind: rebind,
            acceptedOffsetGaps: acceptedGaps, batchSize: try settings.int("LEDGER_BATCH_SIZE", default: 500, range: 1...10_000),
            maxBufferedMessages: try settings.int("LEDGER_MAX_BUFFERED_MESSAGES", default: 20_000, range: 1...1_000_000),
            shutdownTimeout: .milliseconds(try settings.int("LEDGER_SHUTDOWN_TIMEOUT_MS", default: 30_000, range: 0...600_000)),
            consumption: try ConsumptionSettings.fromEnvironment(settings))
    }

    public static let helpText: String = """
        receipt-ledger: applies verification results and purchase events to a PostgreSQL ledger exactly once, and
        answers what a user owns (docs/CREDITING.md has the rules).

        Settings (environment):
          LEDGER_DATABASE_URL       required; libpq connection string or postgresql:// URI (tables are created and
                                    migrated by the ledger)
          LEDGER_GROUP_ID           consumer group (default iap-ledger)
          LEDGER_LISTEN             HTTP address of the API, /healthz, /readyz, /metrics (default 0.0.0.0:8081)
          LEDGER_API_KEYS           comma-separated bearer keys for the API, name:key or key (as INGEST_API_KEYS:
                                    a key containing ':' needs a name); empty = no auth
          LEDGER_OWNERSHIP_POLICY   keep (a purchase stays with its first owner, default) or transfer (an
                                    entitlement moves to the latest verified claimant; item amounts never move)
          LEDGER_SANDBOX_POLICY     separate (Sandbox purchases - App Review, TestFlight - go to balances and
                                    entitlements kept apart, reported under "sandbox"; default), credit (mixed
                                    with production: a sandbox-only deployment) or ignore (recorded, nothing granted)
          LEDGER_CLAWBACK           what a refund takes when the user spent the purchase's currency: floor (what the
                                    user's purchased currency still holds, never below zero; the rest is recorded as
                                    unrecovered; default) or debt (the balance goes negative, spends are refused
                                    until later credits and grants repay it)
          PRODUCT_CATALOG_FILE      the verifier's product catalog: spends and grants may name only the items its
                                    credits give (followed as the file changes); unset: any item name
          LEDGER_REBIND             empty (default), or cluster and/or topics: rebind a database bound to another
                                    Kafka cluster, or apply again from their beginning the partitions of a topic
                                    created again (the ledger refuses to run against either otherwise)
          LEDGER_ACCEPT_OFFSET_GAP  empty (default), or topic:partition:stored offset entries, comma-separated: go on
                                    past a gap the ledger reported (a stored offset below the partition's first
                                    retained offset: messages deleted before they were applied); such a partition
                                    is not consumed, and the ledger not ready, until its gap is named
          LEDGER_BATCH_SIZE         most messages per database transaction (default 500)
          LEDGER_MAX_BUFFERED_MESSAGES  most messages fetched and not yet applied (default 20000)
          LEDGER_SHUTDOWN_TIMEOUT_MS    how long SIGTERM waits for the batch being applied, then for the
                                        refund responder, in all (default 30000)
        """ + "\n" + ConsumptionSettings.helpText + "\n" + """
          KAFKA_BOOTSTRAP_SERVERS   required; KAFKA_<PROPERTY> sets any librdkafka property
          RESULTS_TOPIC             default iap.receipts.results
          EVENTS_TOPIC              default iap.purchase.events
          LOG_LEVEL                 debug, info (default), warning, error
        """
}
