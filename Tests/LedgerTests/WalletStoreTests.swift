import Foundation
import LedgerRules
import Postgres
import ServiceSupport
import Testing
import TestSupport

@testable import Ledger

/// The wallet through the real SQL: spends attributed first in, first out, refunds taken back under both clawback
/// policies, reversals, grants, books, idempotency, the spend batcher's in-flight and retry paths, and the schema 6
/// back-fill. After every step the database's wallets are checked whole (`expectConsistent`): each balance is its
/// lots' remaining units less its debt. The rules themselves are rows in `WalletRulesTests`.
@Suite struct WalletStoreTests {
    typealias F = LedgerFixtures

    static func purchase(
        _ label: String, user: String = "u1", quantity: Int = 1, environment: String = "Production"
    ) -> [UInt8] {
        F.result(
            submissionId: "s-\(label)", userId: user, transactions: [F.transaction(creditKey: label, quantity: quantity)],
            environment: environment)
    }

    static func refund(_ label: String, eventId: String, percentage: Int? = nil) -> [UInt8] {
        F.event(
            eventId: eventId, type: "debit", transaction: F.transaction(creditKey: label, revocationPercentage: percentage))
    }

    static func reversal(_ label: String, eventId: String) -> [UInt8] {
        F.event(eventId: eventId, type: "recredit", transaction: F.transaction(creditKey: label))
    }

    @Test func aSpendIsAttributedFirstInFirstOutAcrossPurchases() throws {
        let db = try LedgerDatabase("wallet_fifo")
        try db.applyResults(Self.purchase("p1"), Self.purchase("p2"))
        let answer = try db.spend(150, key: "k1", reference: "sword")
        #expect(answer.status == 200)
        let body = try #require(answer.json)
        #expect(body["balance"] as? Int == 50)
        #expect(body["reference"] as? String == "sword")
        let attribution = try #require(body["attribution"] as? [[String: Any]])
        #expect(attribution.map { $0["lot"] as? String } == [F.key("p1"), F.key("p2")])
        #expect(attribution.map { $0["amount"] as? Int } == [100, 50])
        #expect(try db.purchase(F.key("p1"))?.amountConsumed == 100)
        #expect(try db.purchase(F.key("p2"))?.amountConsumed == 50)
        #expect(try db.purchase(F.key("p2"))?.amountRemaining == 50)
        #expect(try db.count("wallet_spends") == 2)
        try db.expectConsistent()
    }

    /// Issue 40: two 100-gem purchases with 100 of 200 spent. The first is all consumed, the second not at all; the
    /// refund responder reads exactly that.
    @Test func twoPurchasesWithHalfSpentAreOneAllConsumedAndOneUntouched() throws {
        let db = try LedgerDatabase("wallet_half_spent")
        try db.applyResults(Self.purchase("p1"), Self.purchase("p2"))
        #expect(try db.spend(60, key: "k1").status == 200)
        #expect(try db.spend(40, key: "k2").status == 200)
        let first = try ConsumptionStore.facts(of: F.key("p1"), on: db.connection)
        let second = try ConsumptionStore.facts(of: F.key("p2"), on: db.connection)
        #expect(first.consumed == 100 && second.consumed == 0)
        #expect(ConsumptionRules.facts(of: first.state, consumed: first.consumed, nowMs: 0).consumedPercentage == 100_000)
        #expect(ConsumptionRules.facts(of: second.state, consumed: second.consumed, nowMs: 0).consumedPercentage == 0)
        #expect(try db.user("u1").balance("gems") == 100)
    }

    @Test func floorARefundAfterSpendingFloorsAtZeroAndRecordsTheRestUnrecovered() throws {
        let db = try LedgerDatabase("wallet_floor")
        try db.applyResults(Self.purchase("p1"))
        #expect(try db.spend(70, key: "k1").status == 200)
        let summary = try db.applyEvents(Self.refund("p1", eventId: "r1"))
        #expect(summary.unrecoveredUnits == 70)
        let user = try db.user("u1")
        #expect(user.balance("gems") == 0)
        #expect(user.wallet("gems") == LedgerQueries.WalletSummary(purchased: 0, granted: 0, debt: 0, unrecovered: 70))
        #expect(try db.spend(1, key: "k2").status == 409)
        let debit = try #require(try db.history().first)
        #expect(debit["kind"] as? String == "debit" && debit["key"] as? String == "r1")
        #expect(debit["amount"] as? Int == 100 && debit["balance_change"] as? Int == -30)
        #expect(debit["shortfall"] as? Int == 70)
        try db.expectConsistent()
    }

