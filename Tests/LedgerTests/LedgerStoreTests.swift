import Foundation
import Kafka
import Ledger
import LedgerRules
import Postgres
import Testing

/// The store against a real PostgreSQL: exactly once per offset, duplicates, dead letters, what a result claims, and
/// owners found through links. Keys are explicit fixtures; the ledger treats them as opaque. One purchase's crediting
/// rules run through the store as the rows of `CreditingTable` (`CreditingTableStoreTests`).
@Suite struct LedgerStoreTests {
    typealias F = LedgerFixtures

    @Test func migrationsAreVersionedAndIdempotent() throws {
        let db = try LedgerDatabase("ledger_migrate")
        #expect(try LedgerSchema.migrate(db.connection).isEmpty)
        #expect(
            try db.connection.execute("SELECT max(version) AS newest FROM schema_migrations").rows[0].int64("newest")
                == LedgerSchema.currentVersion)
    }

    @Test func aVerifiedResultCreditsAmountTimesQuantityOnce() throws {
        let db = try LedgerDatabase("ledger_credit")
        let result = F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1", quantity: 3)])
        let records = db.append([result, result], to: F.topics.results)
        let first = try db.apply(records)
        #expect(first.applied == 2)
        #expect(try db.user("u1").balance("gems") == 300)
        // The same batch again (a redelivery after a crash before the commit reached Kafka): every offset is skipped.
        let again = try db.apply(records)
        #expect(again.applied == 0)
        #expect(again.alreadyApplied == 2)
        #expect(try db.user("u1").balance("gems") == 300)
        let purchase = try #require(try db.purchase(F.key("k1")))
        #expect(purchase.owner == "u1")
        #expect(purchase.state == "credited")
        #expect(purchase.amountCredited == 300)
        #expect(try db.user("u1").purchases.map(\.creditKey) == [F.key("k1")])
    }

    @Test func rejectedResultsAndUncreditableTransactionsCreditNothing() throws {
        let db = try LedgerDatabase("ledger_rejected")
        try db.applyResults(
            F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")], outcome: "rejected"),
            F.result(submissionId: "s2", userId: "u1", transactions: [F.transaction(creditKey: "k2", creditable: false)]))
        #expect(try db.user("u1").balances.isEmpty)
        #expect(try db.purchase(F.key("k1")) == nil)
    }

    /// Issue 29 item 2: a verified `signed_app_transaction` result (app ownership, an `app_transaction` object and
    /// no transactions) is applied and records nothing: no purchase, no balance, no dead letter; the user's later
    /// purchases credit as usual. A transaction's `app_transaction_id` changes nothing about money.
    @Test func aVerifiedAppTransactionResultRecordsNothingToCredit() throws {
        let db = try LedgerDatabase("ledger_app_transaction")
        var app = try #require(
            try JSONSerialization.jsonObject(with: Data(F.result(submissionId: "a1", userId: "u1", transactions: [])))
                as? [String: Any])
        app["app_transaction"] = [
            "app_transaction_id": "705000000000001", "bundle_id": "com.example.app", "app_apple_id": 1,
            "application_version": "2.0", "original_application_version": "1.0",
            "original_purchase_date_ms": 1_600_000_000_000, "receipt_creation_date_ms": 1_700_000_000_000,
            "preorder_date_ms": NSNull(), "receipt_type": "Production", "original_platform": "iOS",
            "version_external_identifier": 7, "environment": "Production", "signed_date_ms": 1_700_000_000_000,
        ] as [String: Any]
        app["source"] = "server_api"
        var purchase = F.transaction(creditKey: "k1")
        purchase["app_transaction_id"] = "705000000000001"
        let summary = try db.applyResults(
            F.json(app), F.result(submissionId: "s1", userId: "u1", transactions: [purchase]))
        #expect(summary.applied == 2)
        #expect(summary.deadLettered == 0)
        #expect(try db.connection.execute("SELECT count(*) AS n FROM dead_letters").rows[0].int64("n") == 0)
        #expect(try db.user("u1").balance("gems") == 100)
        #expect(try db.user("u1").purchases.map(\.creditKey) == [F.key("k1")])
    }

    /// Issue 29 item 4: the ledger keeps each credited purchase's `app_transaction_id`; a `RESCIND_CONSENT` event for
    /// that app download withdraws the consumption-data consent of the purchases' owners, and nobody else's.
    @Test func rescindConsentWithdrawsTheConsentOfTheDownloadsPurchaseOwners() throws {
        let db = try LedgerDatabase("ledger_rescind")
        var mine = F.transaction(creditKey: "k1")
        mine["app_transaction_id"] = "705000000000001"
        var theirs = F.transaction(creditKey: "k2")
        theirs["app_transaction_id"] = "705000000000002"
        for user in ["u1", "u2", "u3"] {
            try db.connection.execute(
                "INSERT INTO consents (user_id, consented, updated_at_ms) VALUES ($1, true, 1)", [.text(user)])
        }
        var rescind = try #require(
            try JSONSerialization.jsonObject(with: Data(F.event(eventId: "r1", type: "info", transaction: nil)))
                as? [String: Any])
        rescind["notification_type"] = "RESCIND_CONSENT"
        rescind["app_transaction_id"] = "705000000000001"
        // The result and the event in one batch: the purchase credited first counts.
        let records = db.append(
            [F.result(submissionId: "s1", userId: "u1", transactions: [mine]),
             F.result(submissionId: "s2", userId: "u2", transactions: [theirs])], to: F.topics.results)
            + db.append([F.json(rescind)], to: F.topics.events)
        let summary = try db.apply(records)
        #expect(summary.deadLettered == 0)
        #expect(summary.consentsWithdrawn == 1)
        let consents = try db.connection.execute("SELECT user_id, consented FROM consents ORDER BY user_id").rows
        #expect(try consents.map { try $0.string("user_id") } == ["u1", "u2", "u3"])
        #expect(try consents.map { try $0.bool("consented") } == [false, true, true])
        // Money is untouched, and a rescind naming no download (or an unknown one) changes nothing.
        #expect(try db.user("u1").balance("gems") == 100)
        rescind["event_id"] = "r2"
        rescind["app_transaction_id"] = NSNull()
        var unknown = rescind
        unknown["event_id"] = "r3"
        unknown["app_transaction_id"] = "705000000000009"
        let later = try db.applyEvents(F.json(rescind), F.json(unknown))
        #expect(later.deadLettered == 0 && later.consentsWithdrawn == 0)
    }

    /// A `RESCIND_CONSENT` acts on consent by Apple's signing time (`ConsentRules`): one that arrives late or again
    /// after the user consented anew leaves the newer consent alone; a newer rescind withdraws it.
    @Test func aLateOrReplayedRescindDoesNotWithdrawANewerConsent() throws {
        let db = try LedgerDatabase("ledger_rescind_order")
        var mine = F.transaction(creditKey: "k1")
        mine["app_transaction_id"] = "705000000000001"
        _ = try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [mine]))
        try db.connection.execute(
            "INSERT INTO consents (user_id, consented, updated_at_ms) VALUES ('u1', true, 1600000000000)", [])
        func rescind(_ eventId: String, signedAtMs: Int64) throws -> [UInt8] {
            var event = try #require(
                try JSONSerialization.jsonObject(
                    with: Data(F.event(eventId: eventId, type: "info", transaction: nil, signedDateMs: signedAtMs)))
                    as? [String: Any])
            event["notification_type"] = "RESCIND_CONSENT"
            event["app_transaction_id"] = "705000000000001"
            return F.json(event)
        }
        func consent() throws -> (consented: Bool, updatedAtMs: Int64) {
            let row = try #require(
                try db.connection.execute("SELECT consented, updated_at_ms FROM consents WHERE user_id = 'u1'").rows.first)
            return (try row.bool("consented"), try row.int64("updated_at_ms"))
        }

        #expect(try db.applyEvents(rescind("r1", signedAtMs: 1_700_000_000_000)).consentsWithdrawn == 1)
        #expect(try consent().consented == false)
        // The parent consents again in the app; the backend records it.
        try db.connection.execute("UPDATE consents SET consented = true, updated_at_ms = 1800000000000", [])
        // The old rescind again, under another id (a reconciliation sweep's, a replay): the newer consent stands.
        #expect(try db.applyEvents(rescind("r1-again", signedAtMs: 1_700_000_000_000)).consentsWithdrawn == 0)
        let stands = try consent()
        #expect(stands.consented && stands.updatedAtMs == 1_800_000_000_000)
        // A rescind Apple signed after that consent withdraws it.
        let newer = try db.applyEvents(rescind("r2", signedAtMs: 1_900_000_000_000))
        #expect(newer.consentsWithdrawn == 1 && newer.deadLettered == 0)
        #expect(try consent().consented == false)
        #expect(try db.user("u1").balance("gems") == 100)
    }

    @Test func duplicateEventIdsMoveMoneyOnce() throws {
        let db = try LedgerDatabase("ledger_dup_events")
        let transaction = F.transaction(creditKey: "k1", originalTransactionId: "o1")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [transaction]))
        let refund = F.event(eventId: "e1", type: "debit", transaction: transaction)
        let summary = try db.applyEvents(refund, refund)
        #expect(summary.duplicateEvents == 1)
        #expect(try db.user("u1").balance("gems") == 0)
        #expect(try db.purchase(F.key("k1"))?.amountDebited == 100)
    }

    @Test func transferMovesTheEntitlementButNeverItems() throws {
        let db = try LedgerDatabase("ledger_transfer", policy: .transfer)
        let subscription = F.transaction(
            creditKey: "k1", originalTransactionId: "o1", productId: "pro", credit: F.pro, expiresDateMs: 9_999)
        let gems = F.transaction(creditKey: "k2", originalTransactionId: "o2")
        try db.applyResults(
            F.result(submissionId: "s1", userId: "u1", transactions: [subscription, gems]),
            F.result(submissionId: "s2", userId: "u2", transactions: [subscription, gems]))
        #expect(try db.user("u1").entitlements.isEmpty)
        #expect(try db.user("u2").entitlements.map(\.creditKey) == [F.key("k1")])
        #expect(try db.user("u2").entitlements.first?.expiresDateMs == 9_999)
        #expect(try db.user("u1").balance("gems") == 100)
        #expect(try db.user("u2").balance("gems") == 0)
        #expect(try db.purchase(F.key("k2"))?.refusedClaims.map(\.userId) == ["u2"])
        // A renewal event now goes to the latest claimant.
        let renewal = F.transaction(creditKey: "k3", originalTransactionId: "o1", productId: "pro", credit: F.pro, expiresDateMs: 19_999)
        try db.applyEvents(F.event(eventId: "e1", type: "credit", transaction: renewal))
        #expect(try db.purchase(F.key("k3"))?.owner == "u2")
    }

    @Test func anEventWithNoKnownOwnerWaitsUntilAResultNamesOne() throws {
        let db = try LedgerDatabase("ledger_pending")
        let renewal = F.transaction(creditKey: "k2", originalTransactionId: "o1", productId: "pro", credit: F.pro, expiresDateMs: 2_000)
        let parked = try db.applyEvents(F.event(eventId: "e1", type: "credit", transaction: renewal))
        #expect(parked.parkedClaims == 1)
        #expect(try db.purchase(F.key("k2"))?.state == "pending_owner")
        #expect(try db.count("pending_claims") == 1)
        // A result for the first period names the owner of original_transaction_id o1: the renewal is applied.
        let first = F.transaction(creditKey: "k1", originalTransactionId: "o1", productId: "pro", credit: F.pro, expiresDateMs: 1_000)
        let resolved = try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [first]))
        #expect(resolved.resolvedClaims == 1)
        #expect(try db.purchase(F.key("k2"))?.owner == "u1")
        #expect(try db.purchase(F.key("k2"))?.state == "credited")
        #expect(try db.user("u1").entitlements.map(\.creditKey) == [F.key("k1"), F.key("k2")])
        #expect(try db.count("pending_claims") == 0)
    }

    @Test func anEventFindsItsOwnerThroughTheAppAccountToken() throws {
        let db = try LedgerDatabase("ledger_token")
        let token = "3f1b6a0e-0000-4000-8000-000000000001"
        let earlier = F.transaction(creditKey: "k1", originalTransactionId: "o1", appAccountToken: token)
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [earlier]))
        let other = F.transaction(creditKey: "k2", originalTransactionId: "o2", appAccountToken: token)
        try db.applyEvents(F.event(eventId: "e1", type: "credit", transaction: other))
        #expect(try db.user("u1").balance("gems") == 200)
    }

    @Test func whatCannotBeReadOrAppliedIsDeadLetteredAndThePartitionMovesOn() throws {
        let db = try LedgerDatabase("ledger_dead")
        let records = db.append(
            [
                Array("{not json".utf8),
                F.json(["schema_version": 2, "submission_id": "s0", "outcome": "verified", "transactions": []]),
                F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1", credit: ["coins": 5])]),
                F.result(
                    submissionId: "s2", userId: "u1",
                    transactions: [F.transaction(creditKey: "k2", credit: ["item": "gems", "amount": "100"])]),
                F.result(submissionId: "s3", userId: "u1", transactions: [F.transaction(creditKey: "k3")]),
            ], to: F.topics.results)
        let events = db.append(
            [
                F.event(eventId: "e1", type: "brand_new_type", transaction: nil),
                F.event(eventId: "e2", type: "debit", transaction: nil),
            ], to: F.topics.events)
        let summary = try db.apply(records + events)
        #expect(summary.deadLettered == 6)
        #expect(summary.nextOffsets[TopicPartition(topic: F.topics.results, partition: 0)] == 5)
        #expect(try db.user("u1").balance("gems") == 100)
        let reasons = try db.connection.execute(#"SELECT "offset", reason, raw FROM dead_letters WHERE topic = $1 ORDER BY "offset""#, [.text(F.topics.results)]).rows
        #expect(try reasons.map { try $0.int64("offset") } == [0, 1, 2, 3])
        #expect(try reasons[0].string("reason") == "malformed JSON")
        #expect(try reasons[1].string("reason") == "unknown schema_version 2")
        #expect(try reasons[2].string("reason").hasPrefix(F.key("k1") + ": unknown credit shape"))
        #expect(try reasons[0].bytes("raw") == Array("{not json".utf8))
    }

    @Test func aFailedBatchLeavesNothingAndTheOffsetsWhereTheyWere() throws {
        let db = try LedgerDatabase("ledger_rollback")
        let records = db.append(
            [F.result(submissionId: "s1", userId: "u1", transactions: [F.transaction(creditKey: "k1")])], to: F.topics.results)
        #expect(throws: PostgresError.self) {
            try db.connection.transaction { session throws(PostgresError) in
                _ = try db.store.apply(records, in: session, nowMs: 1)
                try session.execute("SELECT 1/0")
            }
        }
        #expect(try db.user("u1").balance("gems") == 0)
        #expect(try db.apply(records).applied == 1)
        #expect(try db.user("u1").balance("gems") == 100)
    }
}
