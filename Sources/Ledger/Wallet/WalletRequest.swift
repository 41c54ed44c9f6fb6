import LedgerRules
import ReceiptModel
import ServiceSupport

/// A spend or a grant as the API received it, validated (`WalletRequest.parse`): `POST /v1/users/{user_id}/spends`
/// `{"item", "amount", "book"?, "reference"?}` or `.../grants` `{"item", "amount", "book"?, "reason"?}`, with the
/// caller's `Idempotency-Key`.
struct WalletRequest: Sendable, Equatable {
    typealias Operation = WalletMetrics.Operation

    let operation: Operation
    let userId: String
    let idempotencyKey: String
    let book: Book
    let item: String
    let amount: Int64
    /// A spend's `reference`, a grant's `reason`.
    let note: String?

    var wallet: WalletKey { WalletKey(user: userId, book: book, item: item) }

    /// The request's identity for idempotency: the user and the key (keys are per user).
    var id: RequestId { RequestId(user: userId, key: idempotencyKey) }

    struct RequestId: Hashable, Sendable {
        let user: String
        let key: String
    }

    /// The longest `user_id` a spend or grant may name (characters, at most 4 UTF-8 bytes each): every key the wallet
    /// indexes stays far below PostgreSQL's index entry limit, so one request can never make a batch of others fail.
    static let maxUserIdCharacters = 256
    static let maxKeyBytes = 255
    static let maxItemCharacters = 64
    static let maxNoteCharacters = 256

    /// Why a request is refused before anything is applied (400, nothing stored).
    struct Problem: Error, Sendable, Equatable {
        let code: String
        let message: String
    }

    /// Reads and checks a request. Any problem is the caller's (400); nothing about it is stored.
    /// - Parameters:
    ///   - idempotencyKey: the `Idempotency-Key` header as sent (nil: absent).
    ///   - knowsItem: whether an item name is one the deployment credits (the catalog's items; always true without
    ///     a catalog).
    static func parse(
        _ operation: Operation, userId: String, idempotencyKey: String?, body: [UInt8],
        knowsItem: (String) -> Bool
    ) -> Result<WalletRequest, Problem> {
        guard userId.unicodeScalars.count <= maxUserIdCharacters else {
            return .failure(
                Problem(code: "invalid_identifier", message: "user_id is longer than \(maxUserIdCharacters) characters"))
        }
        let key: String
        switch Self.idempotencyKey(idempotencyKey) {
        case .success(let value): key = value
        case .failure(let problem): return .failure(problem)
        }
        let parsed: (value: JSONValue, onlyPlainIntegers: Bool)
        do {
            parsed = try JSONParser.parseNotingNumbers(body)
        } catch {
            return .failure(Problem(code: "invalid_json", message: "the body is not JSON: \(error.description)"))
        }
        guard case .object(let members) = parsed.value else {
            return .failure(Problem(code: "invalid_request", message: "the body is not a JSON object"))
        }
        let noteName = operation == .spend ? "reference" : "reason"
        if let unknown = members.keys.sorted().first(where: { !["item", "amount", "book", noteName].contains($0) }) {
            return .failure(
                Problem(
                    code: "invalid_request",
                    message: "unknown member \(JSONText.quoted(unknown)) (a \(operation.rawValue) takes item, amount, book, \(noteName))"))
        }
        guard case .string(let item)? = members["item"], !item.isEmpty else {
            return .failure(Problem(code: "invalid_item", message: "item is required: the name of a credited item"))
        }
        if let problem = text(item, field: "item", maxCharacters: maxItemCharacters) {
            return .failure(Problem(code: "invalid_item", message: problem))
        }
        guard knowsItem(item) else {
            return .failure(
                Problem(code: "unknown_item", message: "no product of PRODUCT_CATALOG_FILE credits the item \(JSONText.quoted(item))"))
        }
        guard case .integer(let amount)? = members["amount"], parsed.onlyPlainIntegers, amount > 0 else {
            return .failure(
                Problem(
                    code: "invalid_amount",
                    message: "amount is required: a positive whole number of units, written as an integer, at most \(Int64.max)"))
        }
        var book = Book.production
        switch members["book"] {
        case nil, .null?: break
        case .string(let name)? where Book(rawValue: name) != nil: book = Book(rawValue: name) ?? .production
        default:
            return .failure(Problem(code: "invalid_book", message: "book is production (the default) or sandbox"))
        }
        var note: String?
        switch members[noteName] {
        case nil, .null?: break
        case .string(let text)?:
            if let problem = Self.text(text, field: noteName, maxCharacters: maxNoteCharacters) {
                return .failure(Problem(code: "invalid_\(noteName)", message: problem))
            }
            note = text
        default:
            return .failure(Problem(code: "invalid_\(noteName)", message: "\(noteName) is a string"))
        }
        return .success(
            WalletRequest(
                operation: operation, userId: userId, idempotencyKey: key, book: book, item: item, amount: amount,
                note: note))
    }

