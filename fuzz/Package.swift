// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for every parser that sees outside bytes. Built and run by scripts/fuzz.sh (`make fuzz`) with
// `-sanitize=fuzzer,address`; kept out of the main package because a fuzz target's `main` needs libFuzzer's runtime.
// Seed corpora live in corpus/<target>/.

let package = Package(
    name: "receipt-verification-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "receipt-verification", path: "..")],
    targets: [
        .target(name: "FuzzSupport"),
        // fuzz-submission-message and fuzz-http-submission `@testable import` their module for the Foundation-only
        // readers (`decodeValidatedWithFoundation`, `parseWithFoundation`), internal: the oracle of the lean path.
        .executableTarget(
            name: "fuzz-submission-message",
            dependencies: ["FuzzSupport", .product(name: "ReceiptModel", package: "receipt-verification")]),
        .executableTarget(
            name: "fuzz-lean-json",
            dependencies: ["FuzzSupport", .product(name: "ServiceSupport", package: "receipt-verification")]),
        .executableTarget(
            name: "fuzz-verifyreceipt-response",
            dependencies: ["FuzzSupport", .product(name: "AppStore", package: "receipt-verification")]),
        .executableTarget(
            name: "fuzz-http-submission",
            dependencies: [
                "FuzzSupport", .product(name: "Ingest", package: "receipt-verification"),
                .product(name: "ReceiptModel", package: "receipt-verification"),
            ]),
        .executableTarget(
            name: "fuzz-jws",
            dependencies: [
                "FuzzSupport", .product(name: "SignedData", package: "receipt-verification"),
                .product(name: "Crypto", package: "receipt-verification"),
            ]),
        .executableTarget(
            name: "fuzz-app-receipt",
            dependencies: ["FuzzSupport", .product(name: "SignedData", package: "receipt-verification")]),
        .executableTarget(
            name: "fuzz-signed-payloads",
            dependencies: ["FuzzSupport", .product(name: "SignedData", package: "receipt-verification")]),
        .target(
            name: "NotificationFuzzSupport",
            dependencies: [
                "FuzzSupport", .product(name: "Verifier", package: "receipt-verification"),
                .product(name: "Notifications", package: "receipt-verification"),
                .product(name: "Catalog", package: "receipt-verification"),
                .product(name: "TestPKI", package: "receipt-verification"),
                .product(name: "AppStore", package: "receipt-verification"),
                .product(name: "SignedData", package: "receipt-verification"),
                .product(name: "ReceiptModel", package: "receipt-verification"),
                .product(name: "Crypto", package: "receipt-verification"),
            ]),
        .executableTarget(
            name: "fuzz-notification-record",
            dependencies: ["FuzzSupport", "NotificationFuzzSupport"]),
        .executableTarget(
            name: "fuzz-notification-payload",
            dependencies: [
                "FuzzSupport", "NotificationFuzzSupport",
                .product(name: "SignedData", package: "receipt-verification"),
                .product(name: "ReceiptModel", package: "receipt-verification"),
            ]),
        .executableTarget(
            name: "fuzz-notification-request",
            dependencies: ["FuzzSupport", .product(name: "ReceiptModel", package: "receipt-verification")]),
        // These two `@testable import` (the fuzz build is a debug build, compiled for testing): the Server API client's
        // pure answer classification and `NotificationEvent`'s initializer are internal.
        .executableTarget(
            name: "fuzz-server-api",
            dependencies: [
                "FuzzSupport", .product(name: "AppStoreServerAPI", package: "receipt-verification"),
                .product(name: "HTTPClient", package: "receipt-verification"),
                .product(name: "ReceiptModel", package: "receipt-verification"),
            ]),
        .executableTarget(
            name: "fuzz-product-catalog",
            dependencies: [
                "FuzzSupport", .product(name: "AppStore", package: "receipt-verification"),
                .product(name: "ReceiptModel", package: "receipt-verification"),
                .product(name: "Catalog", package: "receipt-verification"),
                .product(name: "Notifications", package: "receipt-verification"),
                .product(name: "Verifier", package: "receipt-verification"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
