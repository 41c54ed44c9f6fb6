@testable import Ledger
import LedgerRuleTables
import LedgerRules
import Postgres
import Testing

/// Every row of `CreditingTable` through the real decoders, store and PostgreSQL, so that a rule and its SQL cannot
/// drift apart: each input is the message the pipeline would write (`CreditingTableMessages`), applied in a batch of
/// its own, and after each one the store holds what the rules decided for it: the purchase's row (every column of
/// its state; none for a purchase never seen), every user's balances in both books (exactly the wallets the rules
/// moved, by what they moved), the purchase's entitlement, its refused claims, and what the batch counted (stale
/// events, declined and parked claims, transfers, refusals, dead letters with the rules' reason).
@Suite struct CreditingTableStoreTests {
    @Test(arguments: CreditingTable.rows)
    func row(_ row: CreditingTable.Row) throws {
        let steps = CreditingTable.replay(row)
        #expect(steps.flatMap(\.decision.actions) == row.actions, "the rules decide what the table says")
        let messages = CreditingTableMessages(row)
        let db = try LedgerDatabase("ledger_table", policy: row.policy, sandbox: row.sandbox)
        var holdings = CreditingTable.Holdings()
        for (index, step) in steps.enumerated() {
            let message = messages.message(for: step.input, at: index)
            if let owner = message.ownerLink {
                try Self.link(owner, in: messages.environment, on: db)
            } else if Self.isEventClaim(step.input) {
                #expect(try Self.linkedOwner(in: messages.environment, on: db) == nil, "step \(index): no owner known yet")
            }
            let summary = try db.apply(
                db.append([message.value], to: message.topic, timestampMs: message.timestampMs))
            let refusals = holdings.record(step.decision.actions, book: step.decision.state.book)
            let context = "step \(index) (\(step.input))"
            try Self.expectPurchase(messages.creditKey, step.decision.state, on: db, context)
            try Self.expectHoldings(holdings, messages.creditKey, users: Self.users(row), on: db, context)
            Self.expectCounts(summary, step, refusals: refusals, context)
            for case .unappliable(let reason) in step.decision.actions {
                let recorded = try db.connection.execute(
                    #"SELECT reason FROM dead_letters ORDER BY recorded_at_ms DESC, "offset" DESC LIMIT 1"#
                ).rows.first?.string("reason")
                #expect(recorded == "\(messages.creditKey): \(reason)", "\(context)")
            }
        }
    }

    // MARK: What the store must hold

    /// The purchase's row read back as the store reads it: none for a purchase never seen, else equal to `state`.
    static func expectPurchase(_ creditKey: String, _ state: PurchaseState, on db: LedgerDatabase, _ context: String)
        throws
    {
        let rows = try db.connection.execute(
            "\(BatchWork.selectPurchases) WHERE credit_key = $1", [.text(creditKey)]
        ).rows
        guard state.status != .unseen else {
            #expect(rows.isEmpty, "\(context): a purchase never seen has no row")
            return
        }
        let row = try #require(rows.first, "\(context): the purchase has a row")
        let stored = try BatchWork.readState(row, at: BatchWork.PurchasePositions(row.columns), creditKey)
        #expect(stored == state, "\(context)")
    }