    /// The `Idempotency-Key` header's value: as Stripe sends it (the bare key), or as the IETF draft writes it (a
    /// Structured Field string, quoted, the key between the quotes). 1 to 255 bytes of printable ASCII as sent (a
    /// UUID is the expected key); a control character or any other byte is refused, never cut or repaired.
    static func idempotencyKey(_ header: String?) -> Result<String, Problem> {
        guard let header, !header.isEmpty else {
            return .failure(
                Problem(
                    code: "idempotency_key_missing",
                    message: "send an Idempotency-Key header: a unique key per spend or grant (a UUID), the same on every retry"))
        }
        guard header.utf8.count <= maxKeyBytes, header.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) })
        else {
            return .failure(
                Problem(
                    code: "invalid_idempotency_key",
                    message: "Idempotency-Key is 1 to \(maxKeyBytes) printable ASCII characters (no control characters)"))
        }
        guard header.hasPrefix("\"") else { return .success(header) }
        guard let key = structuredString(header), !key.isEmpty else {
            return .failure(Problem(code: "invalid_idempotency_key", message: "Idempotency-Key is not a valid quoted string"))
        }
        return .success(key)
    }

    /// An RFC 8941 string (`"..."` with `\"` and `\\` escapes, printable ASCII), unquoted; nil when it is not one.
    static func structuredString(_ text: String) -> String? {
        var scalars = Array(text.unicodeScalars)
        guard scalars.count >= 2, scalars.first == "\"", scalars.last == "\"" else { return nil }
        scalars = Array(scalars.dropFirst().dropLast())
        var result = String.UnicodeScalarView()
        var escaped = false
        for scalar in scalars {
            guard (0x20...0x7E).contains(scalar.value) else { return nil }
            if escaped {
                guard scalar == "\"" || scalar == "\\" else { return nil }
                result.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else if scalar == "\"" {
                return nil
            } else {
                result.append(scalar)
            }
        }
        return escaped ? nil : String(result)
    }

    private static func text(_ value: String, field: String, maxCharacters: Int) -> String? {
        if value.unicodeScalars.count > maxCharacters { return "\(field) is longer than \(maxCharacters) characters" }
        return IdentifierText.problem(field: field, value)
    }

    /// Whether `stored` is this request (the same operation and content) made before under the same key.
    func isSame(as stored: StoredRequest) -> Bool {
        stored.operation == operation && stored.book == book && stored.item == item && stored.amount == amount
            && stored.note == note
    }
}

/// A spend or grant recorded under its key (`wallet_requests`), with the answer it got.
struct StoredRequest: Sendable, Equatable {
    let operation: WalletRequest.Operation
    let book: Book
    let item: String
    let amount: Int64
    let note: String?
    let status: Int
    let body: String
}

/// What the API answers a spend or grant request.
struct WalletAnswer: Sendable, Equatable {
    let status: Int
    let body: String
    /// The stored answer of the same request made before (`Idempotent-Replayed: true`).
    var replayed = false
    let outcome: WalletMetrics.Outcome

    static func error(_ status: Int, _ code: String, _ message: String, outcome: WalletMetrics.Outcome) -> WalletAnswer {
        WalletAnswer(
            status: status,
            body: #"{"error":{"code":\#(JSONText.quoted(code)),"message":\#(JSONText.quoted(message))}}"#,
            outcome: outcome)
    }

    static func spent(_ request: WalletRequest, balance: Int64, attribution: [(share: LotShare, kind: LotKind)])
        -> WalletAnswer
    {
        let lots = attribution.map {
            #"{"lot":\#(JSONText.quoted($0.share.lot)),"kind":"\#($0.kind.rawValue)","amount":\#($0.share.amount)}"#
        }.joined(separator: ",")
        return WalletAnswer(
            status: 200,
            body: #"{\#(common(request, balance: balance)),"reference":\#(quotedOrNull(request.note)),"attribution":[\#(lots)]}"#,
            outcome: .applied)
    }

    static func granted(_ request: WalletRequest, balance: Int64, debtRepaid: Int64) -> WalletAnswer {
        WalletAnswer(
            status: 200,
            body: #"{\#(common(request, balance: balance)),"reason":\#(quotedOrNull(request.note)),"debt_repaid":\#(debtRepaid)}"#,
            outcome: .applied)
    }

    static func refused(_ refusal: WalletRules.Refusal, wallet: Wallet) -> WalletAnswer {
        let message: String
        switch refusal {
        case .insufficientBalance(let available):
            message = "the balance holds \(available) units; nothing was spent"
        case .debt(let outstanding):
            message = "\(outstanding) units are owed after a refund (LEDGER_CLAWBACK=debt); nothing can be spent until a purchase or a grant repays them"
        }
        return WalletAnswer(
            status: 409,
            body: #"{"error":{"code":"insufficient_balance","message":\#(JSONText.quoted(message)),"balance":\#(wallet.balance),"debt":\#(wallet.debt)}}"#,
            outcome: .insufficientBalance)
    }

    private static func common(_ request: WalletRequest, balance: Int64) -> String {
        #""user_id":\#(JSONText.quoted(request.userId)),"idempotency_key":\#(JSONText.quoted(request.idempotencyKey)),"item":\#(JSONText.quoted(request.item)),"book":"\#(request.book.rawValue)","amount":\#(request.amount),"balance":\#(balance)"#
    }

    private static func quotedOrNull(_ value: String?) -> String { value.map(JSONText.quoted) ?? "null" }
}
