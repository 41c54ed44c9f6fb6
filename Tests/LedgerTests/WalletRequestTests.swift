import LedgerRules
import Testing

@testable import Ledger

/// Spend and grant requests as the API reads them, before anything is applied: the Idempotency-Key as Stripe and as
/// the IETF draft send it, and the body's members (the process tests send the same through the server).
@Suite struct WalletRequestTests {
    static let keys: [(header: String?, key: String?, code: String?)] = [
        ("8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", nil),
        (#""8e03978e-40d5""#, "8e03978e-40d5", nil),
        (#""a\"b\\c""#, #"a"b\c"#, nil),
        ("a b", "a b", nil),
        (nil, nil, "idempotency_key_missing"),
        ("", nil, "idempotency_key_missing"),
        (#""""#, nil, "invalid_idempotency_key"),
        (#""unterminated"#, nil, "invalid_idempotency_key"),
        (#""a\nb""#, nil, "invalid_idempotency_key"),
        ("a\tb", nil, "invalid_idempotency_key"),
        ("café", nil, "invalid_idempotency_key"),
        (String(repeating: "k", count: 255), String(repeating: "k", count: 255), nil),
        (String(repeating: "k", count: 256), nil, "invalid_idempotency_key"),
    ]

    @Test(arguments: keys.indices)
    func idempotencyKey(_ index: Int) {
        let row = Self.keys[index]
        switch WalletRequest.idempotencyKey(row.header) {
        case .success(let key): #expect(key == row.key && row.code == nil, "\(row.header ?? "nil")")
        case .failure(let problem): #expect(problem.code == row.code && row.key == nil, "\(row.header ?? "nil")")
        }
    }

    @Test func aSpendReadsItsMembersAndTheCatalogDecidesTheItem() throws {
        func parse(_ body: String, _ operation: WalletRequest.Operation = .spend) -> Result<WalletRequest, WalletRequest.Problem> {
            WalletRequest.parse(
                operation, userId: "u1", idempotencyKey: "k", body: Array(body.utf8), knowsItem: { $0 == "gems" })
        }
        let spend = try parse(#"{"item":"gems","amount":5,"book":"sandbox","reference":"r"}"#).get()
        #expect(spend == WalletRequest(operation: .spend, userId: "u1", idempotencyKey: "k", book: .sandbox, item: "gems", amount: 5, note: "r"))
        let grant = try parse(#"{"item":"gems","amount":9223372036854775807,"book":null,"reason":null}"#, .grant).get()
        #expect(grant.amount == Int64.max && grant.book == .production && grant.note == nil)
        for (body, code) in [
            (#"{"item":"coins","amount":1}"#, "unknown_item"), (#"{"item":"gems","amount":1,"reason":"x"}"#, "invalid_request"),
            (#"{"item":"gems","amount":2.0}"#, "invalid_amount"), (#"{"item":"gems","amount":-1}"#, "invalid_amount"),
            (#"{"item":"gems","amount":1,"book":"Production"}"#, "invalid_book"), ("", "invalid_json"),
        ] {
            #expect((try? parse(body).get()) == nil)
            if case .failure(let problem) = parse(body) { #expect(problem.code == code, "\(body)") }
        }
        let long = WalletRequest.parse(
            .spend, userId: String(repeating: "u", count: 257), idempotencyKey: "k", body: Array(#"{"item":"gems","amount":1}"#.utf8),
            knowsItem: { _ in true })
        #expect((try? long.get()) == nil)
    }
}