    @Test func debtTheBalanceGoesNegativeSpendsAreRefusedAndTheNextPurchaseRepays() throws {
        let db = try LedgerDatabase("wallet_debt", clawback: .debt)
        try db.applyResults(Self.purchase("p1"))
        #expect(try db.spend(70, key: "k1").status == 200)
        #expect(try db.applyEvents(Self.refund("p1", eventId: "r1")).debtUnits == 70)
        #expect(try db.user("u1").balance("gems") == -70)
        #expect(try db.user("u1").wallet("gems").debt == 70)
        let refused = try db.spend(1, key: "k2")
        #expect(refused.status == 409)
        #expect((refused.json?["error"] as? [String: Any])?["code"] as? String == "insufficient_balance")
        #expect((refused.json?["error"] as? [String: Any])?["debt"] as? Int == 70)
        try db.expectConsistent()
        // A results batch credits without reading the wallet; the balances upsert finds the debt and it is repaid.
        try db.applyResults(Self.purchase("p2"))
        #expect(try db.user("u1").balance("gems") == 30)
        #expect(try db.user("u1").wallet("gems").debt == 0)
        #expect(try db.purchase(F.key("p2"))?.amountConsumed == 70, "what repaid the debt was used")
        let kinds = try db.history().prefix(2).map { $0["kind"] as? String }
        #expect(kinds == ["debt_repayment", "credit"])
        #expect(try db.spend(30, key: "k3").status == 200)
        try db.expectConsistent()
    }

    /// A results batch of many credits copies its lots and history rows (`WalletWork.writes(copyingFrom:)`) instead
    /// of inserting them from arrays: the same rows, the same history in the same order, and a debt the balances
    /// upsert finds is repaid from the first copied lot.
    @Test func aBatchOfManyCreditsCopiesItsLotsAndHistoryAndRepaysTheDebtFromThem() throws {
        let db = try LedgerDatabase("wallet_copied_credits", clawback: .debt)
        try db.applyResults(Self.purchase("p0"))
        #expect(try db.spend(70, key: "k1").status == 200)
        try db.applyEvents(Self.refund("p0", eventId: "r1"))
        #expect(try db.user("u1").wallet("gems").debt == 70)
        let labels = (1...(BatchWork.copyThreshold + 8)).map { "p\($0)" }
        let summary = try db.apply(db.append(labels.map { Self.purchase($0) }, to: F.topics.results))
        #expect(summary.applied == labels.count)
        #expect(try db.user("u1").balance("gems") == 100 * Int64(labels.count) - 70)
        #expect(try db.user("u1").wallet("gems").debt == 0)
        #expect(try db.purchase(F.key("p1"))?.amountConsumed == 70, "the first credit repaid the debt")
        for label in labels.dropFirst() {
            #expect(try db.lot("u1", F.key(label)) == Lot(amount: 100, spent: 0, taken: 0, covered: 0))
        }
        let history = try db.history()
        #expect(history.first?["kind"] as? String == "debt_repayment")
        let credits = history.dropFirst().prefix(labels.count)
        #expect(credits.map { $0["kind"] as? String } == Array(repeating: "credit", count: labels.count))
        #expect(credits.map { $0["key"] as? String } == labels.reversed().map { F.key($0) }, "newest first, in order")
        #expect(credits.allSatisfy { $0["amount"] as? Int == 100 && $0["balance_change"] as? Int == 100 })
        try db.expectConsistent()
    }

    @Test func debtAPurchaseInTheSameBatchAsTheRefundRepaysItInOrder() throws {
        let db = try LedgerDatabase("wallet_debt_same_batch", clawback: .debt)
        try db.applyResults(Self.purchase("p1"))
        #expect(try db.spend(100, key: "k1").status == 200)
        let records = db.append([Self.refund("p1", eventId: "r1")], to: F.topics.events)
            + db.append([Self.purchase("p2")], to: F.topics.results)
        try db.apply(records)
        #expect(try db.user("u1").balance("gems") == 0)
        #expect(try db.user("u1").wallet("gems").debt == 0)
        try db.expectConsistent()
    }

