@testable import AppStoreServerAPI
import Crypto
import Foundation
import ServiceSupport
import SignedData
import Testing

@testable import AppStore
import TestPKI

/// `ServerAPISettings`: the CONTRACT's names and defaults, and every inconsistent or unreadable setting refused at
/// start with a message naming the variable.
@Suite struct ServerAPISettingsTests {
    /// A temporary directory holding a `.p8` key and a root certificate file.
    final class Files: Sendable {
        let directory: String
        let keyPath: String
        let rootPath: String

        init() throws {
            directory = NSTemporaryDirectory() + "server-api-settings-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            keyPath = directory + "/AuthKey_TEST.p8"
            rootPath = directory + "/root.pem"
            try ECPrivateKey.generate(curve: .p256).pkcs8PEM().write(toFile: keyPath, atomically: true, encoding: .utf8)
            try TestSigningPKI.mint().rootCertificate.pem.write(toFile: rootPath, atomically: true, encoding: .utf8)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        var credentials: [String: String] {
            ["APPLE_ISSUER_ID": "57246542-96fe-1a63-e053-0824d011072a", "APPLE_KEY_ID": "2X9R4HXF34",
             "APPLE_PRIVATE_KEY_FILE": keyPath]
        }
    }

    static func read(_ environment: [String: String]) throws(ConfigurationError) -> ServerAPISettings {
        try ServerAPISettings.fromEnvironment(Settings(environment: environment))
    }

    @Test func withoutCredentialsTheDefaultsFollowTheContract() throws {
        let settings = try Self.read([:])
        #expect(!settings.hasCredentials)
        #expect(settings.endpoints.production == "https://api.storekit.apple.com")
        #expect(settings.endpoints.sandbox == "https://api.storekit-sandbox.apple.com")
        #expect(settings.signedTransactionConfirm == .never)
        #expect(settings.receiptBackend == .verifyReceipt)
        #expect(settings.maxRequestsPerSecond == 50)
        #expect(settings.appAppleId == nil)
        // The shipped Apple Root CA - G3 is the default and only root; receipt roots are loaded only when used.
        #expect(settings.rootCertificatePaths == [try #require(AppleRootCertificates.defaultSignedDataRootsPath)])
        #expect(settings.rootCertificates.map(\.subject).joined().contains("Apple Root CA - G3"))
        #expect(settings.receiptRootCertificates.isEmpty)
    }

    @Test func withCredentialsTheKeyIsReadAtStartAndConfirmationIsOnByDefault() throws {
        let files = try Files()
        let settings = try Self.read(files.credentials)
        let credentials = try #require(settings.credentials)
        #expect(credentials.keyId == "2X9R4HXF34")
        #expect(credentials.issuerId == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(settings.signedTransactionConfirm == .always)
        #expect(!settings.description.contains("PRIVATE KEY"))
        #expect(settings.description.contains("2X9R4HXF34"))
        let never = try Self.read(files.credentials.merging(["SIGNED_TRANSACTION_CONFIRM": "never"]) { $1 })
        #expect(never.signedTransactionConfirm == .never)
    }

    @Test func readsEverySetting() throws {
        let files = try Files()
        let settings = try Self.read(
            files.credentials.merging([
                "APPLE_SERVER_API_URL": "http://127.0.0.1:8123/", "APPLE_SERVER_API_SANDBOX_URL": "http://localhost:8123/sandbox",
                "APPLE_ROOT_CERTIFICATES": files.rootPath, "APPLE_RECEIPT_ROOT_CERTIFICATES": " \(files.rootPath) ",
                "APPLE_APP_APPLE_ID": "1234567890", "APPLE_SERVER_API_MAX_RPS": "12.5", "RECEIPT_BACKEND": "server-api",
                "SIGNED_TRANSACTION_CONFIRM": "ALWAYS",
            ]) { $1 })
        #expect(settings.endpoints.production == "http://127.0.0.1:8123")
        #expect(settings.endpoints.sandbox == "http://localhost:8123/sandbox")
        #expect(settings.rootCertificatePaths == [files.rootPath])
        #expect(settings.rootCertificates.count == 1)
        #expect(settings.receiptRootCertificates.count == 1)
        #expect(settings.appAppleId == 1_234_567_890)
        #expect(settings.maxRequestsPerSecond == 12.5)
        #expect(settings.receiptBackend == .serverAPI)
        #expect(settings.signedTransactionConfirm == .always)
    }

