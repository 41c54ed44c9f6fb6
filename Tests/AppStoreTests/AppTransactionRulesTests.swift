import ReceiptModel
import Testing

@testable import AppStore

/// `AppTransactionRules` as a table: the app transaction Apple's signature vouches for, the operator's policy, and
/// the verdict. A verified one carries the app transaction and never a transaction to credit.
@Suite struct AppTransactionRulesTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let app: VerifiedAppTransaction
        let policy: VerdictPolicy
        let reason: Reason?
        var testDescription: String { name }
    }

    static let allowed: Set<String> = ["com.example.game"]

    static func app(
        _ environment: AppStoreEnvironment, bundleId: String? = "com.example.game"
    ) -> VerifiedAppTransaction {
        VerifiedAppTransaction(
            appTransactionId: "705000000000001", bundleId: bundleId, appAppleId: 1_234_567_890,
            applicationVersion: "2.0", originalApplicationVersion: "1.0", originalPurchaseDateMs: 1_600_000_000_000,
            receiptCreationDateMs: 1_764_489_600_000, receiptType: environment.rawValue, originalPlatform: "iOS",
            versionExternalIdentifier: 7, environment: environment, signedDateMs: 1_764_489_600_000)
    }

    static let rows: [Row] = [
        Row(name: "a production app transaction of an allowed app is verified", app: app(.production),
            policy: VerdictPolicy(allowedBundleIds: allowed), reason: nil),
        Row(name: "a sandbox one is verified under SANDBOX_POLICY=accept", app: app(.sandbox),
            policy: VerdictPolicy(allowedBundleIds: allowed, sandboxPolicy: .accept), reason: nil),
        Row(name: "a sandbox one is sandbox_not_allowed under SANDBOX_POLICY=reject", app: app(.sandbox),
            policy: VerdictPolicy(allowedBundleIds: allowed, sandboxPolicy: .reject), reason: .sandboxNotAllowed),
        Row(name: "production passes SANDBOX_POLICY=reject", app: app(.production),
            policy: VerdictPolicy(allowedBundleIds: allowed, sandboxPolicy: .reject), reason: nil),
        Row(name: "another app's app transaction is bundle_mismatch", app: app(.production, bundleId: "com.other"),
            policy: VerdictPolicy(allowedBundleIds: allowed), reason: .bundleMismatch),
        Row(name: "no bundleId is bundle_mismatch", app: app(.production, bundleId: nil),
            policy: VerdictPolicy(allowedBundleIds: allowed), reason: .bundleMismatch),
        Row(name: "the bundle check comes before the sandbox policy", app: app(.sandbox, bundleId: "com.other"),
            policy: VerdictPolicy(allowedBundleIds: allowed, sandboxPolicy: .reject), reason: .bundleMismatch),
        Row(name: "APP_ACCOUNT_TOKEN_POLICY=require does not apply: an app transaction has no account token",
            app: app(.production),
            policy: VerdictPolicy(allowedBundleIds: allowed, appAccountTokenPolicy: .require), reason: nil),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        let verdict = AppTransactionRules.evaluate(row.app, policy: row.policy)
        #expect(verdict.transactions.isEmpty, "an app transaction never lists a transaction to credit")
        if let reason = row.reason {
            #expect(verdict.outcome == .rejected)
            #expect(verdict.reason == reason)
            #expect(verdict.appTransaction == nil)
            #expect(verdict.message?.isEmpty == false)
        } else {
            #expect(verdict.outcome == .verified && verdict.reason == nil)
            let carried = verdict.appTransaction
            #expect(carried?.appTransactionId == "705000000000001")
            #expect(carried?.originalApplicationVersion == "1.0" && carried?.applicationVersion == "2.0")
            #expect(carried?.originalPurchaseDateMs == 1_600_000_000_000)
            #expect(carried?.environment == row.app.environment && carried?.bundleId == row.app.bundleId)
            #expect(carried == row.app, "the verified app transaction is Apple's, unchanged")
        }
    }

    @Test func everyReasonTheRulesGiveHasARow() {
        let given = Set(Self.rows.compactMap(\.reason))
        #expect(given == [.bundleMismatch, .sandboxNotAllowed])
    }
}
