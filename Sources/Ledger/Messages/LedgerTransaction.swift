import LedgerRules
import ReceiptModel

/// The members of a result's or event's transaction the ledger reads. Decoded tolerantly: members the ledger does
/// not need may be absent or added (`is_upgraded`, `price`, `currency`, `transaction_reason` are read when present);
/// a member it needs that has the wrong type makes the whole message unreadable (dead-lettered, never guessed).
struct LedgerTransaction: Decodable, Sendable, Equatable {
    /// Opaque: the purchase's identity as the pipeline wrote it.
    var creditKey: String
    var transactionId: String?
    var originalTransactionId: String?
    var productId: String?
    var quantity: Int64?
    var expiresDateMs: Int64?
    var appAccountToken: String?
    var creditable: Bool
    var credit: JSONValue?
    var revocationPercentage: Int64?
    var isUpgraded: Bool?
    var price: Int64?
    var currency: String?
    var transactionReason: String?

    enum CodingKeys: String, CodingKey {
        case creditKey = "credit_key"
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case productId = "product_id"
        case quantity
        case expiresDateMs = "expires_date_ms"
        case appAccountToken = "app_account_token"
        case creditable, credit
        case revocationPercentage = "revocation_percentage"
        case isUpgraded = "is_upgraded"
        case price, currency
        case transactionReason = "transaction_reason"
    }

    init(
        creditKey: String, transactionId: String? = nil, originalTransactionId: String? = nil,
        productId: String? = "p", quantity: Int64? = 1, expiresDateMs: Int64? = nil, appAccountToken: String? = nil,
        creditable: Bool = true, credit: JSONValue? = nil, revocationPercentage: Int64? = nil
    ) {
        self.creditKey = creditKey
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.quantity = quantity
        self.expiresDateMs = expiresDateMs
        self.appAccountToken = appAccountToken
        self.creditable = creditable
        self.credit = credit
        self.revocationPercentage = revocationPercentage
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        creditKey = try c.decode(String.self, forKey: .creditKey)
        transactionId = try c.decodeIfPresent(String.self, forKey: .transactionId)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        quantity = try c.decodeIfPresent(Int64.self, forKey: .quantity)
        expiresDateMs = try c.decodeIfPresent(Int64.self, forKey: .expiresDateMs)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        creditable = try c.decodeIfPresent(Bool.self, forKey: .creditable) ?? false
        credit = try c.decodeIfPresent(JSONValue.self, forKey: .credit)
        revocationPercentage = try c.decodeIfPresent(Int64.self, forKey: .revocationPercentage)
        isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        price = try c.decodeIfPresent(Int64.self, forKey: .price)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
    }

    /// Creditable as the pipeline says, and not upgraded away (a transaction the pipeline marks `is_upgraded` is
    /// never credited, whatever `creditable` says).
    var shouldCredit: Bool { creditable && isUpgraded != true }

    /// The `credit` object as a shape the rules know: `{"item": string, "amount": positive integer}` exactly, or
    /// `{"entitlement": string}` optionally with `"period": string` (descriptive: the expiry is Apple's
    /// `expires_date_ms`); null is `.nothing`; anything else is `.unknown` (never guessed).
    var creditShape: CreditShape { Self.shape(of: credit) }

    static func shape(of credit: JSONValue?) -> CreditShape {
        guard let credit, credit != .null else { return .nothing }
        guard case .object(let members) = credit else { return .unknown(description: describe(credit)) }
        if members.count == 2, case .string(let item)? = members["item"], !item.isEmpty,
            case .integer(let amount)? = members["amount"], amount > 0
        {
            return .grant(.item(name: item, amount: amount))
        }
        if case .string(let entitlement)? = members["entitlement"], !entitlement.isEmpty {
            let others = members.filter { $0.key != "entitlement" }
            if others.isEmpty { return .grant(.entitlement(name: entitlement)) }
            if others.count == 1, case .string? = others["period"] { return .grant(.entitlement(name: entitlement)) }
        }
        return .unknown(description: describe(credit))
    }

    private static func describe(_ value: JSONValue) -> String {
        guard let bytes = try? MessageCoding.encode(value) else { return "unencodable" }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.count > 200 ? String(text.prefix(200)) + "..." : text
    }
}
