import LedgerRules

extension CreditingTable {
    /// What a purchase's actions add up to outside its own state: the balances they moved, its entitlement, the
    /// claims recorded as refused. What the store must hold after the same inputs.
    public struct Holdings: Sendable, Equatable {
        /// One user's balance of one item in one book.
        public struct Wallet: Sendable, Hashable {
            public let owner: String
            public let book: Book
            public let item: String
        }

        public struct Entitlement: Sendable, Equatable {
            public var owner: String
            public var name: String
            public var expiresDateMs: Int64?
            public var active: Bool
            public var book: Book
        }

        /// A refused claim is recorded once per claimant and submission (the first time's `atMs` stands).
        public struct RefusedClaim: Sendable, Equatable {
            public let userId: String
            public let submissionId: String
            public let atMs: Int64
        }

        /// Every wallet an action moved, with the sum of its moves (0 when taken back in full).
        public var balances: [Wallet: Int64] = [:]
        /// The purchase's entitlement, once granted.
        public var entitlement: Entitlement?
        /// In the order first recorded.
        public var refusedClaims: [RefusedClaim] = []

        public init() {}

        /// Adds `actions`, decided for a purchase kept in `book`.
        /// - Returns: how many refused claims were recorded for the first time.
        @discardableResult
        public mutating func record(_ actions: [LedgerAction], book: Book) -> Int {
            var newRefusals = 0
            for action in actions {
                switch action {
                case .adjustBalance(let owner, let item, let delta) where delta != 0:
                    balances[Wallet(owner: owner, book: book, item: item), default: 0] += delta
                case .grantEntitlement(let owner, let name, let expiresDateMs):
                    entitlement = Entitlement(
                        owner: owner, name: name, expiresDateMs: expiresDateMs, active: true, book: book)
                case .endEntitlement:
                    entitlement?.active = false
                case .setEntitlementExpiry(let expiresDateMs):
                    entitlement?.expiresDateMs = expiresDateMs
                case .recordRefusedClaim(let userId, let submissionId, let atMs):
                    let submission = submissionId ?? ""
                    guard !refusedClaims.contains(where: { $0.userId == userId && $0.submissionId == submission })
                    else { continue }
                    refusedClaims.append(RefusedClaim(userId: userId, submissionId: submission, atMs: atMs))
                    newRefusals += 1
                case .adjustBalance, .recordTransfer, .waitForOwner, .unappliable, .declined, .staleEvent:
                    break
                }
            }
            return newRefusals
        }

        /// The users the holdings name (owners of wallets and of the entitlement, refused claimants).
        public var users: Set<String> {
            Set(balances.keys.map(\.owner) + [entitlement?.owner].compactMap { $0 } + refusedClaims.map(\.userId))
        }
    }
}
