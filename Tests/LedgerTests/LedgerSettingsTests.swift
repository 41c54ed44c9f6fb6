import Foundation
import Kafka
import Ledger
import LedgerRules
import ServiceRuntime
import ServiceSupport
import Testing

@Suite struct LedgerSettingsTests {
    static let minimal = ["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "LEDGER_DATABASE_URL": "dbname=ledger"]

    @Test func theContractsDefaults() throws {
        let settings = try LedgerSettings.fromEnvironment(Self.minimal)
        #expect(settings.groupId == "iap-ledger")
        #expect(settings.listen == ListenAddress(host: "0.0.0.0", port: 8081))
        #expect(settings.apiKeys.isEmpty)
        #expect(settings.ownershipPolicy == .keep)
        #expect(settings.sandboxPolicy == .separate, "sandbox money is kept apart unless told otherwise")
        #expect(settings.rebind.isEmpty)
        #expect(settings.clawback == .floor, "a refund never takes the balance below zero unless told otherwise")
        #expect(settings.productCatalogFile == nil)
        #expect(settings.topics == LedgerTopics(results: "iap.receipts.results", events: "iap.purchase.events"))
        #expect(settings.databaseURL == "dbname=ledger")
    }

    @Test func everySettingIsRead() throws {
        let settings = try LedgerSettings.fromEnvironment(
            Self.minimal.merging([
                "LEDGER_GROUP_ID": "g", "LEDGER_LISTEN": "127.0.0.1:9000", "LEDGER_API_KEYS": "ops:k1, k2",
                "LEDGER_OWNERSHIP_POLICY": "TRANSFER", "RESULTS_TOPIC": "r", "EVENTS_TOPIC": "e",
                "LEDGER_BATCH_SIZE": "50", "LEDGER_SANDBOX_POLICY": "ignore", "LEDGER_REBIND": "topics, cluster",
                "LEDGER_CLAWBACK": "debt", "PRODUCT_CATALOG_FILE": Self.catalogFile(#"{"products": {}}"#),
                "LEDGER_ACCEPT_OFFSET_GAP": "r:2:1200, e:0:0",
            ]) { $1 })
        #expect(
            settings.acceptedOffsetGaps == [
                TopicPartition(topic: "r", partition: 2): 1_200, TopicPartition(topic: "e", partition: 0): 0,
            ])
        #expect(settings.clawback == .debt)
        #expect(settings.productCatalogFile?.hasSuffix("catalog.json") == true)
        #expect(settings.sandboxPolicy == .ignore)
        #expect(settings.rebind == [.topics, .cluster])
        #expect(settings.groupId == "g")
        #expect(settings.listen.port == 9000)
        #expect(settings.apiKeys == [BearerKey(name: "ops", key: "k1"), BearerKey(key: "k2")])
        #expect(settings.ownershipPolicy == .transfer)
        #expect(settings.topics == LedgerTopics(results: "r", events: "e"))
        #expect(settings.batchSize == 50)
    }

    /// A catalog file with `text`, in a directory of its own.
    static func catalogFile(_ text: String) -> String {
        let directory = NSTemporaryDirectory() + "ledger-settings-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/catalog.json"
        try? text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func missingOrInvalidSettingsNameTheirVariable() {
        func variable(_ environment: [String: String]) -> String? {
            do {
                _ = try LedgerSettings.fromEnvironment(environment)
                return nil
            } catch {
                return error.variable
            }
        }
        #expect(variable(["LEDGER_DATABASE_URL": "x"]) == "KAFKA_BOOTSTRAP_SERVERS")
        #expect(variable(["KAFKA_BOOTSTRAP_SERVERS": "k"]) == "LEDGER_DATABASE_URL")
        #expect(variable(Self.minimal.merging(["LEDGER_OWNERSHIP_POLICY": "share"]) { $1 }) == "LEDGER_OWNERSHIP_POLICY")
        #expect(variable(Self.minimal.merging(["LEDGER_BATCH_SIZE": "0"]) { $1 }) == "LEDGER_BATCH_SIZE")
        #expect(variable(Self.minimal.merging(["LEDGER_SANDBOX_POLICY": "mix"]) { $1 }) == "LEDGER_SANDBOX_POLICY")
        #expect(variable(Self.minimal.merging(["LEDGER_REBIND": "everything"]) { $1 }) == "LEDGER_REBIND")
        #expect(variable(Self.minimal.merging(["LEDGER_CLAWBACK": "clamp"]) { $1 }) == "LEDGER_CLAWBACK")
        // A gap is named exactly (its partition and stored offset), of a topic the ledger reads, once.
        for gaps in [
            "iap.receipts.results:2", "iap.receipts.results:2:1200:3", "iap.receipts.results:-1:5",
            "iap.receipts.results:two:5", "iap.receipts.results:2:", "other.topic:0:5", ":0:5",
            "iap.receipts.results:2:5,iap.receipts.results:2:6",
        ] {
            #expect(
                variable(Self.minimal.merging(["LEDGER_ACCEPT_OFFSET_GAP": gaps]) { $1 }) == "LEDGER_ACCEPT_OFFSET_GAP",
                "\(gaps)")
        }
        #expect(variable(Self.minimal.merging(["PRODUCT_CATALOG_FILE": "/nonexistent/catalog.json"]) { $1 }) == "PRODUCT_CATALOG_FILE")
        #expect(variable(Self.minimal.merging(["PRODUCT_CATALOG_FILE": Self.catalogFile("{")]) { $1 }) == "PRODUCT_CATALOG_FILE")
        #expect(variable(Self.minimal.merging(["RESULTS_TOPIC": "bad topic"]) { $1 }) == "RESULTS_TOPIC")
        #expect(variable(Self.minimal.merging(["LEDGER_LISTEN": "nowhere"]) { $1 }) == "LEDGER_LISTEN")
        // The ingest's syntax (one `BearerKey`): a key containing ':' needs a name, it is never cut at the colon.
        #expect(variable(Self.minimal.merging(["LEDGER_API_KEYS": "s3cr3t/+=:tail"]) { $1 }) == "LEDGER_API_KEYS")
    }
}

extension LedgerSettingsTests {
    @Test func aNamedKeyKeepsTheColonsOfItsKey() throws {
        let settings = try LedgerSettings.fromEnvironment(
            Self.minimal.merging(["LEDGER_API_KEYS": "ops:a:b:c"]) { $1 })
        #expect(settings.apiKeys == [BearerKey(name: "ops", key: "a:b:c")])
    }
}

extension LedgerSettingsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The refund policies the project ships (the Kubernetes ConfigMap's and `make dev`'s) load through the ledger's
    /// own settings, as the ledger reads them at start: a policy the ledger would refuse never reaches a cluster.
    @Test func theShippedRefundPoliciesAreValid() throws {
        let configMap = try String(
            contentsOf: Self.root.appendingPathComponent("docker/k8s/components/refund-responder/refund-policy.yaml"), encoding: .utf8)
        let shipped = [
            "docker/k8s/components/refund-responder/refund-policy.yaml": try Self.blockScalar("refund-policy.json", in: configMap),
            "scripts/dev-refund-policy.json": try String(
                contentsOf: Self.root.appendingPathComponent("scripts/dev-refund-policy.json"), encoding: .utf8),
        ]
        let directory = NSTemporaryDirectory() + "shipped-policies-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (origin, text) in shipped {
            let path = directory + "/" + (origin as NSString).lastPathComponent + ".json"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let settings = try LedgerSettings.fromEnvironment(
                Self.minimal.merging(["LEDGER_CONSUMPTION_POLICY_FILE": path]) { $1 })
            #expect(!settings.consumption.policy.rules.isEmpty, "\(origin) has no rules")
        }
        // And the check can fail: a misspelt condition is refused with the variable named.
        let misspelt = directory + "/misspelt.json"
        try #"{"rules": [{"when": {"deliverd": false}, "preference": "GRANT_FULL"}]}"#
            .write(toFile: misspelt, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) {
            try LedgerSettings.fromEnvironment(Self.minimal.merging(["LEDGER_CONSUMPTION_POLICY_FILE": misspelt]) { $1 })
        }
        // And a rule that can give a preference Apple refuses (the dev policy before round 5) is a settings error.
        let refused = directory + "/refused.json"
        try #"{"rules": [{"when": {"delivered": true, "consumed_at_most_percent": 10}, "preference": "GRANT_PRORATED"}]}"#
            .write(toFile: refused, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) {
            try LedgerSettings.fromEnvironment(Self.minimal.merging(["LEDGER_CONSUMPTION_POLICY_FILE": refused]) { $1 })
        }
    }

    /// The text of YAML block scalar `key: |` (its lines, de-indented), as Kubernetes mounts it.
    static func blockScalar(_ key: String, in yaml: String) throws -> String {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "\(key): |" })
        let body = lines[(start + 1)...].prefix { $0.trimmingCharacters(in: .whitespaces).isEmpty || $0.hasPrefix("    ") }
        return body.map { String($0.dropFirst(min(4, $0.count))) }.joined(separator: "\n")
    }
}