    @Test func aRecreditRestoresExactlyWhatItsRefundTook() throws {
        let db = try LedgerDatabase("wallet_recredit")
        try db.applyResults(Self.purchase("p1"), Self.purchase("p2"))
        #expect(try db.spend(150, key: "k1").status == 200)
        try db.applyEvents(Self.refund("p1", eventId: "r1"))
        // p1 had nothing left: p2's 50 went to the refund, 50 could not be taken.
        #expect(try db.user("u1").balance("gems") == 0)
        #expect(try db.lot("u1", F.key("p2")) == Lot(amount: 100, spent: 50, taken: 0, covered: 50))
        #expect(try db.user("u1").wallet("gems").unrecovered == 50)
        try db.applyEvents(Self.reversal("p1", eventId: "r2"))
        #expect(try db.user("u1").balance("gems") == 50)
        #expect(try db.lot("u1", F.key("p2")) == Lot(amount: 100, spent: 50, taken: 0, covered: 0))
        #expect(try db.user("u1").wallet("gems").unrecovered == 0)
        #expect(try db.history().first?["balance_change"] as? Int == 50)
        try db.expectConsistent()
        // A second refund after the reversal is a new take-back.
        try db.applyEvents(Self.refund("p1", eventId: "r3"))
        #expect(try db.user("u1").balance("gems") == 0)
        try db.expectConsistent()
    }

    /// Issue 40 F2: P1's reversal gives back the units its refund took from P2, but P2 was refunded since and what it
    /// could not take was its own spent share: those restored units settle that refund first, so the balance is what
    /// the valid purchases hold (P1's 100, all spent), under either policy.
    @Test(arguments: ClawbackPolicy.allCases)
    func aReversalOntoALotWhosePurchaseWasRefundedSettlesThatRefundFirst(_ policy: ClawbackPolicy) throws {
        let db = try LedgerDatabase("wallet_reversal_onto_refunded_\(policy)", clawback: policy)
        try db.applyResults(Self.purchase("p1"))
        try db.applyResults(Self.purchase("p2"))
        #expect(try db.spend(100, key: "k1").status == 200)
        try db.applyEvents(Self.refund("p1", eventId: "r1"))
        try db.applyEvents(Self.refund("p2", eventId: "r2"))
        #expect(try db.user("u1").balance("gems") == (policy == .debt ? -100 : 0))
        try db.applyEvents(Self.reversal("p1", eventId: "r3"))
        #expect(try db.user("u1").balance("gems") == 0)
        #expect(try db.user("u1").wallet("gems") == LedgerQueries.WalletSummary(purchased: 0, granted: 0, debt: 0, unrecovered: 0))
        #expect(try db.lot("u1", F.key("p2")) == Lot(amount: 100, spent: 0, taken: 100, covered: 0))
        try db.expectConsistent()
        // P2's refund reversed too: its units are the user's again.
        try db.applyEvents(Self.reversal("p2", eventId: "r4"))
        #expect(try db.user("u1").balance("gems") == 100)
        #expect(try db.spend(100, key: "k2").status == 200)
        try db.expectConsistent()
    }

    /// Issue 40 F2 and F4 under debt: units a reversal restores repay the debt they owe before they reach the balance.
    @Test func debtAReversalSettlesDebtFromTheUnitsItRestores() throws {
        let db = try LedgerDatabase("wallet_reversal_repays_debt", clawback: .debt)
        try db.applyResults(Self.purchase("p1"))
        try db.applyResults(Self.purchase("p2"))
        try db.applyResults(Self.purchase("p3", quantity: 2))
        #expect(try db.spend(200, key: "k1").status == 200)
        try db.applyEvents(Self.refund("p1", eventId: "r1"))  // 100 from p3
        try db.applyEvents(Self.refund("p2", eventId: "r2"))  // 100 from p3, none left: nothing owed
        try db.applyEvents(Self.refund("p3", eventId: "r3"))  // p3 spent nothing but covered 200: 200 owed
        #expect(try db.user("u1").wallet("gems").debt == 200)
        try db.applyEvents(Self.reversal("p1", eventId: "r4"))
        // p1 is good again: its 100 restored to p3's lot pay p3's own refund first (p3 is refunded).
        #expect(try db.user("u1").balance("gems") == -100)
        #expect(try db.user("u1").wallet("gems").debt == 100)
        try db.expectConsistent()
        try db.applyEvents(Self.reversal("p3", eventId: "r5"))
        // p3 good again: what its refund took comes back and its debt is cancelled; p2's refund keeps the 100 it
        // took from p3 (p2's spent units were paid with them).
        #expect(try db.user("u1").wallet("gems").debt == 0)
        #expect(try db.user("u1").balance("gems") == 100)
        #expect(try db.spend(100, key: "k2").status == 200)
        try db.expectConsistent()
    }

