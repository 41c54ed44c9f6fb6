import Crypto
import FakeAppStore
import Foundation
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

@testable import AppStore
import TestPKI

/// `signed_app_transaction` through the Server API backend and `ReceiptVerifier` against the in-process fake: the
/// same signature checks as a signed transaction, Get App Transaction Info to confirm, and the verdict rules for
/// app transactions (issue 29 item 2).
@Suite(.serialized) struct AppTransactionBackendTests {
    static let id = "705000000000001"

    func appPayload(
        _ harness: ServerAPIHarness, id: String? = AppTransactionBackendTests.id, environment: String = "Production",
        bundleId: String = ServerAPIHarness.bundleId
    ) -> String {
        var fields = [
            #""receiptType":"\#(environment)""#, #""bundleId":"\#(bundleId)""#, #""applicationVersion":"3""#,
            #""originalApplicationVersion":"1.0""#, #""originalPurchaseDate":1600000000000"#,
            #""receiptCreationDate":\#(harness.pki.signedDateMs)"#, #""originalPlatform":"iOS""#,
        ]
        if let id { fields.append(#""appTransactionId":"\#(id)""#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @Test func anAppTransactionIsVerifiedLocallyWithoutCredentialsAndCreditsNothing() async throws {
        let harness = try ServerAPIHarness()
        let jws = try #require(try harness.fake.signedAppTransaction(id: Self.id))
        let backend = harness.backend(withClient: false)
        #expect(backend.source(for: .signedAppTransaction(jws)) == .signedTransaction)
        let verdict = try #require(await harness.verify(.signedAppTransaction(jws), with: backend).verdict)
        #expect(verdict.outcome == .verified && verdict.reason == nil)
        #expect(verdict.source == .signedTransaction)
        #expect(verdict.attempts == 0)
        #expect(verdict.transactions.isEmpty)
        #expect(verdict.environment == .production && verdict.bundleId == ServerAPIHarness.bundleId)
        let app = try #require(verdict.appTransaction)
        #expect(app.appTransactionId == Self.id)
        #expect(app.bundleId == ServerAPIHarness.bundleId)
        #expect(app.originalApplicationVersion == "1.0")
        #expect(app.originalPurchaseDateMs == FakeAppTransaction.defaultOriginalPurchaseDateMs)
        #expect(app.appAppleId == FakeAppTransaction.defaultAppAppleId)
        #expect(app.receiptType == "Production" && app.originalPlatform == "iOS")
        #expect(harness.fake.serverAPICalls(appTransaction: Self.id) == (0, 0))
    }

    @Test func aConfirmedAppTransactionRestsOnApplesSignedAnswer() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeAppTransaction(
                id: Self.id, applicationVersion: "7", originalApplicationVersion: "3.1",
                originalPurchaseDateMs: 1_500_000_000_000))
        let jws = try #require(try harness.fake.signedAppTransaction(id: Self.id))
        let backend = harness.backend(confirm: true)
        #expect(backend.source(for: .signedAppTransaction(jws)) == .serverAPI)
        let outcome = await harness.verify(.signedAppTransaction(jws), with: backend)
        let verdict = try #require(outcome.verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.source == .serverAPI)
        #expect(verdict.attempts == 1)
        #expect(verdict.transactions.isEmpty)
        let app = try #require(verdict.appTransaction)
        #expect(app.originalApplicationVersion == "3.1" && app.applicationVersion == "7")
        #expect(app.originalPurchaseDateMs == 1_500_000_000_000)
        #expect(harness.fake.serverAPICalls(appTransaction: Self.id) == (1, 0))
        // As the verifier writes it: the app transaction, no transactions.
        let submission = Submission(submissionId: "s-app", proof: .signedAppTransaction(jws), submittedAtMs: 1)
        let result = outcome.result(for: submission, verifiedAtMs: 2)
        let json = String(decoding: VerificationResultJSON.encode(result), as: UTF8.self)
        #expect(json.contains(#""app_transaction":{"app_apple_id":1234567890,"app_transaction_id":"705000000000001""#))
        #expect(json.contains(#""original_application_version":"3.1""#) && json.contains(#""transactions":[]"#))
    }