    /// Every user's balances in both books are exactly the wallets the rules moved; the purchase's entitlement and
    /// refused claims are the ones the rules recorded.
    static func expectHoldings(
        _ holdings: CreditingTable.Holdings, _ creditKey: String, users: Set<String>, on db: LedgerDatabase,
        _ context: String
    ) throws {
        for user in users.sorted() {
            let view = try db.user(user)
            for (book, stored) in [(Book.production, view.balances), (.sandbox, view.sandbox.balances)] {
                let expected = holdings.balances.filter { $0.key.owner == user && $0.key.book == book }
                    .map { ($0.key.item, $0.value) }.sorted { $0.0 < $1.0 }
                #expect(stored.map(\.item) == expected.map(\.0), "\(context): \(user)'s \(book) wallets")
                #expect(stored.map(\.amount) == expected.map(\.1), "\(context): \(user)'s \(book) balances")
                let entitlements = (book == .production ? view.entitlements : view.sandbox.entitlements)
                    .filter { $0.creditKey == creditKey }
                let granted = holdings.entitlement.flatMap { entitlement in
                    entitlement.active && entitlement.owner == user && entitlement.book == book
                        ? LedgerQueries.Entitlement(
                            entitlement: entitlement.name, expiresDateMs: entitlement.expiresDateMs,
                            creditKey: creditKey)
                        : nil
                }
                #expect(entitlements == [granted].compactMap { $0 }, "\(context): \(user)'s \(book) entitlement")
            }
        }
        let refused = try db.purchase(creditKey)?.refusedClaims ?? []
        #expect(
            refused.map { "\($0.userId)/\($0.submissionId)@\($0.atMs)" }.sorted()
                == holdings.refusedClaims.map { "\($0.userId)/\($0.submissionId)@\($0.atMs)" }.sorted(),
            "\(context): refused claims")
    }

    /// What the batch counted is what the rules decided for its input: its actions, a sandbox purchase credited for
    /// the first time, a period the step upgraded away.
    static func expectCounts(
        _ summary: BatchSummary, _ step: CreditingTable.Step, refusals: Int, _ context: String
    ) {
        let actions = step.decision.actions
        func count(_ matches: (LedgerAction) -> Bool) -> Int { actions.filter(matches).count }
        #expect(summary.staleEvents == count { $0 == .staleEvent }, "\(context): stale events")
        #expect(summary.parkedClaims == count { $0 == .waitForOwner }, "\(context): parked claims")
        #expect(summary.declinedClaims == count { if case .declined = $0 { true } else { false } }, "\(context)")
        #expect(summary.transfers == count { if case .recordTransfer = $0 { true } else { false } }, "\(context)")
        #expect(summary.deadLettered == count { if case .unappliable = $0 { true } else { false } }, "\(context)")
        #expect(summary.refusedClaims == refusals, "\(context): refused claims recorded")
        let sandboxClaim = CreditingTableMessages.claim(step.input)?.environment == .sandbox
        let firstCredit = !step.before.isCreditedOnce && step.decision.state.isCreditedOnce
        #expect(summary.sandboxCredits == (sandboxClaim && firstCredit ? 1 : 0), "\(context): sandbox credits")
        let upgraded = step.before.status != .upgraded && step.decision.state.status == .upgraded
        #expect(summary.upgrades == (upgraded ? 1 : 0), "\(context): upgrades")
    }

    // MARK: The row's owners

    /// Every user the row names: claimants, owners, those the actions move money for.
    static func users(_ row: CreditingTable.Row) -> Set<String> {
        var users = Set(row.inputs.compactMap { CreditingTableMessages.claim($0)?.owner })
        var holdings = CreditingTable.Holdings()
        holdings.record(row.actions, book: row.book)
        users.formUnion(holdings.users)
        return users
    }

    static func isEventClaim(_ input: LedgerInput) -> Bool {
        guard let claim = CreditingTableMessages.claim(input), case .event = claim.source else { return false }
        return true
    }

    /// Links the subscription `o1` to `owner` in `environment`, unless it is linked already (to them: a link to
    /// anyone else would make the event another user's claim, not the row's).
    static func link(_ owner: String, in environment: PurchaseEnvironment, on db: LedgerDatabase) throws {
        if let linked = try linkedOwner(in: environment, on: db) {
            #expect(linked == owner, "the subscription is linked to the claim's owner")
            return
        }
        try db.connection.execute(
            """
            INSERT INTO owner_links (kind, environment, value, user_id)
            VALUES ('original_transaction_id', $1, 'o1', $2)
            """, [.text(environment.rawValue), .text(owner)])
    }

    static func linkedOwner(in environment: PurchaseEnvironment, on db: LedgerDatabase) throws -> String? {
        try db.connection.execute(
            """
            SELECT user_id FROM owner_links
            WHERE kind = 'original_transaction_id' AND environment = $1 AND value = 'o1'
            """, [.text(environment.rawValue)]
        ).rows.first?.string("user_id")
    }
}
