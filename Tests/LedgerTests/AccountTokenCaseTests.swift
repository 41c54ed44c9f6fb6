import Foundation
@testable import Ledger
import LedgerRules
import Postgres
import Testing

/// An `app_account_token` is one token however a producer cased it (UUIDs compare case-insensitively, RFC 9562):
/// through the real decoders and SQL, a result a backend wrote with the token upper-cased and an event the pipeline
/// wrote lower-cased find the same owner, wake the same parked claims and meet the same declaration; schema version 9
/// puts the tokens already stored in that form, keeping one link where two collide, and the claims it un-strands are
/// applied at start (`LedgerStore.resolveStrandedClaims`).
@Suite struct AccountTokenCaseTests {
    typealias F = LedgerFixtures
    static let upper = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
    static var lower: String { upper.lowercased() }

    static func gems(_ label: String, token: String?) -> [String: Any] {
        F.transaction(creditKey: label, originalTransactionId: "o-" + label, appAccountToken: token)
    }

    func links(_ db: LedgerDatabase) throws -> [String] {
        try db.connection.execute(
            "SELECT environment, value, user_id FROM owner_links WHERE kind = 'app_account_token' ORDER BY 1, 2, 3"
        ).rows.map { row throws(PostgresError) in
            "\(try row.string("environment")) \(try row.string("value")) \(try row.string("user_id"))"
        }
    }

    @Test func aTokenIsOneTokenHoweverItWasCased() throws {
        let db = try LedgerDatabase("ledger_token_case")
        // A purchase event the pipeline wrote (token lower-cased) waits for the token's owner.
        let parked = try db.applyEvents(
            F.event(eventId: "e1", type: "credit", transaction: Self.gems("p2", token: Self.lower)))
        #expect(parked.parkedClaims == 1)
        // u1's result, written by the backend itself, carries the token upper-cased: it is the same token, its link
        // wakes the parked claim, and the link is stored in the one form.
        let applied = try db.applyResults(
            F.result(submissionId: "s1", userId: "u1", transactions: [Self.gems("p1", token: Self.upper)]))
        #expect(applied.resolvedClaims == 1)
        #expect(try db.user("u1").balance("gems") == 200)
        #expect(try links(db) == ["production \(Self.lower) u1"])
        // Another user's claim with the token cased a third way is the token's owner's purchase: u2 is refused.
        let mixed = "7e3FB20b-4Cdb-47cc-936D-99d65f608138"
        let claimed = try db.applyResults(
            F.result(submissionId: "s2", userId: "u2", transactions: [Self.gems("p3", token: mixed)]))
        #expect(claimed.refusedClaims == 1)
        #expect(try db.user("u1").balance("gems") == 300)
        #expect(try db.user("u2").balances.isEmpty)
        #expect(try links(db) == ["production \(Self.lower) u1"], "no second link for the same token")

        // A result naming no user parks its claim on the token in the one form; a declaration cased otherwise wakes it.
        let other = "AAAAAAAA-0000-4000-8000-00000000000B"
        try db.applyResults(F.result(submissionId: "s3", userId: nil, transactions: [Self.gems("p4", token: other)]))
        let waiting = try db.connection.execute("SELECT app_account_token FROM pending_claims").rows.map {
            row throws(PostgresError) in try row.string("app_account_token")
        }
        #expect(waiting == [other.lowercased()])
        let declared = try db.declare("aaaaaaaa-0000-4000-8000-00000000000b", for: "u3")
        #expect(declared.summary.resolvedClaims == 1)
        #expect(try db.user("u3").balance("gems") == 100)
        #expect(try db.count("pending_claims") == 0)
    }

