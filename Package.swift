// swift-tools-version:6.0
import PackageDescription

// Layout: C system libraries at the edge (C*), one thin Swift layer per library (Kafka, HTTPServer, Postgres, the
// libcurl client inside AppStore), domain modules above them, the three services as libraries, and thin executables.

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
        .library(name: "Ingest", targets: ["Ingest"]),
        .library(name: "SignedData", targets: ["SignedData"]),
        .library(name: "Crypto", targets: ["Crypto"]),
        .library(name: "Verifier", targets: ["Verifier"]),
        .library(name: "ServiceSupport", targets: ["ServiceSupport"]),
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
        // The only Swift code over librdkafka: one client class (`RDKafkaClient`) owns the handle and every
        // rd_kafka_* call (`RDKafkaMockCluster` the mock cluster's), plus the value types (KafkaError, TopicPartition,
        // KafkaMessage, ...) that Kafka re-exports.
        .target(name: "RDKafka", dependencies: ["CRdKafka", "ServiceSupport"]),
        // Consumer, topic follower and producer, in Swift types only: no C here (no CRdKafka dependency).
        .target(name: "Kafka", dependencies: ["RDKafka", "ServiceSupport"]),
        // librdkafka's mock cluster, a test and development tool (embedded-kafka, KafkaTests), not production code;
        // Swift only, over RDKafka's `RDKafkaMockCluster`.
        .target(name: "EmbeddedKafka", dependencies: ["RDKafka", "ServiceSupport"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "ServiceSupport"]),
        // The only Swift code over libpq: connections, parameterized statements, transactions, typed rows.
        .target(name: "Postgres", dependencies: ["CPostgres", "ServiceSupport"]),
        .target(name: "ReceiptModel", dependencies: ["Crypto", "ServiceSupport"]),
        // The only Swift code over OpenSSL: digests, certificates, chain validation, EC keys, PKCS#7, test PKI.
        .target(name: "Crypto", dependencies: ["COpenSSL"]),
        // JWS (StoreKit 2 / Server API / notifications), the API token and legacy receipts, above Crypto.
        .target(name: "SignedData", dependencies: ["Crypto", "ServiceSupport"]),
        .target(name: "AppStore", dependencies: ["CCurl", "ReceiptModel", "ServiceSupport", "SignedData", "Crypto"]),
        .target(
            name: "FakeAppStore",
            dependencies: ["AppStore", "HTTPServer", "ReceiptModel", "ServiceSupport", "SignedData", "Crypto"],
            exclude: ["README.md"]),
        // The one service runtime: ServiceMain (help, settings errors exit 2, signals, drain, exit), ManagedService,
        // Health and its endpoints, bearer keys, the consumer link.
        .target(name: "ServiceRuntime", dependencies: ["Kafka", "HTTPServer", "ServiceSupport"]),
        .target(
            name: "Ingest", dependencies: ["Kafka", "HTTPServer", "ReceiptModel", "ServiceRuntime", "ServiceSupport"]),
        .target(
            name: "Verifier",
            dependencies: [
                "Kafka", "AppStore", "HTTPServer", "ReceiptModel", "ServiceRuntime", "ServiceSupport", "SignedData",
                "Crypto",
            ]),

        // receipt-ledger: the crediting rules, pure (per credit_key a state and (state, input) -> (state, actions),
        // no I/O), and the service that applies them to PostgreSQL exactly once.
        .target(name: "LedgerRules", dependencies: ["ServiceSupport"]),
        .target(
            name: "Ledger",
            dependencies: [
                "LedgerRules", "Postgres", "Kafka", "HTTPServer", "ReceiptModel", "ServiceRuntime", "ServiceSupport",
                "AppStore", "SignedData",
            ]),

        // MARK: Executables (thin: each service's main.swift is one ServiceMain.run call)
        .executableTarget(name: "receipt-ingest", dependencies: ["Ingest", "ServiceRuntime"]),
        .executableTarget(name: "receipt-verifier", dependencies: ["Verifier", "ServiceRuntime"]),
        .executableTarget(name: "receipt-ledger", dependencies: ["Ledger", "ServiceRuntime"]),
        .executableTarget(
            name: "fake-appstore", dependencies: ["FakeAppStore", "ServiceRuntime", "ServiceSupport", "Crypto"]),
        .executableTarget(
            name: "embedded-kafka", dependencies: ["EmbeddedKafka", "RDKafka", "ServiceRuntime", "ServiceSupport"]),
        .executableTarget(
            name: "receipt-tail", dependencies: ["Kafka", "ReceiptModel", "ServiceRuntime", "ServiceSupport"]),
        .target(name: "Replay", dependencies: ["ReceiptModel", "ServiceSupport"]),
        // Get Notification History pages -> NOTIFICATIONS_TOPIC (the paging and writing seams; the executable wires
        // the App Store Server API client and Kafka).
        .target(name: "NotificationBackfill", dependencies: ["Ingest", "ReceiptModel", "ServiceSupport", "AppStore"]),
        // The reconciliation sweep: Apple's notification and refund history against the ledger's tables, the
        // corrections (LedgerRules.ReconcileRules decides them) recorded in its own tables and produced once.
        .target(
            name: "Reconcile",
            dependencies: [
                "NotificationBackfill", "Verifier", "AppStore", "SignedData", "ReceiptModel", "LedgerRules", "Postgres",
                "ServiceSupport",
            ]),
        .executableTarget(
            name: "receipt-reconcile",
            dependencies: [
                "Reconcile", "AppStore", "Kafka", "NotificationBackfill", "Postgres", "ReceiptModel", "ServiceRuntime",
                "ServiceSupport", "SignedData", "Verifier",
            ]),
        .executableTarget(
            name: "receipt-notifications-backfill",
            dependencies: [
                "NotificationBackfill", "AppStore", "Kafka", "ReceiptModel", "ServiceRuntime", "ServiceSupport",
                "SignedData",
            ]),
        // receipt-admin: support and operations calls to the App Store Server API over the same client (retries,
        // audit lines, verified answers); the executable is one call.
        .target(name: "Admin", dependencies: ["AppStore", "ReceiptModel", "ServiceSupport", "SignedData"]),
        .executableTarget(name: "receipt-admin", dependencies: ["Admin"]),
        .executableTarget(
            name: "receipt-replay",
            dependencies: ["Kafka", "Replay", "ReceiptModel", "ServiceRuntime", "ServiceSupport"]),

        // MARK: Benchmarks (bench/, release builds, run by bench/*.sh)
        .executableTarget(
            name: "kafka-producer-bench", dependencies: ["Kafka", "ServiceSupport"], path: "bench/kafka-producer-bench"),
        .executableTarget(
            name: "appstore-client-bench", dependencies: ["AppStore", "FakeAppStore", "ServiceSupport"],
            path: "bench/appstore-client-bench"),
        .executableTarget(
            name: "verifier-bench",
            dependencies: ["Kafka", "ReceiptModel", "ServiceSupport", "FakeAppStore", "SignedData", "Verifier"],
            path: "bench/verifier-bench"),
        .executableTarget(name: "jws-bench", dependencies: ["SignedData", "Crypto", "ServiceSupport"], path: "bench/jws-bench"),
        .executableTarget(
            name: "ledger-apply-bench", dependencies: ["Ledger", "LedgerRules", "Postgres"],
            path: "bench/ledger-apply-bench"),
        .executableTarget(
            name: "verifier-path-bench",
            dependencies: ["Verifier", "AppStore", "FakeAppStore", "Kafka", "ReceiptModel", "ServiceSupport"],
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
        .testTarget(name: "ServiceSupportTests", dependencies: ["ServiceSupport", "TestSupport"]),
        .testTarget(
            name: "ServiceRuntimeTests", dependencies: ["ServiceRuntime", "HTTPServer", "Kafka", "ServiceSupport"]),
        .testTarget(name: "ReceiptModelTests", dependencies: ["ReceiptModel", "TestSupport"]),
        .testTarget(name: "KafkaTests", dependencies: ["Kafka", "EmbeddedKafka", "TestSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "FakeAppStore", "ReceiptModel", "ServiceSupport", "TestSupport", "SignedData", "Crypto",
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "IngestTests",
            dependencies: ["Ingest", "HTTPServer", "Kafka", "ReceiptModel", "ServiceRuntime", "TestSupport"]),
        .testTarget(
            name: "VerifierTests",
            dependencies: [
                "Verifier", "AppStore", "HTTPServer", "Kafka", "ReceiptModel", "ServiceRuntime", "ServiceSupport",
                "TestSupport", "SignedData", "Crypto", "FakeAppStore",
            ]),
        .testTarget(name: "ReplayTests", dependencies: ["Replay", "ReceiptModel"]),
        .testTarget(
            name: "ReconcileTests",
            dependencies: [
                "Reconcile", "Ledger", "LedgerRules", "Postgres", "Kafka", "ReceiptModel", "ServiceSupport", "TestSupport",
                "FakeAppStore", "Verifier", "SignedData", "NotificationBackfill",
            ]),
        .testTarget(name: "NotificationBackfillTests", dependencies: ["NotificationBackfill", "ReceiptModel", "Ingest", "ServiceSupport"]),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], exclude: ["Fixtures"]),
        .testTarget(
            name: "SignedDataTests", dependencies: ["SignedData", "Crypto", "ServiceSupport", "TestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"]),
        .testTarget(name: "LedgerRulesTests", dependencies: ["LedgerRules"]),
        .testTarget(
            name: "AdminTests",
            dependencies: [
                "Admin", "AppStore", "ReceiptModel", "ServiceSupport", "SignedData", "Crypto", "FakeAppStore",
                "TestSupport",
            ]),
        .testTarget(
            name: "LedgerTests",
            dependencies: [
                "Ledger", "LedgerRules", "Postgres", "Kafka", "ServiceRuntime", "ServiceSupport", "TestSupport",
                "FakeAppStore", "EmbeddedKafka",
            ]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Kafka", "ReceiptModel", "ServiceSupport", "FakeAppStore", "TestSupport", "SignedData", "Crypto",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
