import Crypto
import Dispatch
import FakeAppStore
import Foundation
import ReceiptModel
import ServiceSupport
import SignedData
import Testing

@_spi(Testing) @testable import AppStore
import TestPKI
import TestSupport

/// The Server API backend through `ReceiptVerifier` (the verdict rules, retries) against the in-process fake:
/// signed transactions, transaction ids and legacy receipts.
@Suite(.serialized) struct ServerAPIBackendTests {
    // MARK: signed_transaction

    @Test func aSignedTransactionIsVerifiedLocallyWhenNotConfirmed() async throws {
        let harness = try ServerAPIHarness()
        let jws = try harness.signedTransaction("1000000000000101")
        let verdict = try #require(
            await harness.verify(.signedTransaction(jws), with: harness.backend(withClient: false)).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.source == .signedTransaction)
        #expect(verdict.attempts == 0)
        #expect(verdict.environment == .production)
        #expect(verdict.bundleId == ServerAPIHarness.bundleId)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:production:1000000000000101"])
        #expect(verdict.transactions.first?.productId == "gems_100")
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000101") == (0, 0))
        // Without a client, "confirm" cannot be honoured: the source says what the verdict rests on.
        #expect(harness.backend(confirm: true, withClient: false).source(for: .signedTransaction(jws)) == .signedTransaction)
        #expect(harness.backend(confirm: true).source(for: .signedTransaction(jws)) == .serverAPI)
    }

    @Test(arguments: TestSigningPKI.Defect.allCases)
    func everyBrokenSignatureOrChainIsRejectedAsInvalidSignature(defect: TestSigningPKI.Defect) async throws {
        let harness = try ServerAPIHarness()
        let jws = try harness.sign(harness.payload(id: "1000000000000102"), defect: defect)
        let expected = #expect(throws: SignedDataError.self) { try harness.pki.verifier().verify(jws) }
        for backend in [harness.backend(withClient: false), harness.backend(confirm: true)] {
            let verdict = try #require(await harness.verify(.signedTransaction(jws), with: backend).verdict)
            #expect(verdict.outcome == .rejected, "\(defect)")
            #expect(verdict.reason == .invalidSignature, "\(defect)")
            #expect(verdict.source == .signedTransaction)
            #expect(verdict.transactions.isEmpty)
            #expect(verdict.message == "the signed transaction was refused: \(expected?.message ?? "?")", "\(defect)")
        }
        // Nothing refused locally is ever sent to Apple.
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000102") == (0, 0))
    }

    @Test func textThatIsNotASignedTransactionIsInvalidSignature() async throws {
        let harness = try ServerAPIHarness()
        for text in ["a.b.c", "eyJhbGciOiJFUzI1NiJ9.e30.AAAA", ""] {
            let verdict = try #require(
                await harness.verify(.signedTransaction(text), with: harness.backend(withClient: false)).verdict)
            #expect(verdict.reason == .invalidSignature, "\(text)")
        }
    }

    @Test(arguments: ["Xcode", "LocalTesting"])
    func storeKitTestingDataIsNeverAccepted(environment: String) async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .accept)
        let jws = try harness.sign(harness.payload(id: "1000000000000103", environment: environment))
        let verdict = try #require(await harness.verify(.signedTransaction(jws), with: harness.backend()).verdict)
        #expect(verdict.reason == .sandboxNotAllowed)
        #expect(verdict.message?.contains(environment) == true)
        #expect(verdict.attempts == 0)
    }

    @Test func aConfirmedTransactionIsJudgedOnApplesCurrentStateAndARefundMakesItNotCreditable() async throws {
        let harness = try ServerAPIHarness()
        let id = "1000000000000104"
        let jws = try harness.signedTransaction(id)
        let backend = harness.backend(confirm: true)
        let before = try #require(await harness.verify(.signedTransaction(jws), with: backend).verdict)
        #expect(before.outcome == .verified)
        #expect(before.source == .serverAPI)
        #expect(before.attempts == 1)
        #expect(before.transactions.map(\.creditKey) == ["apple:production:\(id)"])
        #expect(before.transactions.allSatisfy { $0.creditable })
        #expect(before.transactions.first?.productType == .consumable)
        // Refunded after the device signed it: the device's JWS still says nothing, Apple's answer does.
        harness.fake.register(
            FakeServerTransaction(id: id, revocationDateMs: 1_700_000_100_000, revocationReason: 1, revocationType: "REFUND_FULL"))
        let after = try #require(
            await harness.verify(
                .signedTransaction(jws), with: backend, expectations: VerificationExpectations(transactionId: id)
            ).verdict)
        #expect(after.outcome == .rejected)
        #expect(after.reason == .refunded)
        #expect(after.source == .serverAPI)
        #expect(after.transactions.first?.cancellationDateMs == 1_700_000_100_000)
        #expect(after.transactions.first?.revocationType == "REFUND_FULL")
        #expect(after.transactions.allSatisfy { !$0.creditable })
        // Unconfirmed, the same JWS is still a valid purchase: that is what SIGNED_TRANSACTION_CONFIRM=never trades.
        let local = try #require(await harness.verify(.signedTransaction(jws), with: harness.backend(confirm: false)).verdict)
        #expect(local.outcome == .verified && local.source == .signedTransaction)
        #expect(harness.fake.serverAPICalls(transaction: id) == (2, 0))
    }

    @Test func aRefundThatCannotBeReadFailsClosed() async throws {
        let harness = try ServerAPIHarness()
        let id = "1000000000000105"
        harness.fake.register(FakeServerTransaction(id: id, revocationDateUnreadable: true))
        let jws = try harness.signedTransaction(id)
        for expectations in [VerificationExpectations(transactionId: id), VerificationExpectations()] {
            for backend in [harness.backend(confirm: true), harness.backend(confirm: false)] {
                let verdict = try #require(
                    await harness.verify(.signedTransaction(jws), with: backend, expectations: expectations).verdict)
                #expect(verdict.outcome == .rejected)
                #expect(!verdict.transactions.contains { $0.transactionId == id && $0.creditable })
            }
        }
    }

    @Test func theAppAccountTokenApplesDataCarriesMustBeTheExpectedOne() async throws {
        let harness = try ServerAPIHarness()
        let id = "1000000000000108"
        let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
        harness.fake.register(FakeServerTransaction(id: id, appAccountToken: token))
        let jws = try harness.signedTransaction(id)
        for backend in [harness.backend(confirm: true), harness.backend(confirm: false)] {
            let matching = try #require(
                await harness.verify(
                    .signedTransaction(jws), with: backend,
                    expectations: VerificationExpectations(appAccountToken: token.lowercased())
                ).verdict)
            #expect(matching.outcome == .verified)
            #expect(matching.transactions.first?.appAccountToken == token.lowercased())
            let other = try #require(
                await harness.verify(
                    .signedTransaction(jws), with: backend,
                    expectations: VerificationExpectations(appAccountToken: "00000000-0000-4000-8000-000000000000")
                ).verdict)
            #expect(other.outcome == .rejected && other.reason == .accountMismatch)
        }
        let byId = try #require(
            await harness.verify(
                .transactionId(id), with: harness.backend(),
                expectations: VerificationExpectations(transactionId: id, appAccountToken: UUID().uuidString)
            ).verdict)
        #expect(byId.reason == .accountMismatch)
    }

    @Test func aConfirmationIsNotSpentOnWhatTheRulesRejectLocally() async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .reject)
        let sandbox = try harness.sign(harness.payload(id: "1000000000000106", environment: "Sandbox"))
        let rejected = try #require(await harness.verify(.signedTransaction(sandbox), with: harness.backend()).verdict)
        #expect(rejected.reason == .sandboxNotAllowed)
        #expect(rejected.environment == .sandbox)
        #expect(rejected.attempts == 0)
        let otherApp = try harness.sign(harness.payload(id: "1000000000000106", bundleId: "com.example.other"))
        let mismatch = try #require(await harness.verify(.signedTransaction(otherApp), with: harness.backend()).verdict)
        #expect(mismatch.reason == .bundleMismatch)
        #expect(mismatch.attempts == 0)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000106") == (0, 0))
    }

    @Test func aConfirmedTransactionAppleDoesNotKnowIsNotFound() async throws {
        let harness = try ServerAPIHarness()
        // Validly signed, but Apple's sandbox does not know it (the fake's numeric ids are production ones).
        let jws = try harness.sign(harness.payload(id: "1000000000000107", environment: "Sandbox"))
        let verdict = try #require(await harness.verify(.signedTransaction(jws), with: harness.backend()).verdict)
        #expect(verdict.reason == .transactionNotFound)
        #expect(verdict.appleStatus == 4_040_010)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000107") == (0, 1))
    }

    // MARK: transaction_id

    @Test func aTransactionIdIsLookedUpInProductionFirst() async throws {
        let harness = try ServerAPIHarness()
        let verdict = try #require(await harness.verify(.transactionId("1000000000000201"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.source == .serverAPI)
        #expect(verdict.attempts == 1)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:production:1000000000000201"])
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000201") == (1, 0))
    }

    @Test func aSandboxTransactionIdIsFoundAfterProductionSaysNotFound() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(FakeServerTransaction(id: "1000000000000202", environment: "Sandbox"))
        let verdict = try #require(await harness.verify(.transactionId("1000000000000202"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .sandbox)
        #expect(verdict.attempts == 2)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:sandbox:1000000000000202"])
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000202") == (1, 1))
    }

    @Test func anAppWithoutAReleaseIsLookedUpInTheSandboxAfterAProduction401() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeServerTransaction(id: "1000000000000203", environment: "Sandbox", productionUnauthorized: true))
        let verdict = try #require(await harness.verify(.transactionId("1000000000000203"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .sandbox)
        // Production: the 401, and the retry with a fresh token; then the sandbox.
        #expect(verdict.attempts == 3)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000203") == (2, 1))
    }

    @Test func aProduction401WithoutASandboxAnswerIsAConfigurationError() async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .reject)
        harness.fake.register(
            FakeServerTransaction(id: "1000000000000204", environment: "Sandbox", productionUnauthorized: true))
        let outcome = await harness.verify(.transactionId("1000000000000204"), with: harness.backend())
        let failure = try #require(outcome.failure)
        #expect(outcome.isConfigurationError)
        #expect(failure.source == .serverAPI)
        #expect(failure.message.contains("APPLE_KEY_ID"))
        #expect(failure.message.contains("SANDBOX_POLICY=reject"))
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000204") == (2, 0))
    }

    @Test func anIdNoAppHasAnywhereIsTransactionNotFound() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(FakeServerTransaction(id: "1000000000000205", bundleId: "com.example.other"))
        let verdict = try #require(await harness.verify(.transactionId("1000000000000205"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .rejected)
        #expect(verdict.reason == .transactionNotFound)
        #expect(verdict.appleStatus == 4_040_010)
        #expect(verdict.environment == nil)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000205") == (1, 1))
        // Digits Apple calls no transaction id (the fake: more than 19 digits): 4000006, and no other call.
        let applesNo = try #require(
            await harness.verify(.transactionId("18446744073709551615"), with: harness.backend()).verdict)
        #expect(applesNo.reason == .transactionNotFound)
        #expect(applesNo.appleStatus == 4_000_006)
        #expect(applesNo.attempts == 1)
        // Text that is no Apple id at all is refused without asking Apple.
        let notAnId = try #require(await harness.verify(.transactionId("abc"), with: harness.backend()).verdict)
        #expect(notAnId.reason == .transactionNotFound)
        #expect(notAnId.appleStatus == nil)
        #expect(notAnId.attempts == 0)
        #expect(notAnId.message?.contains("Apple was not asked") == true)
        #expect(harness.fake.serverAPICalls(transaction: "abc") == (0, 0))
    }

    @Test func underSandboxPolicyRejectTheSandboxIsNeverAsked() async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .reject)
        harness.fake.register(FakeServerTransaction(id: "1000000000000206", environment: "Sandbox"))
        let verdict = try #require(await harness.verify(.transactionId("1000000000000206"), with: harness.backend()).verdict)
        #expect(verdict.reason == .transactionNotFound)
        #expect(verdict.message?.contains("SANDBOX_POLICY=reject") == true)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000206") == (1, 0))
    }

    @Test func eachAllowedAppIsAskedAboutATransactionId() async throws {
        let harness = try ServerAPIHarness(allowedBundleIds: ["com.example.a", "com.example.b"])
        harness.fake.register(FakeServerTransaction(id: "1000000000000207", bundleId: "com.example.b"))
        let verdict = try #require(await harness.verify(.transactionId("1000000000000207"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.bundleId == "com.example.b")
        #expect(verdict.attempts == 2)
    }

    @Test func withoutCredentialsATransactionIdIsAConfigurationErrorNamingTheSettings() async throws {
        let harness = try ServerAPIHarness()
        let outcome = await harness.verify(.transactionId("1000000000000208"), with: harness.backend(withClient: false))
        #expect(outcome.isConfigurationError)
        let message = try #require(outcome.failure?.message)
        for setting in ["APPLE_ISSUER_ID", "APPLE_KEY_ID", "APPLE_PRIVATE_KEY_FILE"] { #expect(message.contains(setting)) }
        #expect(!message.contains("APPLE_SHARED_SECRET"))
    }

    // MARK: what junk transaction ids cost (TransactionNotFoundMemory)

    @Test func anIdNoAllowedAppHasCostsOneCallPerAppAndEnvironmentOnceThenNothing() async throws {
        let harness = try ServerAPIHarness(allowedBundleIds: ["com.example.a", "com.example.b"])
        let metrics = MetricsRegistry()
        let backend = harness.backend(metrics: metrics)
        let id = "1000000000000801"
        harness.fake.register(FakeServerTransaction(id: id, bundleId: "com.example.other"))
        let first = try #require(await harness.verify(.transactionId(id), with: backend).verdict)
        #expect(first.reason == .transactionNotFound)
        #expect(first.attempts == 4)
        #expect(harness.fake.serverAPICalls(transaction: id) == (2, 2))
        // The same junk id again (another submission of it): Apple's answers of minutes ago, no call.
        for _ in 0..<3 {
            let again = try #require(await harness.verify(.transactionId(id), with: backend).verdict)
            #expect(again.outcome == .rejected && again.reason == .transactionNotFound)
            #expect(again.appleStatus == 4_040_010)
            #expect(again.attempts == 0)
            #expect(again.message?.contains("4 of these answers remembered") == true)
        }
        #expect(harness.fake.serverAPICalls(transaction: id) == (2, 2))
        let text = metrics.render()
        #expect(text.contains(#"appstore_server_api_not_found_memory_total{result="recalled"} 12"#))
        #expect(text.contains(#"appstore_server_api_not_found_memory_total{result="remembered"} 4"#))
        #expect(text.contains("appstore_server_api_not_found_memory_entries 4"))
    }

    @Test func aRememberedNotFoundOfOneAppNeverHidesTheAppOrEnvironmentThatHasThePurchase() async throws {
        let harness = try ServerAPIHarness(allowedBundleIds: ["com.example.a", "com.example.b"])
        let backend = harness.backend()
        // Production, app b: app a's "not found" is remembered, app b is asked every time and finds it.
        let inB = "1000000000000802"
        harness.fake.register(FakeServerTransaction(id: inB, bundleId: "com.example.b"))
        for round in 1...2 {
            let verdict = try #require(await harness.verify(.transactionId(inB), with: backend).verdict)
            #expect(verdict.outcome == .verified && verdict.bundleId == "com.example.b")
            #expect(verdict.attempts == (round == 1 ? 2 : 1))
        }
        #expect(harness.fake.serverAPICalls(transaction: inB) == (3, 0))
        // Sandbox, app a: both production answers are remembered, the sandbox is still asked and finds it.
        let inSandbox = "1000000000000803"
        harness.fake.register(FakeServerTransaction(id: inSandbox, environment: "Sandbox", bundleId: "com.example.a"))
        for round in 1...2 {
            let verdict = try #require(await harness.verify(.transactionId(inSandbox), with: backend).verdict)
            #expect(verdict.outcome == .verified && verdict.environment == .sandbox)
            #expect(verdict.attempts == (round == 1 ? 3 : 1))
        }
        #expect(harness.fake.serverAPICalls(transaction: inSandbox) == (2, 2))
    }

    @Test func onlyApplesDefinitiveNotFoundIsRememberedNeverAFailureOrA401() async throws {
        let harness = try ServerAPIHarness()
        let backend = harness.backend()
        // Three 5xx answers end the round without a verdict; the next submission asks production again and finds it.
        let flaky = "1000000000000804"
        harness.fake.register(
            FakeServerTransaction(
                id: flaky, failures: [.init(httpStatus: 500, errorCode: 5_000_001, environment: "Production", times: 3)]))
        #expect(await harness.verify(.transactionId(flaky), with: backend).isUnavailable)
        #expect(try #require(await harness.verify(.transactionId(flaky), with: backend).verdict).outcome == .verified)
        #expect(harness.fake.serverAPICalls(transaction: flaky) == (4, 0))
        // An app without a release: production's 401 is asked again every time (a release may come any minute).
        let unreleased = "1000000000000805"
        harness.fake.register(
            FakeServerTransaction(id: unreleased, environment: "Sandbox", productionUnauthorized: true))
        for _ in 1...2 {
            #expect(try #require(await harness.verify(.transactionId(unreleased), with: backend).verdict).outcome
                    == .verified)
        }
        #expect(harness.fake.serverAPICalls(transaction: unreleased) == (4, 2))
        #expect(backend.notFoundMemory.count == 0)
    }

    @Test func aRetryInTheRoundAsksOnlyWhatAppleHasNotAnsweredYet() async throws {
        let harness = try ServerAPIHarness()
        let id = "1000000000000806"
        // Production: not found. The sandbox has it, but first answers 500.
        harness.fake.register(
            FakeServerTransaction(
                id: id, environment: "Sandbox",
                failures: [.init(httpStatus: 500, errorCode: 5_000_001, environment: "Sandbox", times: 1)]))
        let verdict = try #require(await harness.verify(.transactionId(id), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified && verdict.environment == .sandbox)
        // Without the memory the retry would ask production again: (2, 2).
        #expect(harness.fake.serverAPICalls(transaction: id) == (1, 2))
        #expect(verdict.attempts == 3)
    }

    @Test func rememberedAnswersExpireAfterTheirTTLAndCanBeSwitchedOff() async throws {
        let harness = try ServerAPIHarness()
        let clock = ManualClock()
        let backend = harness.backend(
            notFoundMemory: TransactionNotFoundMemory.Limits(ttl: .seconds(60)), clock: clock)
        let id = "1000000000000807"
        harness.fake.register(FakeServerTransaction(id: id, bundleId: "com.example.other"))
        _ = await harness.verify(.transactionId(id), with: backend)
        clock.advance(by: .seconds(59))
        _ = await harness.verify(.transactionId(id), with: backend)
        #expect(harness.fake.serverAPICalls(transaction: id) == (1, 1))
        clock.advance(by: .seconds(1))
        let afterTTL = try #require(await harness.verify(.transactionId(id), with: backend).verdict)
        #expect(afterTTL.reason == .transactionNotFound && afterTTL.attempts == 2)
        #expect(harness.fake.serverAPICalls(transaction: id) == (2, 2))

        let off = harness.backend(notFoundMemory: .disabled)
        for _ in 1...2 { _ = await harness.verify(.transactionId(id), with: off) }
        #expect(harness.fake.serverAPICalls(transaction: id) == (4, 4))
    }

    // MARK: Apple's failures through the verifier's rounds

    @Test func aRetryableAnswerIsRetriedWithinTheRound() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeServerTransaction(id: "1000000000000301", failures: [.init(httpStatus: 500, errorCode: 5_000_001, times: 2)]))
        let verdict = try #require(await harness.verify(.transactionId("1000000000000301"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.attempts == 3)
    }

    @Test func aRequestAppleCallsWrongIsAConfigurationErrorWithItsCode() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeServerTransaction(id: "1000000000000302", failures: [.init(httpStatus: 400, errorCode: 4_000_002)]))
        let outcome = await harness.verify(.transactionId("1000000000000302"), with: harness.backend())
        #expect(outcome.isConfigurationError)
        #expect(outcome.failure?.message.contains("errorCode 4000002") == true)
        #expect(outcome.failure?.appleStatus == 4_000_002)
    }

    @Test func aLongRateLimitHoldEndsTheRoundAsRateLimitedAndLaterCallsSendNothing() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeServerTransaction(id: "1000000000000303", failures: [.init(httpStatus: 429, retryAfter: "600")]))
        let first = await harness.verify(.transactionId("1000000000000303"), with: harness.backend())
        let failure = try #require(first.failure)
        #expect(first.isUnavailable)
        #expect(failure.rateLimited)
        #expect(failure.appleStatus == 4_290_000)
        #expect(failure.attempts == 1)
        let second = await harness.verify(.transactionId("1000000000000304"), with: harness.backend())
        #expect(second.failure?.rateLimited == true)
        #expect(second.failure?.attempts == 0)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000304") == (0, 0))
        // Signed transactions still verify locally when not confirmed: the hold is the API's only.
        let local = try harness.signedTransaction("1000000000000305")
        #expect(await harness.verify(.signedTransaction(local), with: harness.backend(confirm: false)).verdict?.outcome
                == .verified)
    }

    @Test func aShortRateLimitHoldIsWaitedOutWithinTheRound() async throws {
        let harness = try ServerAPIHarness()
        harness.fake.register(
            FakeServerTransaction(id: "1000000000000306", failures: [.init(httpStatus: 429, retryAfter: "1")]))
        let started = ContinuousClock.now
        let verdict = try #require(await harness.verify(.transactionId("1000000000000306"), with: harness.backend()).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.attempts == 2)
        #expect(ContinuousClock.now - started >= .milliseconds(900))
    }

    // MARK: receipt_data (RECEIPT_BACKEND=server-api)

    @Test func aSignedReceiptIsCheckedThenItsHistoryReadAndVerified() async throws {
        let harness = try ServerAPIHarness()
        let receiptPKI = try TestSigningPKI.mint()
        for (index, id) in ["1000000000000401", "1000000000000402", "1000000000000403"].enumerated() {
            harness.fake.register(
                FakeServerTransaction(id: id, purchaseDateMs: 1_700_000_000_000 + Int64(index), customer: "c4"))
        }
        let receipt = try MintedReceipt.base64(
            pki: receiptPKI, bundleId: ServerAPIHarness.bundleId,
            transactionIds: ["1000000000000401", "1000000000000402"])
        let backend = harness.backend(receiptRoots: [receiptPKI.rootCertificate])
        let all = try #require(await harness.verify(.receipt(receipt), with: backend).verdict)
        #expect(all.outcome == .verified)
        #expect(all.source == .serverAPI)
        #expect(all.attempts == 1)
        // Apple's history holds the purchase made after the receipt was issued too.
        // The receipt's own purchases, as verifyReceipt's in_app ...
        #expect(Set(all.transactions.map(\.transactionId)) == ["1000000000000401", "1000000000000402"])
        #expect(all.transactions.allSatisfy { $0.creditKey == "apple:production:\($0.transactionId)" && $0.creditable })
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000401") == (1, 0))
        // ... and Apple's history holds the purchase made after the receipt was issued (latest_receipt_info).
        let later = try #require(
            await harness.verify(
                .receipt(receipt), with: backend,
                expectations: VerificationExpectations(transactionId: "1000000000000403")
            ).verdict)
        #expect(later.outcome == .verified && later.transactions.map(\.transactionId) == ["1000000000000403"])
        let expected = try #require(
            await harness.verify(
                .receipt(receipt), with: backend,
                expectations: VerificationExpectations(transactionId: "1000000000000402")
            ).verdict)
        #expect(expected.transactions.map(\.transactionId) == ["1000000000000402"])
    }

    @Test func aLongHistoryIsPagedAndPagingStopsOnceTheExpectedTransactionIsFound() async throws {
        let harness = try ServerAPIHarness()
        let receiptPKI = try TestSigningPKI.mint()
        for index in 0..<45 {
            harness.fake.register(
                FakeServerTransaction(
                    id: String(1_000_000_000_000_500 + index), purchaseDateMs: 1_700_000_000_000 + Int64(index),
                    customer: "c5"))
        }
        let receipt = try MintedReceipt.base64(
            pki: receiptPKI, bundleId: ServerAPIHarness.bundleId, transactionIds: ["1000000000000500"])
        let backend = harness.backend(receiptRoots: [receiptPKI.rootCertificate])
        let all = try #require(await harness.verify(.receipt(receipt), with: backend).verdict)
        #expect(all.transactions.map(\.transactionId) == ["1000000000000500"])
        #expect(all.attempts == 3)
        // Newest first: the most recent purchase is on the first page, no more pages are read.
        let recent = try #require(
            await harness.verify(
                .receipt(receipt), with: backend,
                expectations: VerificationExpectations(transactionId: "1000000000000544")
            ).verdict)
        #expect(recent.outcome == .verified && recent.attempts == 1)
        // With a page limit, the verdict rests on the pages read (here without the receipt's own purchase: Apple's
        // current view, the 20 newest, is what is listed).
        let limited = try #require(
            await harness.verify(.receipt(receipt), with: harness.backend(receiptRoots: [receiptPKI.rootCertificate],
                                                                           maxHistoryPages: 1)).verdict)
        #expect(limited.transactions.count == 20)
    }

    @Test func aReceiptFailingItsSignatureOrNotAReceiptIsRejectedWithoutAskingApple() async throws {
        let harness = try ServerAPIHarness()
        let trusted = try TestSigningPKI.mint()
        let forged = try MintedReceipt.base64(
            pki: try TestSigningPKI.mint(), bundleId: ServerAPIHarness.bundleId, transactionIds: ["1000000000000601"])
        let backend = harness.backend(receiptRoots: [trusted.rootCertificate])
        let refused = try #require(await harness.verify(.receipt(forged), with: backend).verdict)
        #expect(refused.reason == .invalidSignature)
        #expect(refused.message?.hasPrefix("the receipt was refused:") == true)
        #expect(refused.attempts == 0)
        let garbage = try #require(await harness.verify(.receipt("AAAA"), with: backend).verdict)
        #expect(garbage.reason == .invalidReceipt)
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000601") == (0, 0))
    }

    @Test func aReceiptWithoutPurchasesOrOfAnotherAppIsJudgedLocally() async throws {
        let harness = try ServerAPIHarness(sandboxPolicy: .reject)
        let pki = try TestSigningPKI.mint()
        let backend = harness.backend(receiptRoots: [pki.rootCertificate])
        let empty = try MintedReceipt.base64(pki: pki, bundleId: ServerAPIHarness.bundleId, transactionIds: [])
        #expect(await harness.verify(.receipt(empty), with: backend).verdict?.reason == .noPurchases)
        let other = try MintedReceipt.base64(pki: pki, bundleId: "com.example.other", transactionIds: ["1"])
        #expect(await harness.verify(.receipt(other), with: backend).verdict?.reason == .bundleMismatch)
        let sandbox = try MintedReceipt.base64(
            pki: pki, bundleId: ServerAPIHarness.bundleId, receiptType: "ProductionSandbox", transactionIds: ["2"])
        let sandboxVerdict = try #require(await harness.verify(.receipt(sandbox), with: backend).verdict)
        #expect(sandboxVerdict.reason == .sandboxNotAllowed)
        #expect(sandboxVerdict.attempts == 0)
        #expect(harness.fake.serverAPICalls(transaction: "2") == (0, 0))
    }

    @Test func aSandboxReceiptsHistoryIsAskedInTheSandboxOnly() async throws {
        let harness = try ServerAPIHarness()
        let pki = try TestSigningPKI.mint()
        harness.fake.register(FakeServerTransaction(id: "1000000000000701", environment: "Sandbox"))
        let receipt = try MintedReceipt.base64(
            pki: pki, bundleId: ServerAPIHarness.bundleId, receiptType: "ProductionSandbox",
            transactionIds: ["1000000000000701"])
        let verdict = try #require(
            await harness.verify(.receipt(receipt), with: harness.backend(receiptRoots: [pki.rootCertificate])).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.environment == .sandbox)
        #expect(verdict.transactions.map(\.creditKey) == ["apple:sandbox:1000000000000701"])
        #expect(harness.fake.serverAPICalls(transaction: "1000000000000701") == (0, 1))
    }

    @Test func aRealProductionReceiptIsCheckedAgainstAppleIncRootAtItsCreationDate() async throws {
        let bundle = "org.getpure.pure-iphone"
        let harness = try ServerAPIHarness(allowedBundleIds: [bundle])
        for id in ["340001196262039", "340001237736590"] {
            harness.fake.register(
                FakeServerTransaction(
                    id: id, bundleId: bundle, productId: "org.getpure.pure.Week",
                    type: "Auto-Renewable Subscription", originalId: "340001196262039"))
        }
        let appleIncRoot = try Certificate.load(path: try #require(AppleRootCertificates.defaultReceiptRootsPath))
        let receipt = try MintedReceipt.signedDataFixture("receipt-production.b64")
        let verdict = try #require(
            await harness.verify(.receipt(receipt), with: harness.backend(receiptRoots: appleIncRoot)).verdict)
        #expect(verdict.outcome == .verified)
        #expect(verdict.bundleId == bundle)
        #expect(Set(verdict.transactions.map(\.transactionId)) == ["340001196262039", "340001237736590"])
        // The receipt's first in-app transaction is the one asked about, in production (the receipt's own type).
        #expect(harness.fake.serverAPICalls(transaction: "340001196262039") == (1, 0))
        // The same receipt under another root is refused before any call.
        let g3 = try Certificate.load(path: try #require(AppleRootCertificates.defaultSignedDataRootsPath))
        let refused = try #require(
            await harness.verify(.receipt(receipt), with: harness.backend(receiptRoots: g3)).verdict)
        #expect(refused.reason == .invalidSignature)
        #expect(harness.fake.serverAPICalls(transaction: "340001196262039") == (1, 0))
    }

    // MARK: One purchase, three proofs

    @Test func theSamePurchaseHasTheSameCreditKeyWhicheverSourceVerifiedIt() async throws {
        let harness = try ServerAPIHarness()
        let id = "1000000000000801"
        let verifyReceipt = VerifyReceiptBackend(
            client: harness.http,
            endpoints: .init(production: harness.fake.productionURL, sandbox: harness.fake.sandboxURL),
            sharedSecret: nil)
        let router = BackendRouter(verifyReceipt: verifyReceipt, serverAPI: harness.backend(), receiptBackend: .verifyReceipt)
        let receipt = FakeReceipt.valid(transactions: [FakeTransaction(id: id, product: "gems_100")])
        let proofs: [PurchaseProof] = [.receipt(receipt), .signedTransaction(try harness.signedTransaction(id)), .transactionId(id)]
        var sources: [VerificationSource] = []
        var keys: Set<String> = []
        for proof in proofs {
            let verdict = try #require(
                await harness.verify(proof, with: router, expectations: VerificationExpectations(transactionId: id))
                    .verdict)
            #expect(verdict.outcome == .verified, "\(proof.fieldName)")
            #expect(verdict.transactions.map(\.productId) == ["gems_100"])
            sources.append(verdict.source)
            keys.formUnion(verdict.transactions.map(\.creditKey))
        }
        #expect(sources == [.verifyReceipt, .serverAPI, .serverAPI])
        #expect(keys == ["apple:production:\(id)"])
        #expect(router.source(for: .receipt(receipt)) == .verifyReceipt)
        let serverAPIReceipts = BackendRouter(
            verifyReceipt: verifyReceipt, serverAPI: harness.backend(), receiptBackend: .serverAPI)
        #expect(serverAPIReceipts.source(for: .receipt(receipt)) == .serverAPI)
    }
}
