import Dispatch
import Foundation
@testable import Ledger
import LedgerRules
import Postgres
import Testing
import TestSupport

/// Round 5 (issue 41) through the real decoders and SQL: a status notification never swallows a refund; tokens
/// bind per environment; the backend's declaration of a token outweighs every claim and resolves the claims parked
/// for it; every `RESCIND_CONSENT` is recorded. The rules themselves are rows in `CreditingRulesTests` and
/// `OwnerRulesTests`; these prove the store feeds them and writes what they decide.
@Suite struct OwnersAndOrderTests {
    typealias F = LedgerFixtures
    static let day: Int64 = 86_400_000
    static let victimToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"

    /// A month of 300 gems (an item subscription's period).
    static func period(
        _ label: String, original: String = "o1", token: String? = nil, expires: Int64 = 30 * day
    ) -> [String: Any] {
        F.transaction(
            creditKey: label, originalTransactionId: original, productId: "monthly",
            credit: ["item": "gems", "amount": 300], expiresDateMs: expires, appAccountToken: token, purchaseDateMs: 0)
    }

    // MARK: 1. A status notification never swallows a refund

    @Test func aRefundDeliveredAfterALaterStatusNotificationTakesTheItemsBack() throws {
        let db = try LedgerDatabase("ledger_status_apart")
        let month = Self.period("p1")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [month]))
        // DID_CHANGE_RENEWAL_STATUS signed at 3,000 arrives first; the REFUND signed at 1,000 and its reversal signed
        // at 2,000 arrive after it (Apple's retries).
        var renewed = month
        renewed["expires_date_ms"] = 60 * Self.day
        try db.applyEvents(
            F.event(eventId: "status", type: "subscription_status", transaction: renewed, subscriptionStatus: 2,
                    signedDateMs: 3_000))
        let refund = try db.applyEvents(F.event(eventId: "refund", type: "debit", transaction: month, signedDateMs: 1_000))
        #expect(refund.staleEvents == 0)
        #expect(try db.user("u1").balance("gems") == 0)
        #expect(try db.purchase(F.key("p1"))?.state == "debited")
        try db.applyEvents(F.event(eventId: "reversal", type: "recredit", transaction: month, signedDateMs: 2_000))
        #expect(try db.user("u1").balance("gems") == 300)
        #expect(try db.purchase(F.key("p1"))?.state == "recredited")
        // An older status signed at 2,500 is stale among status events, and only there.
        let older = try db.applyEvents(
            F.event(eventId: "older-status", type: "subscription_status", transaction: month, signedDateMs: 2_500))
        #expect(older.staleEvents == 1)
        let row = try db.connection.execute(
            "SELECT last_event_signed_ms, last_status_signed_ms FROM purchases WHERE credit_key = $1",
            [.text(F.key("p1"))]
        ).rows[0]
        #expect(try row.optionalInt64("last_event_signed_ms") == 2_000)
        #expect(try row.optionalInt64("last_status_signed_ms") == 3_000)
    }

    // MARK: 3. Tokens per environment, and declared

    @Test func aSandboxClaimOfAVictimsTokenCapturesNoProductionPurchase() throws {
        let db = try LedgerDatabase("ledger_token_sandbox_capture")
        // A production renewal carrying the victim's token is waiting for its owner.
        let early = try db.applyEvents(
            F.event(eventId: "renewal-0", type: "credit", transaction: Self.period("p0", original: "po1", token: Self.victimToken)))
        #expect(early.parkedClaims == 1)
        // The attacker's modified client sets the victim's token on a free TestFlight purchase, credited first: it
        // links the token in the sandbox only, and resolves no production claim.
        let attacker = try db.applyResults(
            F.result(
                submissionId: "s-attacker", userId: "attacker",
                transactions: [Self.period("sandbox-p1", original: "so1", token: Self.victimToken)], environment: "Sandbox"))
        #expect(attacker.resolvedClaims == 0)
        #expect(try db.user("attacker").sandbox.balance("gems") == 300)
        #expect(try db.purchase(F.key("p0"))?.state == "pending_owner")
        // A later production renewal carrying the token waits too; the sandbox link does not decide.
        let parked = try db.applyEvents(
            F.event(eventId: "renewal-1", type: "credit", transaction: Self.period("p2", original: "po1", token: Self.victimToken)))
        #expect(parked.parkedClaims == 1)
        // The victim's own production purchase with their token is theirs, and resolves the waiting renewals.
        let victim = try db.applyResults(
            F.result(
                submissionId: "s-victim", userId: "victim",
                transactions: [Self.period("p1", original: "po1", token: Self.victimToken)]))
        #expect(victim.refusedClaims == 0)
        #expect(victim.resolvedClaims == 2)
        #expect(try db.user("victim").balance("gems") == 900)
        #expect(try db.user("attacker").balance("gems") == 0)
        let links = try db.connection.execute(
            "SELECT environment, user_id FROM owner_links WHERE kind = 'app_account_token' AND value = $1 ORDER BY 1",
            [.text(Self.victimToken)]
        ).rows.map { "\(try $0.string("environment")):\(try $0.string("user_id"))" }
        #expect(links == ["production:victim", "sandbox:attacker"])
    }

    @Test func aDeclaredTokenIsTheDeclaredUsersInEveryEnvironmentWhoeverClaimsIt() throws {
        let db = try LedgerDatabase("ledger_token_declared")
        let declared = try db.declare(Self.victimToken.uppercased(), for: "victim")
        #expect(declared.decision == .declared)
        // The attacker claims with the victim's token in production and in the sandbox: credited to the victim,
        // the attacker's claims refused and recorded; no link is written for a declared token.
        let summary = try db.applyResults(
            F.result(
                submissionId: "s1", userId: "attacker",
                transactions: [Self.period("p1", original: "po1", token: Self.victimToken)]),
            F.result(
                submissionId: "s2", userId: "attacker",
                transactions: [Self.period("p2", original: "so1", token: Self.victimToken)], environment: "Sandbox"))
        #expect(summary.refusedClaims == 2)
        #expect(try db.user("victim").balance("gems") == 300)
        #expect(try db.user("victim").sandbox.balance("gems") == 300)
        #expect(try db.user("attacker").balances.isEmpty && db.user("attacker").sandbox.balances.isEmpty)
        #expect(try db.purchase(F.key("p1"))?.refusedClaims.map(\.userId) == ["attacker"])
        #expect(try db.count("owner_links") == 0, "a refused claimant links nothing; a declared token needs no link")
        // Another declaration of the token is refused; the same one again changes nothing.
        #expect(try db.declare(Self.victimToken, for: "attacker").decision == .conflict)
        let again = try db.declare(Self.victimToken, for: "victim")
        #expect(again.decision == .alreadyDeclared)
        #expect(again.declaredAtMs == declared.declaredAtMs)
    }

    // MARK: 4. The declaration resolves what waits for the token

    @Test func aRenewalParkedAfterSetAppAccountTokenIsCreditedByTheDeclaration() throws {
        let db = try LedgerDatabase("ledger_token_declaration_resolves")
        let oldToken = "aaaaaaaa-0000-4000-8000-000000000001"
        let newToken = "bbbbbbbb-0000-4000-8000-000000000002"
        try db.applyResults(
            F.result(submissionId: "s1", userId: "u1", transactions: [Self.period("p1", token: oldToken)]))
        // Support moved the subscription to u2 with Set App Account Token: Apple signs its renewals with the new
        // token, which no result linked: they wait for the token's owner.
        let parked = try db.applyEvents(
            F.event(eventId: "renewal-2", type: "credit", transaction: Self.period("p2", token: newToken)),
            F.event(eventId: "renewal-3", type: "credit", transaction: Self.period("p3", token: newToken)))
        #expect(parked.parkedClaims == 2)
        #expect(try db.purchase(F.key("p2"))?.state == "pending_owner")
        let declared = try db.declare(newToken, for: "u2")
        #expect(declared.decision == .declared)
        #expect(declared.summary.resolvedClaims == 2)
        #expect(try db.count("pending_claims") == 0)
        #expect(try db.user("u2").balance("gems") == 600)
        #expect(try db.user("u1").balance("gems") == 300)
        #expect(try db.purchase(F.key("p3"))?.owner == "u2")
        // The next renewal finds the declared owner at once.
        let next = try db.applyEvents(
            F.event(eventId: "renewal-4", type: "credit", transaction: Self.period("p4", token: newToken)))
        #expect(next.parkedClaims == 0)
        #expect(try db.user("u2").balance("gems") == 900)
    }

    /// A batch parking a renewal for a token and the declaration of that token serialize on the token's advisory
    /// lock, whichever takes it first: the renewal is credited to the declared user either way.
    @Test(arguments: [true, false])
    func aDeclarationAndAParkingBatchSerialize(parkFirst: Bool) throws {
        let db = try LedgerDatabase("ledger_declaration_race_\(parkFirst ? "park" : "declare")")
        let token = "cccccccc-0000-4000-8000-000000000003"
        let second = try PostgresConnection(connectionString: db.connectionString)
        let observer = try PostgresConnection(connectionString: db.connectionString)
        let parking = db.append(
            [F.event(eventId: "renewal", type: "credit", transaction: Self.period("p1", token: token))],
            to: F.topics.events)
        let store = db.store
        let done = DispatchSemaphore(value: 0)
        let outcome = LockedOutcome()
        try db.connection.transaction { session throws(PostgresError) in
            if parkFirst {
                _ = try store.apply(parking, in: session, nowMs: 9_000)
            } else {
                _ = try store.declare(token: token, for: "u2", in: session, nowMs: 9_000)
            }
            DispatchQueue.global().async {
                do {
                    try second.transaction { other throws(PostgresError) in
                        if parkFirst {
                            _ = try store.declare(token: token, for: "u2", in: other, nowMs: 9_000)
                        } else {
                            _ = try store.apply(parking, in: other, nowMs: 9_000)
                        }
                    }
                } catch {
                    outcome.record(error)
                }
                done.signal()
            }
            var blocked = false
            for _ in 0..<1_000 where !blocked {
                blocked = try observer.execute(
                    "SELECT count(*) AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).rows[0].int64("waiting") > 0
                if !blocked { usleep(10_000) }
            }
            #expect(blocked, "the second transaction waits for the first one's lock on the token")
        }
        done.wait()
        #expect(outcome.error == nil)
        #expect(try db.user("u2").balance("gems") == 300)
        #expect(try db.count("pending_claims") == 0)
    }

    // MARK: Migration 8 keeps the links it can place

    @Test func migrationEightPlacesExistingLinksInTheEnvironmentsTheirPurchasesTell() throws {
        let name = "ledger_migration_8"
        let connectionString = try TestPostgresServer.freshDatabase(name)
        let connection = try PostgresConnection(connectionString: connectionString)
        defer { connection.close() }
        // The schema as version 5 left it, with links made before links had an environment.
        try connection.execute(
            "CREATE TABLE schema_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for migration in LedgerSchema.migrations where migration.version <= 5 {
            for statement in migration.statements { try connection.execute(statement) }
            try connection.execute("INSERT INTO schema_migrations (version) VALUES ($1)", [.int(migration.version)])
        }
        try connection.execute(
            """
            INSERT INTO purchases (credit_key, status, owner, original_transaction_id, updated_at_ms, last_event_signed_ms)
            VALUES ('apple:production:period:w1', 'credited', 'prod-user', 'po1', 0, 3000),
                   ('apple:sandbox:period:w2', 'credited', 'tester', 'so1', 0, NULL),
                   ('apple:production:period:w3', 'credited', 'both', 'po3', 0, NULL),
                   ('apple:sandbox:period:w4', 'credited', 'both', 'so4', 0, NULL)
            """)
        try connection.execute(
            """
            INSERT INTO owner_links (kind, value, user_id) VALUES
                ('original_transaction_id', 'po1', 'prod-user'), ('original_transaction_id', 'so1', 'tester'),
                ('app_account_token', 't-prod', 'prod-user'), ('app_account_token', 't-sandbox', 'tester'),
                ('app_account_token', 't-both', 'both'), ('app_account_token', 't-nobody', 'gone')
            """)
        #expect(try LedgerSchema.migrate(connection).contains(8))
        let links = try connection.execute(
            "SELECT kind, value, environment, user_id FROM owner_links ORDER BY value, environment"
        ).rows.map { "\(try $0.string("value"))@\(try $0.string("environment"))=\(try $0.string("user_id"))" }
        #expect(links == [
            "po1@production=prod-user", "so1@sandbox=tester", "t-both@production=both", "t-both@sandbox=both",
            "t-nobody@production=gone", "t-prod@production=prod-user", "t-sandbox@sandbox=tester",
        ])
        let statusOrder = try connection.execute(
            "SELECT last_status_signed_ms FROM purchases WHERE credit_key = 'apple:production:period:w1'"
        ).rows[0].optionalInt64("last_status_signed_ms")
        #expect(statusOrder == 3_000)
    }

    // MARK: 7. Every RESCIND_CONSENT is recorded

    @Test func everyRescindIsRecordedByItsEventId() throws {
        let db = try LedgerDatabase("ledger_rescind_recorded")
        var month = Self.period("p1")
        month["app_transaction_id"] = "705000000000001"
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [month]))
        try db.connection.execute("INSERT INTO consents (user_id, consented, updated_at_ms) VALUES ('u1', true, 1000)")
        func rescind(_ eventId: String, appTransactionId: String?) -> [UInt8] {
            var event = try! JSONSerialization.jsonObject(
                with: Data(F.event(eventId: eventId, type: "info", transaction: nil, signedDateMs: 2_000))) as! [String: Any]
            event["notification_type"] = "RESCIND_CONSENT"
            event["app_transaction_id"] = appTransactionId ?? NSNull()
            return F.json(event)
        }
        let summary = try db.applyEvents(
            rescind("rescind-1", appTransactionId: "705000000000001"), rescind("rescind-2", appTransactionId: nil),
            rescind("rescind-1", appTransactionId: "705000000000001"))
        #expect(summary.consentsWithdrawn == 1)
        let recorded = try db.connection.execute(
            "SELECT event_id, app_transaction_id, consents_withdrawn FROM consent_rescinds ORDER BY event_id"
        ).rows.map {
            "\(try $0.string("event_id")):\(try $0.optionalString("app_transaction_id") ?? "-"):\(try $0.int64("consents_withdrawn"))"
        }
        #expect(recorded == ["rescind-1:705000000000001:1", "rescind-2:-:0"])
    }
}

extension LedgerDatabase {
    /// `PUT /v1/users/{user_id}/app-account-token` as the API runs it: one transaction.
    func declare(_ token: String, for userId: String) throws -> TokenDeclarationOutcome {
        try connection.transaction { session throws(PostgresError) in
            try store.declare(token: token, for: userId, in: session, nowMs: 9_000)
        }
    }
}
