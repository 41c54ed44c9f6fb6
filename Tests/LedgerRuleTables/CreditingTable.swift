import LedgerRules

/// The crediting rules as a table, shared by the two suites that read it: `CreditingRulesTests` applies each row to
/// `CreditingRules.apply`, and `CreditingTableStoreTests` applies the same row through the real store and PostgreSQL
/// and compares, after every input, the purchase, the balances and the entitlement with what the rules decided. So a
/// rule and its SQL cannot drift apart. Each row starts from a purchase never seen, applies its inputs in order, and
/// states every change the ledger makes and where the purchase ends. This table is the specification; see
/// docs/CREDITING.md for the reasons.
public enum CreditingTable {
    /// One purchase's history and what the rules make of it.
    public struct Row: Sendable, CustomStringConvertible {
        public let name: String
        public var policy: OwnershipPolicy
        public var sandbox: SandboxPolicy
        public let inputs: [LedgerInput]
        /// Every action of every input, in order.
        public let actions: [LedgerAction]
        public let status: PurchaseStatus
        public var owner: String?
        public var credited: Int64
        public var debited: Int64
        public var book: Book
        /// Where the purchase's two signing orders end (`lastEventSignedMs`, `lastStatusSignedMs`), when the row
        /// states them.
        public var lastSigned: (money: Int64?, status: Int64?)?

        public init(
            name: String, policy: OwnershipPolicy = .keep, sandbox: SandboxPolicy = .separate, inputs: [LedgerInput],
            actions: [LedgerAction], status: PurchaseStatus, owner: String? = nil, credited: Int64 = 0,
            debited: Int64 = 0, book: Book = .production, lastSigned: (money: Int64?, status: Int64?)? = nil
        ) {
            self.name = name
            self.policy = policy
            self.sandbox = sandbox
            self.inputs = inputs
            self.actions = actions
            self.status = status
            self.owner = owner
            self.credited = credited
            self.debited = debited
            self.book = book
            self.lastSigned = lastSigned
        }

        public var description: String { name }
    }

    /// One input of a row as the rules applied it.
    public struct Step: Sendable {
        public let input: LedgerInput
        public let before: PurchaseState
        public let decision: LedgerDecision
    }

    /// When the ledger applies each input (`CreditingRules.apply`'s `nowMs`; the store's batch time).
    public static let nowMs: Int64 = 9_000

    /// `row`'s inputs applied to `CreditingRules.apply` one after the other, from a purchase never seen.
    public static func replay(_ row: Row) -> [Step] {
        var state = PurchaseState.unknown
        return row.inputs.map { input in
            let decision = CreditingRules.apply(input, to: state, policy: row.policy, sandbox: row.sandbox, nowMs: nowMs)
            defer { state = decision.state }
            return Step(input: input, before: state, decision: decision)
        }
    }

    /// Every row: the rules as first written, round 4's and round 5's.
    public static let rows = firstRows + roundFourRows + roundFiveRows

    static let gems = CreditShape.grant(.item(name: "gems", amount: 100))
    static let pro = CreditShape.grant(.entitlement(name: "pro"))
    static let day: Int64 = 86_400_000

    static func result(
        _ user: String, _ credit: CreditShape = gems, quantity: Int64 = 1, expires: Int64? = nil, at: Int64 = 1_000,
        submission: String = "s1", environment: PurchaseEnvironment = .production,
        ownership: Ownership = .purchased, purchased: Int64? = nil
    ) -> LedgerInput {
        .credit(
            CreditClaim(
                source: .result(submissionId: submission), owner: user, productId: "p", credit: credit,
                quantity: quantity, expiresDateMs: expires, atMs: at, environment: environment, ownership: ownership,
                purchaseDateMs: purchased))
    }

    /// A month of 300 gems bought at 0 that would expire at 30 days (in ms).
    static func period(_ credit: CreditShape = .grant(.item(name: "gems", amount: 300))) -> LedgerInput {
        result("u1", credit, expires: 30 * day, purchased: 0)
    }

    static func creditEvent(_ owner: String?, _ credit: CreditShape = gems, expires: Int64? = nil) -> LedgerInput {
        .credit(
            CreditClaim(
                source: .event(eventId: "e"), owner: owner, productId: "p", credit: credit, quantity: 1,
                expiresDateMs: expires, atMs: 2_000))
    }
}