    /// Issue 40 F1: an upgraded period refunded, then its refund reversed with `is_upgraded`, is in force again next
    /// to its replacement; it is not upgraded a second time (which took its unused share again under the same
    /// clawback key: a primary-key violation that retried the batch forever).
    @Test func anUpgradedPeriodRefundedAndReversedIsNotUpgradedAgain() throws {
        typealias M = MoneyWhereItShouldTests
        let db = try LedgerDatabase("wallet_upgrade_refund_reversal")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [M.monthly()]))
        #expect(try db.applyEvents(F.event(eventId: "e1", type: "credit", transaction: M.yearly, subtype: "UPGRADE")).upgrades == 1)
        #expect(try db.user("u1").balance("gems") == 3_100)
        try db.applyEvents(F.event(eventId: "e2", type: "debit", transaction: M.monthly()))
        #expect(try db.user("u1").balance("gems") == 3_000, "the refund takes what the upgrade left")
        let reversed = try db.applyEvents(
            F.event(eventId: "e3", type: "recredit", transaction: M.monthly { $0["is_upgraded"] = true }))
        #expect(reversed.upgrades == 0)
        #expect(try db.user("u1").balance("gems") == 3_100)
        #expect(try db.purchase(F.key("p1"))?.state == "recredited")
        #expect(try db.count("wallet_clawbacks") == 2)
        try db.expectConsistent()
    }

    /// A take-back is taken once against the database: a clawback an earlier batch recorded under the key (not one
    /// the wallet read would otherwise load: no debt, not a refund) takes and writes nothing again.
    @Test func aClawbackRecordedInAnEarlierBatchIsNotTakenAgain() throws {
        typealias M = MoneyWhereItShouldTests
        let db = try LedgerDatabase("wallet_clawback_taken_once")
        try db.applyResults(F.result(submissionId: "s1", userId: "u1", transactions: [M.monthly()]))
        try db.connection.execute(
            """
            INSERT INTO wallet_clawbacks (user_id, clawback_key, book, item, credit_key, kind, requested, at_ms)
            VALUES ('u1', $1, 'production', 'gems', $2, 'upgrade', 200, 0)
            """, [.text("upgrade:\(F.key("p1"))"), .text(F.key("p1"))])
        try db.applyEvents(F.event(eventId: "e1", type: "credit", transaction: M.yearly, subtype: "UPGRADE"))
        #expect(try db.user("u1").balance("gems") == 3_300)
        #expect(try db.history().map { $0["kind"] as? String } == ["credit", "credit"])
    }

    @Test func aGrantIsNeverTakenByARefund() throws {
        let db = try LedgerDatabase("wallet_grant")
        try db.applyResults(Self.purchase("p1"))
        let granted = try db.grant(100, key: "g1", reason: "welcome")
        #expect(granted.status == 200 && granted.json?["balance"] as? Int == 200)
        #expect(try db.spend(100, key: "k1").json?["attribution"] as? [[String: Any]] != nil)
        try db.applyEvents(Self.refund("p1", eventId: "r1"))
        #expect(try db.user("u1").balance("gems") == 100)
        #expect(try db.user("u1").wallet("gems") == LedgerQueries.WalletSummary(purchased: 0, granted: 100, debt: 0, unrecovered: 100))
        #expect(try db.lot("u1", "grant:g1") == Lot(amount: 100, spent: 0, taken: 0, covered: 0))
        try db.expectConsistent()
    }

    @Test func theSandboxBookIsKeptApart() throws {
        let db = try LedgerDatabase("wallet_sandbox")
        try db.applyResults(Self.purchase("s1", environment: "Sandbox"))
        #expect(try db.spend(10, key: "k1").status == 409, "production holds nothing")
        let spent = try db.spend(10, key: "k2", book: .sandbox)
        #expect(spent.status == 200 && spent.json?["book"] as? String == "sandbox")
        #expect(try db.user("u1").sandbox.balance("gems") == 90)
        #expect(try db.user("u1").balances.isEmpty)
        try db.expectConsistent()
    }

    @Test func aKeyAnswersTheSameAgainAndRefusesOtherContent() throws {
        let db = try LedgerDatabase("wallet_idempotency")
        try db.applyResults(Self.purchase("p1"))
        let first = try db.spend(30, key: "k1")
        let again = try db.spend(30, key: "k1")
        #expect(again.replayed && again.status == 200 && again.body == first.body)
        #expect(try db.user("u1").balance("gems") == 70, "the replay spent nothing")
        let other = try db.spend(31, key: "k1")
        #expect(other.status == 422 && other.body.contains("idempotency_key_reused"))
        #expect(try db.grant(30, key: "k1").status == 422, "keys are per user, across spends and grants")
        // A refusal is a final answer, kept like any other: the same key stays refused after a top-up.
        #expect(try db.spend(500, key: "k2").status == 409)
        #expect(try db.grant(1_000, key: "g1").status == 200)
        let refusedAgain = try db.spend(500, key: "k2")
        #expect(refusedAgain.status == 409 && refusedAgain.replayed)
        // Another user's same key is another request.
        #expect(try db.spend(1, key: "k1", user: "u2").status == 409)
        // Several requests of one batch: in order, each on the balance the one before left.
        let answers = try db.wallet([
            WalletRequest(operation: .spend, userId: "u1", idempotencyKey: "b1", book: .production, item: "gems", amount: 600, note: nil),
            WalletRequest(operation: .spend, userId: "u1", idempotencyKey: "b2", book: .production, item: "gems", amount: 500, note: nil),
            WalletRequest(operation: .grant, userId: "u1", idempotencyKey: "b3", book: .production, item: "gems", amount: 5, note: nil),
        ])
        #expect(answers.map(\.status) == [200, 409, 200])
        #expect(try db.user("u1").balance("gems") == 475)
        try db.expectConsistent()
    }

    @Test func aGrantTheBalanceCannotHoldIsRefusedAndStoresNothing() throws {
        let db = try LedgerDatabase("wallet_overflow")
        #expect(try db.grant(Int64.max - 5, key: "g1").status == 200)
        let overflow = try db.grant(6, key: "g2")
        #expect(overflow.status == 422 && overflow.body.contains("amount_overflow"))
        #expect(try db.grant(5, key: "g2").status == 200, "the refused key was not used")
        #expect(try db.user("u1").balance("gems") == Int64.max)
    }

    /// The batcher answers a second request with a key whose first is still being applied 409 at once, and the first
    /// gets its answer when its batch commits.
    @Test func aKeyInFlightIsAnswered409() async throws {
        let db = try LedgerDatabase("wallet_in_flight")
        try db.applyResults(Self.purchase("p1"))
        let holder = try PostgresConnection(connectionString: db.connectionString)
        defer { holder.close() }
        try holder.execute("BEGIN")
        try holder.execute("SELECT * FROM balances WHERE user_id = 'u1' FOR UPDATE")
        let batcher = WalletBatcher(
            databases: Self.lanes(db),
            metrics: WalletMetrics(registry: MetricsRegistry()), logger: Self.logger)
        batcher.start()
        defer { batcher.drain(within: .seconds(5)) }
        let request = WalletRequest(
            operation: .spend, userId: "u1", idempotencyKey: "k1", book: .production, item: "gems", amount: 10, note: nil)
        let first = Answers()
        batcher.submit(request) { first.add($0) }
        let second = Answers()
        batcher.submit(request) { second.add($0) }
        #expect(second.all.map(\.status) == [409])
        #expect(second.all.first?.body.contains("idempotency_key_in_flight") == true)
        #expect(first.all.isEmpty, "the first waits for the wallet's lock")
        try holder.execute("COMMIT")
        #expect(await eventually(timeout: .seconds(10)) { first.all.count == 1 })
        #expect(first.all.map(\.status) == [200])
    }

    /// Another instance applying the same key first. For the same wallet its lock orders the two: this batch waits,
    /// then reads that instance's answer and replays it. For another wallet this batch fails on the key's unique
    /// index, is applied again, and refuses the other content; nothing is spent twice.
    @Test func aKeyAnotherInstanceAppliedFirstIsReplayedOrRetried() async throws {
        let db = try LedgerDatabase("wallet_retry")
        try db.applyResults(Self.purchase("p1"))
        let metrics = WalletMetrics(registry: MetricsRegistry())
        let batcher = WalletBatcher(
            databases: Self.lanes(db),
            metrics: metrics, logger: Self.logger)
        batcher.start()
        defer { batcher.drain(within: .seconds(5)) }
        let other = try PostgresConnection(connectionString: db.connectionString)
        defer { other.close() }
        func spend(_ key: String, item: String = "gems") -> WalletRequest {
            WalletRequest(operation: .spend, userId: "u1", idempotencyKey: key, book: .production, item: item, amount: 10, note: nil)
        }
        func applyOnOther(_ request: WalletRequest) throws -> WalletAnswer {
            try other.execute("BEGIN")
            return try other.withSession { session throws(PostgresError) in
                try WalletBatch.apply([request], in: session, nowMs: 10_000)
            }[0]
        }
        /// True once some transaction waits for a lock another holds.
        func someoneWaits() -> Bool {
            (try? db.connection.execute("SELECT count(*) AS n FROM pg_locks WHERE NOT granted").rows[0].int64("n")) ?? 0 > 0
        }

        let theirs = try applyOnOther(spend("k1"))
        let same = Answers()
        batcher.submit(spend("k1")) { same.add($0) }
        #expect(await eventually(timeout: .seconds(10)) { someoneWaits() })
        try other.execute("COMMIT")
        #expect(await eventually(timeout: .seconds(10)) { same.all.count == 1 })
        #expect(same.all.first?.replayed == true && same.all.first?.body == theirs.body)
        #expect(metrics.batchRetries.current == 0)

        _ = try applyOnOther(spend("k2", item: "coins"))
        let otherWallet = Answers()
        batcher.submit(spend("k2")) { otherWallet.add($0) }
        #expect(await eventually(timeout: .seconds(10)) { someoneWaits() })
        try other.execute("COMMIT")
        #expect(await eventually(timeout: .seconds(10)) { otherWallet.all.count == 1 })
        #expect(otherWallet.all.first?.status == 422)
        #expect(metrics.batchRetries.current == 1)
        #expect(try db.user("u1").balance("gems") == 90)
        try db.expectConsistent()
    }

    /// Schema 6 turns what the ledger held into lots: purchases credited, refunded in part, upgraded, a balance the
    /// app lowered itself (spent first in, first out), one set by hand (an opening lot), one negative (an opening
    /// debt); a reversal after the migration gives back what the refund before it took.
    @Test func theMigrationBackFillsLotsFromWhatTheLedgerHeld() throws {
        let db = try LedgerDatabase("wallet_backfill", migrate: false)
        try db.connection.execute(
            "CREATE TABLE schema_migrations (version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for migration in LedgerSchema.migrations where migration.version < 6 {
            for statement in migration.statements { try db.connection.execute(statement) }
            try db.connection.execute("INSERT INTO schema_migrations (version) VALUES ($1)", [.int(migration.version)])
        }
        // Version 5's ledger, as its rules left it (signed balances), then changed by the app's own SQL.
        for (label, status, owner, grant, debited, creditedAt) in [
            ("a1", "credited", "u1", "item", 0, 1_000), ("a2", "credited", "u1", "item", 0, 2_000),
            ("a3", "debited", "u1", "item", 40, 3_000), ("b1", "credited", "u2", "item", 0, 1_000),
            ("c1", "debited", "u3", "item", 100, 1_000), ("e1", "credited", "u4", "entitlement", 0, 1_000),
        ] as [(String, String, String, String, Int64, Int64)] {
            try db.connection.execute(
                """
                INSERT INTO purchases (credit_key, status, owner, product_id, grant_kind, grant_name, grant_amount,
                    quantity, amount_credited, amount_debited, last_debit, credited_at_ms, updated_at_ms, book)
                VALUES ($1, $2, $3, 'p', $4, 'gems', CASE WHEN $4 = 'item' THEN 100 END, 1,
                    CASE WHEN $4 = 'item' THEN 100 ELSE 0 END, $5, $5, $6, $6, 'production')
                """, [.text(F.key(label)), .text(status), .text(owner), .text(grant), .int(debited), .int(creditedAt)])
        }
        // u1: 300 credited, 40 refunded, the app spent 160 itself -> 100 left. u2: 100 credited, 150 set by hand.
        // u3: 100 credited, spent, then refunded -> -100.
        try db.connection.execute(
            """
            INSERT INTO balances (user_id, book, item, amount) VALUES
                ('u1', 'production', 'gems', 100), ('u2', 'production', 'gems', 150), ('u3', 'production', 'gems', -100)
            """)
        #expect(try LedgerSchema.migrate(db.connection).first == 6, "version 6 first, then any later one")
        #expect(try db.lot("u1", F.key("a1")) == Lot(amount: 100, spent: 100, taken: 0, covered: 0))
        #expect(try db.lot("u1", F.key("a2")) == Lot(amount: 100, spent: 60, taken: 0, covered: 0))
        #expect(try db.lot("u1", F.key("a3")) == Lot(amount: 100, spent: 0, taken: 40, covered: 0))
        #expect(try db.lot("u2", "opening:production:gems") == Lot(amount: 50, spent: 0, taken: 0, covered: 0))
        #expect(try db.lot("u3", F.key("c1")) == Lot(amount: 100, spent: 0, taken: 100, covered: 0))
        #expect(try db.user("u3").wallet("gems").debt == 100)
        #expect(try db.count("wallet_lots") == 6)
        #expect(try db.purchase(F.key("a1"))?.amountConsumed == 100)
        try db.expectConsistent()
        // a3's refund reversed after the migration: its 40 come back.
        try db.applyEvents(Self.reversal("a3", eventId: "r-a3"))
        #expect(try db.user("u1").balance("gems") == 140)
        try db.expectConsistent()
        // The opening debt is repaid by the next grant.
        #expect(try db.grant(30, key: "g1", user: "u3").json?["debt_repaid"] as? Int == 30)
        #expect(try db.user("u3").balance("gems") == -70)
        try db.expectConsistent()
        // c1's refund reversed: its 100 come back to its lot and repay the rest of the opening debt first (the
        // balance is spendable, not positive beside a debt that refuses every spend).
        try db.applyEvents(Self.reversal("c1", eventId: "r-c1"))
        #expect(try db.user("u3").balance("gems") == 30)
        #expect(try db.user("u3").wallet("gems").debt == 0)
        #expect(try db.spend(30, key: "k1", user: "u3").status == 200)
        try db.expectConsistent()
    }

    static let logger = Logger(label: "wallet-tests", threshold: .error)

    /// A connection to `db` for each of the batcher's lanes (as many as the service opens).
    static func lanes(_ db: LedgerDatabase, count: Int = WalletBatcher.lanes) -> [DatabaseLink] {
        (0..<count).map { _ in DatabaseLink(connectionString: db.connectionString, metrics: nil, logger: logger) }
    }

    final class Answers: Sendable {
        private let answers = Locked<[WalletAnswer]>([])
        func add(_ answer: WalletAnswer) { answers.withLock { $0.append(answer) } }
        var all: [WalletAnswer] { answers.withLock { $0 } }
    }
}

