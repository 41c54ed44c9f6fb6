@testable import Catalog
import Foundation
import ReceiptModel
import ServiceSupport
import TestSupport
import Testing

@testable import AppStore

/// `PRODUCT_CATALOG_FILE`: the format, and following the file as it changes.
@Suite struct ProductCatalogTests {
    static let contractExample = """
        {"products": {"com.example.gems100": {"type": "consumable", "credit": {"item": "gems", "amount": 100}},
                      "com.example.pro.monthly": {"type": "auto_renewable", "credit": {"entitlement": "pro"}}}}
        """

    @Test func parsesTheContractsExampleAndKeepsCreditUnchanged() throws {
        let catalog = try ProductCatalog.parse(Array(Self.contractExample.utf8))
        #expect(catalog.count == 2)
        #expect(
            catalog["com.example.gems100"]
                == .init(type: .consumable, credit: .object(["item": .string("gems"), "amount": .integer(100)])))
        #expect(catalog["com.example.pro.monthly"]?.type == .autoRenewable)
        #expect(catalog["com.example.unknown"] == nil)
    }

    @Test func ignoresFieldsItDoesNotKnowAndAcceptsEveryProductType() throws {
        let catalog = try ProductCatalog.parse(
            Array(
                #"""
                {"version": 3, "products": {
                  "a": {"type": "consumable", "credit": {}, "note": "x"},
                  "b": {"type": "non_consumable", "credit": {"n": [1, 2.5, null, true]}},
                  "c": {"type": "auto_renewable", "credit": {"e": "pro"}},
                  "d": {"type": "non_renewing", "credit": {"days": 30}}}}
                """#.utf8))
        #expect(catalog.products.mapValues(\.type) == [
            "a": .consumable, "b": .nonConsumable, "c": .autoRenewable, "d": .nonRenewing,
        ])
        #expect(
            catalog["b"]?.credit
                == .object(["n": .array([.integer(1), .number(2.5), .null, .bool(true)])]))
    }

    @Test(arguments: [
        ("{", "not valid JSON"),
        ("[]", "not a JSON object"),
        (#"{"items": {}}"#, "no \"products\""),
        (#"{"products": []}"#, "\"products\" is not an object"),
        (#"{"products": {"a": 1}}"#, "product 'a' is not an object"),
        (#"{"products": {"a": {"credit": {}}}}"#, "product 'a' has no \"type\""),
        (#"{"products": {"a": {"type": "gift", "credit": {}}}}"#, "type 'gift', not one of consumable"),
        (#"{"products": {"a": {"type": "consumable"}}}"#, "product 'a' has no \"credit\""),
        (#"{"products": {"a": {"type": "consumable", "credit": null}}}"#, "product 'a' has no \"credit\""),
        (#"{"products": {"a": {"type": "consumable", "credit": 100}}}"#, "\"credit\" is not an object"),
        (#"{"products": {"": {"type": "consumable", "credit": {}}}}"#, "a product id is empty"),
        (#"{"products": {"a": {"type": "consumable", "credit": {"item": 1, "amount": 5}}}}"#, "\"item\" is not a string"),
        (#"{"products": {"a": {"type": "consumable", "credit": {"item": "g", "amount": "5"}}}}"#,
         "\"amount\" is not a whole number"),
        (#"{"products": {"a": {"type": "consumable", "credit": {"item": "g", "amount": 2.5}}}}"#,
         "\"amount\" is not a whole number"),
        (#"{"products": {"a": {"type": "auto_renewable", "credit": {"entitlement": null}}}}"#,
         "\"entitlement\" is not a string"),
    ])
    func refusesAnInvalidCatalogSayingWhy(text: String, problem: String) {
        #expect {
            try ProductCatalog.parse(Array(text.utf8))
        } throws: { error in
            (error as? ProductCatalogError)?.problem.contains(problem) == true
        }
    }

    // MARK: Following the file

    final class TemporaryFile: Sendable {
        let directory: URL
        let path: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("catalog-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("catalog.json").path
        }

        /// Replaces the file atomically (a new inode, as `mv` or a ConfigMap update does).
        func replace(_ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        }

        /// Rewrites the file in place (same inode, as an editor may).
        func overwrite(_ text: String) throws {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data(text.utf8))
            try handle.close()
        }

        deinit {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func catalog(_ products: [String: String]) -> String {
        let entries = products.sorted { $0.key < $1.key }.map {
            #""\#($0.key)": {"type": "consumable", "credit": {"item": "\#($0.value)"}}"#
        }
        return #"{"products": {"# + entries.joined(separator: ", ") + "}}"
    }

    @Test func hostileFilesAreCleanErrors() {
        // A million '[', a 10 MB number as a credit, invalid UTF-8, a raw NUL byte: each refused, in linear time.
        let entry = Array(#"{"products":{"p":{"type":"consumable","credit":"#.utf8)
        let files: [(String, [UInt8])] = [
            ("deep", [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)),
            ("huge number", entry + [UInt8](repeating: 0x37, count: 10_000_000) + Array("}}}".utf8)),
            ("invalid UTF-8", entry + Array(#"{"item":""#.utf8) + [0xFF, 0xFE] + Array(#""}}}}"#.utf8)),
            ("raw NUL", entry + Array(#"{"item":"a\#u{0}b"}}}}"#.utf8)),
        ]
        for (name, bytes) in files {
            let started = ContinuousClock.now
            #expect(throws: ProductCatalogError.self, "\(name)") { try ProductCatalog.parse(bytes) }
            #expect(ContinuousClock.now - started < .seconds(10), "\(name)")
        }
    }

    @Test func aChangedFileIsReReadAndAnUnchangedOneIsNot() throws {
        let file = try TemporaryFile()
        try file.replace(Self.catalog(["gems_100": "gems"]))
        let registry = MetricsRegistry()
        let catalogFile = try ProductCatalogFile(path: file.path, logger: .quiet, metrics: registry)
        #expect(catalogFile.currentCatalog["gems_100"]?.credit == .object(["item": .string("gems")]))
        #expect(catalogFile.refreshIfChanged() == .unchanged)

        try file.replace(Self.catalog(["gems_100": "gems", "vip": "vip"]))
        #expect(catalogFile.refreshIfChanged() == .reloaded(products: 2))
        #expect(catalogFile.currentCatalog["vip"] != nil)
        #expect(catalogFile.refreshIfChanged() == .unchanged)

        try file.overwrite(Self.catalog(["coins": "coins-in-place"]))
        #expect(catalogFile.refreshIfChanged() == .reloaded(products: 1))
        #expect(catalogFile.currentCatalog.products.keys.sorted() == ["coins"])
        #expect(registry.render().contains(#"appstore_product_catalog_reloads_total{result="loaded"} 3"#))
        #expect(registry.render().contains("appstore_product_catalog_products 1"))
    }

    @Test func anInvalidFileKeepsThePreviousCatalogAndIsCountedOncePerChange() throws {
        let file = try TemporaryFile()
        try file.replace(Self.catalog(["gems_100": "gems"]))
        let registry = MetricsRegistry()
        let lines = CapturedLines()
        let catalogFile = try ProductCatalogFile(
            path: file.path, logger: Logger(label: "t", sink: lines), metrics: registry)
        let before = catalogFile.currentCatalog

        try file.replace(#"{"products": {"gems_100": {"type": "gift", "credit": {}}}}"#)
        guard case .keptPrevious(let error) = catalogFile.refreshIfChanged() else {
            Issue.record("an invalid file was not refused")
            return
        }
        #expect(error.problem.contains("type 'gift'"))
        #expect(catalogFile.currentCatalog == before)
        #expect(catalogFile.refreshIfChanged() == .unchanged, "the same bad file is reported once")
        #expect(registry.render().contains(#"appstore_product_catalog_reloads_total{result="invalid"} 1"#))
        #expect(lines.lines.contains { $0.contains("keeping the previous catalog") && $0.contains("type 'gift'") })

        try FileManager.default.removeItem(atPath: file.path)
        guard case .keptPrevious(let missing) = catalogFile.refreshIfChanged() else {
            Issue.record("a missing file was not refused")
            return
        }
        #expect(missing.problem.contains("cannot be read"))
        #expect(catalogFile.currentCatalog == before)

        try file.replace(Self.catalog(["fixed": "x"]))
        #expect(catalogFile.refreshIfChanged() == .reloaded(products: 1))
        #expect(registry.render().contains(#"appstore_product_catalog_reloads_total{result="invalid"} 2"#))
    }

    @Test func theFirstReadFailsWithAConfigurationErrorNamingTheVariable() throws {
        let file = try TemporaryFile()
        #expect {
            try ProductCatalogFile(path: file.path, logger: .quiet)
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.variable == "PRODUCT_CATALOG_FILE" && error?.problem.contains("cannot be read") == true
        }
        try file.replace(#"{"products": {"a": {"type": "consumable"}}}"#)
        #expect {
            try ProductCatalogFile(path: file.path, logger: .quiet)
        } throws: { error in
            (error as? ConfigurationError)?.problem.contains("has no \"credit\"") == true
        }
    }

    @Test func theWatcherPicksUpAChangeWithinItsInterval() async throws {
        let file = try TemporaryFile()
        try file.replace(Self.catalog(["a": "a"]))
        let catalogFile = try ProductCatalogFile(path: file.path, logger: .quiet)
        catalogFile.startWatching(interval: .milliseconds(50))
        defer { catalogFile.stopWatching() }
        try file.replace(Self.catalog(["a": "a", "b": "b"]))
        #expect(
            await eventually(interval: .milliseconds(25)) { catalogFile.currentCatalog["b"] != nil },
            "the watcher did not reload the changed file")
    }
}
