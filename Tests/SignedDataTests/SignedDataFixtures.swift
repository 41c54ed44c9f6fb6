import Crypto
import Foundation
import SignedData
import Testing

/// Fixtures next to this file (see Fixtures/README.md), payload builders and the Python oracle.
enum SignedDataFixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func base64File(_ name: String) throws -> [UInt8] {
        try #require(Data(base64Encoded: try text(name)).map(Array.init))
    }

    /// A transaction payload as the App Store writes it, signed at `signedDateMs`.
    static func transactionPayload(signedDateMs: Int64, transactionId: String = "2000000123456789",
                                   bundleId: String = "com.example.app") -> [UInt8] {
        Array("""
            {"transactionId":"\(transactionId)","originalTransactionId":"2000000000000001","bundleId":"\(bundleId)",\
            "productId":"com.example.coins.100","purchaseDate":\(signedDateMs - 5000),"quantity":1,\
            "type":"Consumable","inAppOwnershipType":"PURCHASED","signedDate":\(signedDateMs),\
            "environment":"Sandbox","transactionReason":"PURCHASE","storefront":"USA","currency":"USD","price":990}
            """.utf8)
    }

    /// Runs `Fixtures/oracle.py` with one JSON request and returns its JSON answer.
    static func oracle(_ request: [String: Any]) throws -> [String: Any] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", path("oracle.py")]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: request))
        try input.fileHandleForWriting.close()
        let answer = output.fileHandleForReading.readDataToEndOfFile()
        let diagnostics = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0,
            "the Python oracle failed (Apple's app-store-server-library must be installed: scripts/install-deps.sh): \(diagnostics)")
        return try #require(try JSONSerialization.jsonObject(with: answer) as? [String: Any])
    }
}

/// A deterministic generator (SplitMix64) for randomized tests: the same seed gives the same bytes on every run, so
/// a failure is reproducible and a pass does not depend on luck.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
