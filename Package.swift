// swift-tools-version:6.0
import PackageDescription

// Layout: C system libraries at the edge (C*), one thin Swift layer per library (RDKafka, HTTPServer, HTTPClient,
// Postgres, Crypto), domain modules above them, the services and tools as libraries that are leaves (no target imports
// a service or a tool), and thin executables.

let package = Package(
    name: "receipt-verification",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receipt-ingest", targets: ["receipt-ingest"]),
        .executable(name: "receipt-verifier", targets: ["receipt-verifier"]),
        .executable(name: "receipt-ledger", targets: ["receipt-ledger"]),
        .executable(name: "fake-appstore", targets: ["fake-appstore"]),
        .executable(name: "embedded-kafka", targets: ["embedded-kafka"]),
        .executable(name: "receipt-admin", targets: ["receipt-admin"]),
        // Libraries the fuzz targets (fuzz/Package.swift) link against.
        .library(name: "ReceiptModel", targets: ["ReceiptModel"]),
        .library(name: "AppStore", targets: ["AppStore"]),
        .library(name: "AppStoreServerAPI", targets: ["AppStoreServerAPI"]),
        .library(name: "Catalog", targets: ["Catalog"]),
        .library(name: "HTTPClient", targets: ["HTTPClient"]),
        .library(name: "Notifications", targets: ["Notifications"]),
        .library(name: "Ingest", targets: ["Ingest"]),
        .library(name: "SignedData", targets: ["SignedData"]),
        .library(name: "Crypto", targets: ["Crypto"]),
        .library(name: "Verifier", targets: ["Verifier"]),
        .library(name: "ServiceSupport", targets: ["ServiceSupport"]),
        .library(name: "TestPKI", targets: ["TestPKI"]),
    ],
    targets: [
        // MARK: C system libraries (Debian 12 packages)
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // glibc's <malloc.h> (mallinfo2 for the process metrics): part of libc, nothing to install.
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(name: "CThreadName"),

        // MARK: Libraries
        .target(name: "ServiceSupport", dependencies: ["CMalloc", "CThreadName"]),
        // The only production Swift code over librdkafka: one client class (`RDKafkaClient`) owns the handle and
        // every rd_kafka_* call, plus the value types (KafkaError, TopicPartition, KafkaMessage, ...) that Kafka
        // re-exports.
        .target(name: "RDKafka", dependencies: ["CRdKafka", "ServiceSupport"]),
        // Consumer, topic follower and producer, in Swift types only: no C here (no CRdKafka dependency).
        .target(name: "Kafka", dependencies: ["RDKafka", "ServiceSupport"]),
        // librdkafka's mock cluster, a test and development tool (embedded-kafka, KafkaTests), not production code: its
        // `rd_kafka_mock_*` calls are here (`RDKafkaMockCluster`), over RDKafka's client configuration and callbacks,
        // so no service links them.
        .target(name: "EmbeddedKafka", dependencies: ["CRdKafka", "RDKafka", "ServiceSupport"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "ServiceSupport"]),
        // The only Swift code over libpq: connections, parameterized statements, transactions, typed rows.
        .target(name: "Postgres", dependencies: ["CPostgres", "ServiceSupport"]),
        .target(name: "ReceiptModel", dependencies: ["Crypto", "ServiceSupport"]),
        // The only production Swift code over OpenSSL: digests, certificates, chain validation, EC keys, PKCS#7, OCSP.
        .target(name: "Crypto", dependencies: ["COpenSSL"]),
        // JWS (StoreKit 2 / Server API / notifications), the API token and legacy receipts, above Crypto.
        .target(name: "SignedData", dependencies: ["Crypto", "ServiceSupport"]),
        // The test and development PKI, a test-support target as EmbeddedKafka is (the fake App Store, tests,
        // benchmarks, fuzzing; no service links it): minted Apple-shaped chains, JWS and receipt signing, OCSP
        // answers and a responder. It calls OpenSSL's minting and signing functions itself, over Crypto's types.
        .target(name: "TestPKI", dependencies: ["COpenSSL", "Crypto", "ReceiptModel", "ServiceSupport", "SignedData"]),
        // The only Swift code over libcurl: one multi loop per client, HTTP/2, TLS always verified.
        .target(name: "HTTPClient", dependencies: ["CCurl", "ServiceSupport"]),
        // The App Store Server API client (made by its one factory: the verifier, the ledger's refund responder and
        // the tools), its pacing, tokens, models and settings, and the OCSP client that checks the chains of Apple's
        // signed answers.
        .target(
            name: "AppStoreServerAPI",
            dependencies: ["HTTPClient", "ReceiptModel", "ServiceSupport", "SignedData", "Crypto"]),
        // PRODUCT_CATALOG_FILE: the products' types and credits, followed as the file changes (the verifier's money
        // rules judge transactions by it; the ledger reads it too).
        .target(name: "Catalog", dependencies: ["ReceiptModel", "ServiceSupport"]),
        // Receipt verification: the verifyReceipt and Server API backends behind `ReceiptVerifier`, the verdict rules.
        .target(
            name: "AppStore",
            dependencies: [
                "AppStoreServerAPI", "Catalog", "HTTPClient", "ReceiptModel", "ServiceSupport", "SignedData", "Crypto",
            ]),
        .target(
            name: "FakeAppStore",
            dependencies: [
                "AppStoreServerAPI", "HTTPClient", "HTTPServer", "ReceiptModel", "ServiceSupport", "SignedData",
                "Crypto", "TestPKI",
            ],
            exclude: ["README.md"]),
        // App Store Server Notifications V2: a record verified, judged by the verdict rules and mapped to a purchase
        // event (the verifier's notifications; receipt-reconcile checks recovered ones and refunds with it).
        .target(
            name: "Notifications",
            dependencies: ["AppStore", "Catalog", "ReceiptModel", "ServiceSupport", "SignedData"]),
        // The one service runtime: ServiceMain (help, settings errors exit 2, signals, drain, exit), ManagedService,
        // Health and its endpoints, bearer keys, the consumer link.
        .target(name: "ServiceRuntime", dependencies: ["Kafka", "HTTPServer", "ServiceSupport"]),
        .target(
            name: "Ingest", dependencies: ["Kafka", "HTTPServer", "ReceiptModel", "ServiceRuntime", "ServiceSupport"]),
        .target(
            name: "Verifier",
            dependencies: [
                "Kafka", "AppStore", "AppStoreServerAPI", "Catalog", "HTTPClient", "HTTPServer", "Notifications",
                "ReceiptModel", "ServiceRuntime", "ServiceSupport", "SignedData", "Crypto",
            ]),

        // receipt-ledger: the crediting rules, pure (per credit_key a state and (state, input) -> (state, actions),
        // no I/O), and the service that applies them to PostgreSQL exactly once.
        .target(name: "LedgerRules", dependencies: ["ServiceSupport"]),
        .target(
            name: "Ledger",
            dependencies: [
                "LedgerRules", "Postgres", "Kafka", "HTTPServer", "ReceiptModel", "ServiceRuntime", "ServiceSupport",
                "AppStoreServerAPI", "Catalog", "SignedData",
            ]),

        // MARK: Executables (thin: each service's main.swift is one ServiceMain.run call)
        .executableTarget(name: "receipt-ingest", dependencies: ["Ingest", "ServiceRuntime"]),
        .executableTarget(name: "receipt-verifier", dependencies: ["Verifier", "ServiceRuntime"]),
        .executableTarget(name: "receipt-ledger", dependencies: ["Ledger", "ServiceRuntime"]),
        .executableTarget(
            name: "fake-appstore",
            dependencies: ["FakeAppStore", "ServiceRuntime", "ServiceSupport", "Crypto", "TestPKI"]),
        .executableTarget(
            name: "embedded-kafka", dependencies: ["EmbeddedKafka", "RDKafka", "ServiceRuntime", "ServiceSupport"]),
        .executableTarget(
            name: "receipt-tail", dependencies: ["Kafka", "ReceiptModel", "ServiceRuntime", "ServiceSupport"]),
        .target(name: "Replay", dependencies: ["ReceiptModel", "ServiceSupport"]),
        // Get Notification History pages -> NOTIFICATIONS_TOPIC (the writing seam; the executable wires the App Store
        // Server API client and Kafka).
        .target(name: "NotificationBackfill", dependencies: ["AppStoreServerAPI", "ReceiptModel", "ServiceSupport"]),
        // The reconciliation sweep: Apple's notification and refund history against the ledger's tables, the
        // corrections (LedgerRules.ReconcileRules decides them) recorded in its own tables and produced once.
        .target(
            name: "Reconcile",
            dependencies: [
                "Notifications", "AppStoreServerAPI", "SignedData", "ReceiptModel", "LedgerRules", "Postgres",
                "ServiceSupport",
            ]),
        .executableTarget(
            name: "receipt-reconcile",
            dependencies: [
                "Reconcile", "AppStore", "AppStoreServerAPI", "Catalog", "Kafka", "Notifications", "Postgres",
                "ReceiptModel", "ServiceRuntime", "ServiceSupport", "SignedData",
            ]),
        .executableTarget(
            name: "receipt-notifications-backfill",
            dependencies: [
                "NotificationBackfill", "AppStoreServerAPI", "Kafka", "ReceiptModel", "ServiceRuntime",
                "ServiceSupport", "SignedData",
            ]),
        // receipt-admin: support and operations calls to the App Store Server API over the same client (retries,
        // audit lines, verified answers); the executable is one call.
        .target(
            name: "Admin",
            dependencies: ["AppStoreServerAPI", "HTTPClient", "ReceiptModel", "ServiceSupport", "SignedData"]),
        .executableTarget(name: "receipt-admin", dependencies: ["Admin"]),
        .executableTarget(
            name: "receipt-replay",
            dependencies: ["Kafka", "Replay", "ReceiptModel", "ServiceRuntime", "ServiceSupport"]),

        // MARK: Benchmarks (bench/, release builds, run by bench/*.sh)
        .executableTarget(
            name: "kafka-producer-bench", dependencies: ["Kafka", "ServiceSupport"], path: "bench/kafka-producer-bench"),
        .executableTarget(
            name: "appstore-client-bench", dependencies: ["AppStore", "FakeAppStore", "HTTPClient", "ServiceSupport"],
            path: "bench/appstore-client-bench"),
        .executableTarget(
            name: "verifier-bench",
            dependencies: [
                "Kafka", "Notifications", "ReceiptModel", "ServiceSupport", "FakeAppStore", "SignedData", "TestPKI",
                "Verifier",
            ],
            path: "bench/verifier-bench"),
        .executableTarget(
            name: "jws-bench", dependencies: ["SignedData", "Crypto", "ServiceSupport", "TestPKI"],
            path: "bench/jws-bench"),
        .executableTarget(
            name: "ledger-apply-bench", dependencies: ["Ledger", "LedgerRules", "Postgres"],
            path: "bench/ledger-apply-bench"),
        .executableTarget(
            name: "verifier-path-bench",
            dependencies: [
                "Verifier", "AppStore", "FakeAppStore", "HTTPClient", "Kafka", "ReceiptModel", "ServiceSupport",
            ],
            path: "bench/verifier-path-bench"),
        .executableTarget(
            name: "ingest-path-bench", dependencies: ["Ingest", "Kafka", "ServiceSupport"],
            path: "bench/ingest-path-bench"),
        .executableTarget(
            name: "follower-path-bench", dependencies: ["Ingest", "ReceiptModel", "ServiceSupport"],
            path: "bench/follower-path-bench"),

        // MARK: Tests
        // Pure (no Kafka, no PostgreSQL, no executables; `make test-unit`): ServiceSupportTests, ServiceRuntimeTests,
        // ReceiptModelTests, ReplayTests, CryptoTests, SignedDataTests, LedgerRulesTests, NotificationBackfillTests, and
        // AdminTests' AdminArgumentsTests, AdminReportTests, AppleCallerTests (its process suite starts fake-appstore
        // and receipt-admin).
        // Start embedded-kafka (some suites): KafkaTests, IngestTests, VerifierTests, LedgerTests. Start PostgreSQL:
        // PostgresTests, LedgerTests, ReconcileTests. Start the real executables: IntegrationTests, and the process
        // suites of IngestTests, VerifierTests, AppStoreTests (the fake App Store), LedgerTests and ReconcileTests. HTTPServerTests and
        // AppStoreTests also serve on loopback in process.
        .target(name: "TestSupport", dependencies: ["ServiceSupport"], path: "Tests/TestSupport"),
        // The rules' tables, read by LedgerRulesTests (against the rules) and LedgerTests (through the store).
        .target(name: "LedgerRuleTables", dependencies: ["LedgerRules"], path: "Tests/LedgerRuleTables"),
        .testTarget(name: "ServiceSupportTests", dependencies: ["ServiceSupport", "TestSupport"]),
        .testTarget(
            name: "ServiceRuntimeTests", dependencies: ["ServiceRuntime", "HTTPServer", "Kafka", "ServiceSupport"]),
        .testTarget(name: "ReceiptModelTests", dependencies: ["ReceiptModel", "ServiceSupport", "TestSupport"]),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka", "EmbeddedKafka", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "AppStoreServerAPI", "Catalog", "HTTPClient", "FakeAppStore", "ReceiptModel",
                "ServiceSupport", "TestSupport", "SignedData", "Crypto", "TestPKI",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "IngestTests",
            dependencies: ["Ingest", "HTTPServer", "Kafka", "ReceiptModel", "ServiceRuntime", "TestSupport"]),
        .testTarget(
            name: "VerifierTests",
            dependencies: [
                "Verifier", "AppStore", "AppStoreServerAPI", "Catalog", "HTTPServer", "Kafka", "Notifications",
                "ReceiptModel", "ServiceRuntime", "ServiceSupport", "TestSupport", "SignedData", "Crypto",
                "FakeAppStore", "TestPKI",
            ]),
        .testTarget(name: "ReplayTests", dependencies: ["Replay", "ReceiptModel"]),
        .testTarget(
            name: "ReconcileTests",
            dependencies: [
                "Reconcile", "Ledger", "LedgerRules", "Postgres", "Kafka", "ReceiptModel", "ServiceSupport", "TestSupport",
                "FakeAppStore", "Notifications", "AppStoreServerAPI", "SignedData",
            ]),
        .testTarget(
            name: "NotificationBackfillTests",
            dependencies: ["NotificationBackfill", "AppStoreServerAPI", "ReceiptModel", "ServiceSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "TestPKI"], exclude: ["Fixtures"]),
        .testTarget(
            name: "SignedDataTests", dependencies: ["SignedData", "Crypto", "ServiceSupport", "TestSupport", "TestPKI"],
            exclude: ["Fixtures"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "LedgerRulesTests", dependencies: ["LedgerRules", "LedgerRuleTables"]),
        .testTarget(
            name: "AdminTests",
            dependencies: [
                "Admin", "AppStoreServerAPI", "ReceiptModel", "ServiceSupport", "SignedData", "Crypto", "FakeAppStore",
                "TestSupport",
            ]),
        .testTarget(
            name: "LedgerTests",
            dependencies: [
                "Ledger", "LedgerRules", "Postgres", "Kafka", "ServiceRuntime", "ServiceSupport", "TestSupport",
                "FakeAppStore", "LedgerRuleTables", "EmbeddedKafka",
            ]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Kafka", "ReceiptModel", "ServiceSupport", "FakeAppStore", "TestSupport", "SignedData", "Crypto",
                "TestPKI",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