    /// Version 8's tables as a backend producing results itself could leave them, then migrated: every token in the
    /// canonical form; of two links of one token and environment, the canonical one wins, else the one whose text
    /// sorts first, and each dropped link naming another user is kept in `owner_link_case_merges`; links of one
    /// user merge silently; original-id links are not touched; a claim parked on a token whose link was cased
    /// otherwise is applied once the store resolves stranded claims (as the ledger does at start).
    @Test func theMigrationPutsStoredTokensInOneCaseAndKeepsOneLinkWhereTwoCollide() throws {
        let db = try LedgerDatabase("ledger_token_case_migration", migrate: false)
        try db.connection.execute(
            "CREATE TABLE schema_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for migration in LedgerSchema.migrations where migration.version < 9 {
            for statement in migration.statements { try db.connection.execute(statement) }
            try db.connection.execute("INSERT INTO schema_migrations (version) VALUES ($1)", [.int(migration.version)])
        }
        let a = "aaaaaaaa-0000-4000-8000-00000000000a"
        let b = "bbbbbbbb-0000-4000-8000-00000000000b"
        let c = "cccccccc-0000-4000-8000-00000000000c"
        let d = "dddddddd-0000-4000-8000-00000000000d"
        try db.connection.execute(
            """
            INSERT INTO owner_links (kind, value, user_id, environment) VALUES
                ('app_account_token', '\(a.uppercased())', 'u-upper', 'production'),
                ('app_account_token', '\(a)', 'u-lower', 'production'),
                ('app_account_token', '\(a.uppercased())', 'u-sandbox', 'sandbox'),
                ('app_account_token', 'BBBBBBBB-0000-4000-8000-00000000000B', 'u-first', 'production'),
                ('app_account_token', 'Bbbbbbbb-0000-4000-8000-00000000000b', 'u-second', 'production'),
                ('app_account_token', '\(c.uppercased())', 'u-c', 'production'),
                ('app_account_token', '\(d.uppercased())', 'u-d', 'production'),
                ('app_account_token', '\(d)', 'u-d', 'production'),
                ('original_transaction_id', 'ORIG-1', 'u-o', 'production')
            """)
        // A renewal parked on c upper-cased, the way a backend's own credit claim could be, while c's link (written
        // by another message, cased otherwise) already named its owner: never woken before version 9.
        try db.connection.execute(
            """
            INSERT INTO pending_claims (claim_id, credit_key, original_transaction_id, app_account_token, source_kind,
                source_id, product_id, grant_kind, grant_name, grant_amount, quantity, expires_date_ms, at_ms,
                environment, ownership, purchase_date_ms, upgrade_notified)
            VALUES ('event:e-c', $1, NULL, $2, 'event', 'e-c', 'com.example.gems100', 'item', 'gems', 100, 1, NULL,
                5000, 'production', 'purchased', 0, false)
            """, [.text(F.key("pc")), .text(c.uppercased())])

        #expect(try LedgerSchema.migrate(db.connection).first == 9, "version 9 first, then any later one")
        #expect(
            try links(db) == [
                "production \(a) u-lower", "production \(b) u-first", "production \(c) u-c", "production \(d) u-d",
                "sandbox \(a) u-sandbox",
            ])
        let merges = try db.connection.execute(
            """
            SELECT environment, dropped_value, dropped_user_id, kept_value, kept_user_id FROM owner_link_case_merges
            ORDER BY dropped_value
            """
        ).rows.map { row throws(PostgresError) in
            [try row.string("environment"), try row.string("dropped_value"), try row.string("dropped_user_id"),
             try row.string("kept_value"), try row.string("kept_user_id")]
        }
        #expect(
            merges == [
                ["production", a.uppercased(), "u-upper", a, "u-lower"],
                [
                    "production", "Bbbbbbbb-0000-4000-8000-00000000000b", "u-second",
                    "BBBBBBBB-0000-4000-8000-00000000000B", "u-first",
                ],
            ], "the same user's two links merge without a record")
        #expect(
            try db.connection.execute("SELECT value FROM owner_links WHERE kind = 'original_transaction_id'").rows
                .first?.string("value") == "ORIG-1")
        #expect(
            try db.connection.execute("SELECT app_account_token FROM pending_claims").rows.first?
                .string("app_account_token") == c)

        // The ledger's start: the claim parked on c is its owner's now.
        let resolved = try db.store.resolveStrandedClaims(on: db.connection, nowMs: 9_000)
        #expect(resolved.resolvedClaims == 1)
        #expect(try db.user("u-c").balance("gems") == 100)
        #expect(try db.count("pending_claims") == 0)
        #expect(try db.store.resolveStrandedClaims(on: db.connection, nowMs: 9_000).resolvedClaims == 0)
        // A claim carrying b, in whatever case, finds the link the migration kept.
        try db.applyResults(F.result(submissionId: "s-b", userId: nil, transactions: [Self.gems("pb", token: b.uppercased())]))
        #expect(try db.count("pending_claims") == 0, "b is linked (u-first): no need to wait")
        #expect(try db.user("u-first").balance("gems") == 100)
    }
}