    @Test(arguments: TestSigningPKI.Defect.allCases)
    func everyBrokenSignatureOrChainIsInvalidSignatureWithoutAskingApple(defect: TestSigningPKI.Defect) async throws {
        let harness = try ServerAPIHarness()
        let jws = try harness.sign(appPayload(harness), defect: defect)
        for backend in [harness.backend(withClient: false), harness.backend(confirm: true)] {
            let verdict = try #require(await harness.verify(.signedAppTransaction(jws), with: backend).verdict)
            #expect(verdict.outcome == .rejected && verdict.reason == .invalidSignature, "\(defect)")
            #expect(verdict.message?.hasPrefix("the app transaction was refused: ") == true, "\(defect)")
            #expect(verdict.appTransaction == nil && verdict.transactions.isEmpty)
        }
        #expect(harness.fake.serverAPICalls(appTransaction: Self.id) == (0, 0))
    }

    @Test(arguments: ["Xcode", "LocalTesting"])
    func storeKitTestingAppTransactionsAreNeverAccepted(environment: String) async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .accept)
        let jws = try harness.sign(appPayload(harness, environment: environment))
        let verdict = try #require(await harness.verify(.signedAppTransaction(jws), with: harness.backend()).verdict)
        #expect(verdict.reason == .sandboxNotAllowed)
        #expect(verdict.message?.contains(environment) == true)
        #expect(verdict.attempts == 0)
    }

    @Test func anotherAppsOrAForbiddenSandboxAppTransactionIsRejectedWithoutAskingApple() async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .reject)
        let other = try harness.sign(appPayload(harness, bundleId: "com.other.app"))
        let wrongApp = try #require(await harness.verify(.signedAppTransaction(other), with: harness.backend()).verdict)
        #expect(wrongApp.outcome == .rejected && wrongApp.reason == .bundleMismatch)
        #expect(wrongApp.message?.contains("com.other.app") == true)
        let sandbox = try harness.sign(appPayload(harness, environment: "Sandbox"))
        let refused = try #require(
            await harness.verify(.signedAppTransaction(sandbox), with: harness.backend()).verdict)
        #expect(refused.outcome == .rejected && refused.reason == .sandboxNotAllowed)
        #expect(refused.environment == .sandbox)
        #expect(wrongApp.attempts == 0 && refused.attempts == 0)
        #expect(harness.fake.serverAPICalls(appTransaction: Self.id) == (0, 0))
    }

    @Test func aSandboxAppTransactionIsConfirmedInTheSandbox() async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .accept)
        harness.fake.register(FakeAppTransaction(id: Self.id, environment: "Sandbox"))
        let jws = try #require(try harness.fake.signedAppTransaction(id: Self.id))
        let verdict = try #require(await harness.verify(.signedAppTransaction(jws), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified && verdict.environment == .sandbox)
        #expect(verdict.appTransaction?.environment == .sandbox && verdict.appTransaction?.appAppleId == nil)
        #expect(harness.fake.serverAPICalls(appTransaction: Self.id) == (0, 1))
    }

    @Test func anAppTransactionAppleDoesNotKnowIsTransactionNotFound() async throws {
        let harness = try ServerAPIHarness()
        // Signed for production, known to Apple only in the sandbox: Apple's 404 AppTransactionDoesNotExist.
        harness.fake.register(FakeAppTransaction(id: Self.id, environment: "Sandbox"))
        let jws = try harness.sign(appPayload(harness))
        let verdict = try #require(await harness.verify(.signedAppTransaction(jws), with: harness.backend()).verdict)
        #expect(verdict.outcome == .rejected && verdict.reason == .transactionNotFound)
        #expect(verdict.appleStatus == 4_040_019)
        #expect(verdict.message?.contains(Self.id) == true)
        #expect(verdict.appTransaction == nil)
    }

    @Test func applesErrorsTakeTheUsualRetryRateLimitAndConfigurationPaths() async throws {
        let harness = try ServerAPIHarness()
        let flaky = "705000000000011"
        harness.fake.register(
            FakeAppTransaction(id: flaky, failures: [.init(httpStatus: 500, errorCode: 5_000_001, times: 2)]))
        let retried = try #require(
            await harness.verify(
                .signedAppTransaction(try harness.sign(appPayload(harness, id: flaky))), with: harness.backend()
            ).verdict)
        #expect(retried.outcome == .verified && retried.attempts == 3)

        let wrong = "705000000000012"
        harness.fake.register(FakeAppTransaction(id: wrong, failures: [.init(httpStatus: 400, errorCode: 4_000_002)]))
        let configuration = await harness.verify(
            .signedAppTransaction(try harness.sign(appPayload(harness, id: wrong))), with: harness.backend())
        #expect(configuration.isConfigurationError)
        #expect(configuration.failure?.appleStatus == 4_000_002)

        let limited = "705000000000013"
        harness.fake.register(FakeAppTransaction(id: limited, failures: [.init(httpStatus: 429, retryAfter: "600")]))
        let held = await harness.verify(
            .signedAppTransaction(try harness.sign(appPayload(harness, id: limited))), with: harness.backend())
        #expect(held.isUnavailable)
        #expect(held.failure?.rateLimited == true)
        #expect(held.failure?.appleStatus == 4_290_000)
        // The hold is Get App Transaction Info's: Get Transaction Info is not held back by it.
        let transaction = try harness.signedTransaction("1000000000000901")
        let confirmed = await harness.verify(.signedTransaction(transaction), with: harness.backend())
        #expect(confirmed.verdict?.outcome == .verified)
    }

    @Test func anAppTransactionWithoutAnAppTransactionIdIsJudgedOnTheDevicesCopy() async throws {
        let harness = try ServerAPIHarness()
        let jws = try harness.sign(appPayload(harness, id: nil))
        let verdict = try #require(await harness.verify(.signedAppTransaction(jws), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.source == .signedTransaction)
        #expect(verdict.attempts == 0)
        #expect(verdict.appTransaction?.appTransactionId == nil)
        #expect(verdict.appTransaction?.originalApplicationVersion == "1.0")
    }

    @Test func getAppTransactionInfoFindsTheAppTransactionByAnInAppTransactionOfTheCustomer() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(FakeAppTransaction(id: Self.id, originalApplicationVersion: "2.5"))
        harness.fake.register(FakeServerTransaction(id: "1000000000000950", appTransactionId: Self.id))
        let answer = await harness.client.appTransactionInfo(
            id: "1000000000000950", bundleId: ServerAPIHarness.bundleId, environment: .production,
            deadline: harness.deadline())
        let info = try answer.result.get()
        let payload = try harness.pki.verifier().verify(
            info.signedAppTransactionInfo, as: JWSAppTransactionPayload.self, signedDate: \.validationDateMs
        ).payload
        #expect(payload.appTransactionId == Self.id && payload.originalApplicationVersion == "2.5")
        // Not an id at all: Apple's 400 InvalidTransactionId.
        let invalid = await harness.client.appTransactionInfo(
            id: "abc", bundleId: ServerAPIHarness.bundleId, environment: .production, deadline: harness.deadline())
        guard case .failure(let error) = invalid.result else { Issue.record("abc was answered"); return }
        #expect(error.kind == .invalidTransactionId && error.errorCode == 4_000_006)
        // The signed transaction a device holds names its app transaction.
        let transaction = try harness.pki.verifier().verify(try harness.signedTransaction("1000000000000950"))
            .decode(JWSTransactionPayload.self)
        #expect(transaction.appTransactionId == Self.id)
    }
}