struct Lot: Equatable {
    let amount: Int64, spent: Int64, taken: Int64, covered: Int64
}

extension WalletAnswer {
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
}

extension LedgerDatabase {
    /// Applies `requests` as one spend batch (what the batcher does) at 10,000 ms.
    func wallet(_ requests: [WalletRequest]) throws -> [WalletAnswer] {
        try connection.transaction { session throws(PostgresError) in
            try WalletBatch.apply(requests, in: session, nowMs: 10_000)
        }
    }

    func spend(
        _ amount: Int64, key: String, user: String = "u1", item: String = "gems", book: Book = .production,
        reference: String? = nil
    ) throws -> WalletAnswer {
        try wallet([
            WalletRequest(
                operation: .spend, userId: user, idempotencyKey: key, book: book, item: item, amount: amount,
                note: reference)
        ])[0]
    }

    func grant(_ amount: Int64, key: String, user: String = "u1", item: String = "gems", reason: String? = nil) throws
        -> WalletAnswer
    {
        try wallet([
            WalletRequest(
                operation: .grant, userId: user, idempotencyKey: key, book: .production, item: item, amount: amount,
                note: reason)
        ])[0]
    }

    func lot(_ user: String, _ key: String) throws -> Lot? {
        try connection.execute(
            "SELECT amount, spent, taken, covered FROM wallet_lots WHERE user_id = $1 AND lot_key = $2",
            [.text(user), .text(key)]
        ).rows.first.map { row throws(PostgresError) in
            Lot(
                amount: try row.int64("amount"), spent: try row.int64("spent"), taken: try row.int64("taken"),
                covered: try row.int64("covered"))
        }
    }

