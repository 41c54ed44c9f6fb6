import Testing

@testable import Ledger

/// The ledger API's routes as a table: a path as the client sends it (percent-encoding kept) and where it goes.
/// Segments are split before they are decoded, and a parameter with a control character (a NUL included) names
/// nothing.
@Suite struct LedgerRoutesTests {
    typealias R = LedgerRoutes.Route

    static let read = ["GET", "HEAD"]

    static let rows: [(path: String, match: LedgerRoutes.Match)] = [
        ("/v1/users/u1", .route(.user("u1"), methods: read)),
        ("/v1/users/u1/consent", .route(.consent("u1"), methods: ["PUT", "DELETE"])),
        ("/v1/users/u1/app-account-token", .route(.appAccountToken("u1"), methods: ["PUT"])),
        ("/v1/users/a%2Fapp-account-token", .route(.user("a/app-account-token"), methods: read)),
        ("/v1/users/u1/spends", .route(.spends("u1"), methods: ["POST"])),
        ("/v1/users/u1/grants", .route(.grants("u1"), methods: ["POST"])),
        ("/v1/users/u1/history", .route(.history("u1"), methods: read)),
        ("/v1/purchases/apple:production:1000", .route(.purchase("apple:production:1000"), methods: read)),
        ("/v1/consumption-requests/e-1", .route(.consumptionRequest("e-1"), methods: read)),
        // An encoded '/' is part of the id: a user whose id ends in "/consent" is a user, not the consent route.
        ("/v1/users/a%2Fconsent", .route(.user("a/consent"), methods: read)),
        ("/v1/users/a%2Fb/spends", .route(.spends("a/b"), methods: ["POST"])),
        ("/v1/users/caf%C3%A9", .route(.user("café"), methods: read)),
        ("/v1/users/a%20b", .route(.user("a b"), methods: read)),
        // A raw '/' is a separator: these are no route.
        ("/v1/users/a/b", .notFound),
        ("/v1/users/u1/consent/extra", .notFound),
        ("/v1/users/", .notFound),
        ("/v1/users//consent", .notFound),
        ("/v1/purchases/", .notFound),
        ("/v1/users", .notFound),
        ("/v2/users/u1", .notFound),
        ("/V1/users/u1", .notFound),
        // A control character in any parameter names nothing: never cut short at a NUL.
        ("/v1/purchases/key%00junk", .invalid(methods: read, code: "invalid_identifier", message: "credit_key contains the control character U+0000 (identifiers may not hold C0, DEL or C1 control characters; nothing is truncated)")),
        ("/v1/users/u%0B1/consent", .invalid(methods: ["PUT", "DELETE"], code: "invalid_identifier", message: "user_id contains the control character U+000B (identifiers may not hold C0, DEL or C1 control characters; nothing is truncated)")),
        ("/v1/consumption-requests/e%7F", .invalid(methods: read, code: "invalid_identifier", message: "event_id contains the control character U+007F (identifiers may not hold C0, DEL or C1 control characters; nothing is truncated)")),
        ("/v1/users/u%C2%851/spends", .invalid(methods: ["POST"], code: "invalid_identifier", message: "user_id contains the control character U+0085 (identifiers may not hold C0, DEL or C1 control characters; nothing is truncated)")),
        // Not percent-encoding, or not UTF-8: refused rather than guessed.
        ("/v1/users/50%", .invalid(methods: read, code: "invalid_identifier", message: "user_id is not valid percent-encoded UTF-8")),
        ("/v1/users/%FF/history", .invalid(methods: read, code: "invalid_identifier", message: "user_id is not valid percent-encoded UTF-8")),
    ]

    @Test(arguments: rows.indices)
    func row(_ index: Int) {
        let row = Self.rows[index]
        #expect(LedgerRoutes.match(row.path) == row.match, "\(row.path)")
    }

    @Test func everyRouteIsInTheTableOnce() {
        #expect(LedgerRoutes.table.map(\.template) == [
            "/v1/users/{user_id}", "/v1/users/{user_id}/consent", "/v1/users/{user_id}/app-account-token",
            "/v1/users/{user_id}/spends",
            "/v1/users/{user_id}/grants", "/v1/users/{user_id}/history", "/v1/purchases/{credit_key}",
            "/v1/consumption-requests/{event_id}",
        ])
    }

    @Test func historyPagesTakeALimitAndACursorThisAPIGave() throws {
        #expect(try LedgerHTTPHandler.historyPage([:]).get() == (50, nil))
        let cursor = WalletHistory.cursor(1_234)
        #expect(WalletHistory.seq(fromCursor: cursor) == 1_234)
        #expect(try LedgerHTTPHandler.historyPage(["limit": "500", "cursor": cursor]).get() == (500, 1_234))
        for bad in [
            ["limit": "0"], ["limit": "501"], ["limit": "ten"], ["cursor": "0"], ["cursor": "012"], ["cursor": cursor + "x"],
            ["cursor": ""], ["cursor": "-5"], ["cursor": String(repeating: "9", count: 19)],
        ] {
            #expect((try? LedgerHTTPHandler.historyPage(bad).get()) == nil, "\(bad)")
        }
    }
}
