/// What a purchase event's `type` asks of the ledger (the events topic's contract).
public enum LedgerEventKind: Sendable, Equatable {
    case credit, debit, recredit, revoke, subscriptionStatus
    /// `consumption_request`: moves no money; the ledger records it for the refund responder to answer.
    case consumptionRequest
    /// `test`, `info` and the other types that move no money.
    case noMoney

    /// Money events are recorded in `applied_events` and deduplicated there; the others are not.
    public var movesMoney: Bool {
        switch self {
        case .credit, .debit, .recredit, .revoke, .subscriptionStatus: true
        case .consumptionRequest, .noMoney: false
        }
    }

    /// nil for a type the contract does not name (dead-lettered: never guessed).
    public static func of(_ type: String) -> LedgerEventKind? {
        switch type {
        case "credit": .credit
        case "debit": .debit
        case "recredit": .recredit
        case "revoke": .revoke
        case "subscription_status": .subscriptionStatus
        case "consumption_request": .consumptionRequest
        case "test", "info": .noMoney
        default: nil
        }
    }

    /// The rules' input for a money event other than `credit` (whose claim needs an owner), in Apple's signing
    /// order when the event says when Apple signed it; nil for `credit` and the kinds that move no money.
    public func input(revocationPercentage: Int64?, expiresDateMs: Int64?, signedDateMs: Int64?) -> LedgerInput? {
        let input: LedgerInput
        switch self {
        case .credit, .consumptionRequest, .noMoney: return nil
        case .debit: input = .debit(revocationPercentage: revocationPercentage)
        case .recredit: input = .recredit
        case .revoke: input = .revoke
        case .subscriptionStatus: input = .subscriptionStatus(expiresDateMs: expiresDateMs)
        }
        return signedDateMs.map { .signed(atMs: $0, input) } ?? input
    }
}