    static let refusals: [(environment: [String: String], variable: String, says: String)] = [
        (["APPLE_ISSUER_ID": "i"], "APPLE_KEY_ID", "all three, or none"),
        (["APPLE_ISSUER_ID": "i", "APPLE_KEY_ID": "k"], "APPLE_PRIVATE_KEY_FILE", "all three, or none"),
        (["APPLE_PRIVATE_KEY_FILE": "/x"], "APPLE_ISSUER_ID", "all three, or none"),
        (["APPLE_ISSUER_ID": "i", "APPLE_KEY_ID": "k", "APPLE_PRIVATE_KEY_FILE": "/nonexistent/AuthKey.p8"],
         "APPLE_PRIVATE_KEY_FILE", "/nonexistent/AuthKey.p8"),
        (["SIGNED_TRANSACTION_CONFIRM": "always"], "SIGNED_TRANSACTION_CONFIRM", "APPLE_PRIVATE_KEY_FILE"),
        (["SIGNED_TRANSACTION_CONFIRM": "sometimes"], "SIGNED_TRANSACTION_CONFIRM", "always, never"),
        (["RECEIPT_BACKEND": "server-api"], "RECEIPT_BACKEND", "APPLE_ISSUER_ID"),
        (["RECEIPT_BACKEND": "storekit"], "RECEIPT_BACKEND", "verify-receipt, server-api"),
        (["APPLE_SERVER_API_URL": "http://api.example.com"], "APPLE_SERVER_API_URL", "https"),
        (["APPLE_SERVER_API_SANDBOX_URL": "ftp://x.example.com"], "APPLE_SERVER_API_SANDBOX_URL", "https"),
        (["APPLE_ROOT_CERTIFICATES": "/nonexistent/root.cer"], "APPLE_ROOT_CERTIFICATES", "/nonexistent/root.cer"),
        (["APPLE_ROOT_CERTIFICATES": " , "], "APPLE_ROOT_CERTIFICATES", "no certificate"),
        (["APPLE_SERVER_API_MAX_RPS": "0"], "APPLE_SERVER_API_MAX_RPS", "rate"),
        (["APPLE_SERVER_API_MAX_RPS": "fast"], "APPLE_SERVER_API_MAX_RPS", "not a number"),
        (["APPLE_APP_APPLE_ID": "my-app"], "APPLE_APP_APPLE_ID", "numeric"),
    ]

    @Test(arguments: 0..<15)
    func inconsistentOrUnreadableSettingsAreRefusedNamingTheVariable(index: Int) {
        let (environment, variable, says) = Self.refusals[index]
        let error = #expect(throws: ConfigurationError.self) { try Self.read(environment) }
        #expect(error?.variable == variable, "\(environment)")
        #expect(error?.problem.contains(says) == true, "\(String(describing: error))")
    }

    @Test func aKeyFileThatIsNotAP256PrivateKeyIsRefused() throws {
        let files = try Files()
        let notAKey = files.directory + "/not-a-key.p8"
        try "hello".write(toFile: notAKey, atomically: true, encoding: .utf8)
        let p384 = files.directory + "/p384.p8"
        try ECPrivateKey.generate(curve: .p384).pkcs8PEM().write(toFile: p384, atomically: true, encoding: .utf8)
        for path in [notAKey, p384, files.rootPath] {
            let error = #expect(throws: ConfigurationError.self) {
                try Self.read(files.credentials.merging(["APPLE_PRIVATE_KEY_FILE": path]) { $1 })
            }
            #expect(error?.variable == "APPLE_PRIVATE_KEY_FILE")
        }
    }

    @Test func httpIsAcceptedOnlyForLoopbackHosts() throws {
        for url in ["http://127.0.0.1:1", "http://localhost:8080/x", "http://[::1]:9/", "https://api.example.com"] {
            #expect(throws: Never.self) { try ServerAPISettings.url(Settings(environment: ["U": url]), "U", default: "") }
        }
        for url in ["http://10.0.0.1:1", "http://localhost.example.com", "http://127.0.0.1.example.com", "api.storekit.apple.com"] {
            #expect(throws: ConfigurationError.self) {
                try ServerAPISettings.url(Settings(environment: ["U": url]), "U", default: "")
            }
        }
    }
}