    /// The newest history entries of `user` (the API's JSON).
    func history(_ user: String = "u1") throws -> [[String: Any]] {
        let json = try WalletHistory.pageJSON(userId: user, limit: 50, before: nil, on: connection)
        let page = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return page?["entries"] as? [[String: Any]] ?? []
    }

    /// Every wallet agrees with itself (`PostgresConnection.expectWalletsConsistent`).
    func expectConsistent(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try connection.expectWalletsConsistent(sourceLocation: sourceLocation)
    }
}

extension PostgresConnection {
    /// Every wallet agrees with itself: balance = Σ remaining − debt, debt and unrecovered = their clawbacks' sums,
    /// and every take adds up to what its lots say was taken or covered.
    func expectWalletsConsistent(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let connection = self
        let rows = try connection.execute(
            """
            SELECT b.user_id, b.book, b.item, b.amount, b.debt, b.unrecovered,
                coalesce((SELECT sum(amount - spent - taken - covered) FROM wallet_lots l
                    WHERE l.user_id = b.user_id AND l.book = b.book AND l.item = b.item), 0) AS remaining,
                coalesce((SELECT sum(debt) FROM wallet_clawbacks c
                    WHERE c.user_id = b.user_id AND c.book = b.book AND c.item = b.item), 0) AS owed,
                coalesce((SELECT sum(unrecovered) FROM wallet_clawbacks c
                    WHERE c.user_id = b.user_id AND c.book = b.book AND c.item = b.item), 0) AS lost
            FROM balances b
            """
        ).rows
        for row in rows {
            let wallet = try "\(row.string("user_id"))/\(row.string("book"))/\(row.string("item"))"
            #expect(
                try row.int64("amount") == row.int64("remaining") - row.int64("debt"), "balance of \(wallet)",
                sourceLocation: sourceLocation)
            #expect(try row.int64("debt") == row.int64("owed"), "debt of \(wallet)", sourceLocation: sourceLocation)
            #expect(try row.int64("unrecovered") == row.int64("lost"), "unrecovered of \(wallet)", sourceLocation: sourceLocation)
        }
        let orphans = try connection.execute(
            """
            SELECT count(*) AS n FROM wallet_lots l WHERE NOT EXISTS (
                SELECT 1 FROM balances b WHERE b.user_id = l.user_id AND b.book = l.book AND b.item = l.item)
            """
        ).rows[0].int64("n")
        #expect(orphans == 0, "every lot's wallet has a balance", sourceLocation: sourceLocation)
        // Takes not reversed add up to what the lots hold as taken (own refunds, upgrades) and covered (others').
        let takes = try connection.execute(
            """
            SELECT l.user_id, l.lot_key, l.taken + l.covered AS held,
                coalesce((SELECT sum(t.amount) FROM wallet_takes t JOIN wallet_clawbacks c
                    ON c.user_id = t.user_id AND c.clawback_key = t.clawback_key
                    WHERE t.user_id = l.user_id AND t.lot_key = l.lot_key AND NOT c.reversed), 0) AS taken
            FROM wallet_lots l
            """
        ).rows
        for row in takes {
            let lot = try row.string("lot_key")
            #expect(try row.int64("held") == row.int64("taken"), "takes of lot \(lot)", sourceLocation: sourceLocation)
        }
    }
}
