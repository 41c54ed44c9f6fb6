import LedgerRules
import Testing

/// Whose a claim is, as a table (issue 41: a free sandbox purchase must not capture a victim's production purchases;
/// the backend's declaration of a token is never taken). Each row: what the ledger knows, and the owner the rules
/// name.
@Suite struct OwnerRulesTests {
    typealias O = OwnerRules

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        let facts: O.Facts
        let expected: O.Owner
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "a result without a token: its user",
            facts: O.Facts(claimant: "u1", environment: .production, hasToken: false),
            expected: O.Owner(user: "u1", basis: .claimant)),
        Row(
            name: "a result with a token nobody holds: its user (the credit will link the token)",
            facts: O.Facts(claimant: "u1", environment: .production, hasToken: true),
            expected: O.Owner(user: "u1", basis: .claimant)),
        Row(
            name: "a token linked in this environment belongs to its user, whoever submits: the submitter refused",
            facts: O.Facts(claimant: "thief", environment: .production, hasToken: true, tokenLinks: [.production: "u1"]),
            expected: O.Owner(user: "u1", basis: .linkedToken, claimantRefused: true)),
        Row(
            name: "a token linked by a sandbox claim does not decide a production purchase",
            facts: O.Facts(claimant: "victim", environment: .production, hasToken: true, tokenLinks: [.sandbox: "attacker"]),
            expected: O.Owner(user: "victim", basis: .claimant)),
        Row(
            name: "a token linked in production does not decide a sandbox purchase either",
            facts: O.Facts(claimant: "tester", environment: .sandbox, hasToken: true, tokenLinks: [.production: "u1"]),
            expected: O.Owner(user: "tester", basis: .claimant)),
        Row(
            name: "a declared token belongs to its declared user in production, whoever submits",
            facts: O.Facts(claimant: "attacker", environment: .production, hasToken: true, declaredOwner: "victim"),
            expected: O.Owner(user: "victim", basis: .declaredToken, claimantRefused: true)),
        Row(
            name: "a declared token belongs to its declared user in the sandbox too",
            facts: O.Facts(claimant: "attacker", environment: .sandbox, hasToken: true, declaredOwner: "victim"),
            expected: O.Owner(user: "victim", basis: .declaredToken, claimantRefused: true)),
        Row(
            name: "a declaration outweighs a link a claim made (a captured token is repaired by declaring it)",
            facts: O.Facts(
                claimant: "victim", environment: .production, hasToken: true, declaredOwner: "victim",
                tokenLinks: [.production: "attacker"]),
            expected: O.Owner(user: "victim", basis: .declaredToken)),
        Row(
            name: "the declared user's own claim is not refused",
            facts: O.Facts(claimant: "u1", environment: .production, hasToken: true, declaredOwner: "u1"),
            expected: O.Owner(user: "u1", basis: .declaredToken)),
        Row(
            name: "an event with a declared token: the declared user (a renewal after Set App Account Token)",
            facts: O.Facts(claimant: nil, environment: .production, hasToken: true, declaredOwner: "u2"),
            expected: O.Owner(user: "u2", basis: .declaredToken)),
        Row(
            name: "an event with a token linked in its environment: that user",
            facts: O.Facts(claimant: nil, environment: .sandbox, hasToken: true, tokenLinks: [.sandbox: "tester"]),
            expected: O.Owner(user: "tester", basis: .linkedToken)),
        Row(
            name: "an event whose token is linked only in another environment waits for the token",
            facts: O.Facts(
                claimant: nil, environment: .production, hasToken: true, tokenLinks: [.sandbox: "attacker"],
                originalLinks: [.production: "u1"]),
            expected: O.Owner(user: nil, basis: nil, waitsOn: .token)),
        Row(
            name: "an event with a token nobody holds waits for it, never for the original id's user",
            facts: O.Facts(claimant: nil, environment: .production, hasToken: true, originalLinks: [.production: "u1"]),
            expected: O.Owner(user: nil, basis: nil, waitsOn: .token)),
        Row(
            name: "an event without a token: the original id's user in its environment",
            facts: O.Facts(claimant: nil, environment: .production, hasToken: false, originalLinks: [.production: "u1"]),
            expected: O.Owner(user: "u1", basis: .linkedOriginal)),
        Row(
            name: "an event without a token whose original id is linked only in the sandbox waits",
            facts: O.Facts(claimant: nil, environment: .production, hasToken: false, originalLinks: [.sandbox: "u1"]),
            expected: O.Owner(user: nil, basis: nil, waitsOn: .originalTransactionId)),
    ]

    @Test(arguments: rows)
    func owner(_ row: Row) {
        #expect(O.owner(row.facts) == row.expected)
    }

    struct LinkRow: CustomTestStringConvertible, Sendable {
        let name: String
        let current: String?
        let declared: Bool
        let policy: OwnershipPolicy
        let links: Bool
        var testDescription: String { name }
    }

    static let linkRows: [LinkRow] = [
        LinkRow(name: "nothing linked yet: linked", current: nil, declared: false, policy: .keep, links: true),
        LinkRow(name: "linked to the owner already: nothing", current: "u1", declared: false, policy: .keep, links: false),
        LinkRow(name: "keep: the first link stays", current: "u0", declared: false, policy: .keep, links: false),
        LinkRow(name: "transfer: the latest owner's", current: "u0", declared: false, policy: .transfer, links: true),
        LinkRow(name: "a declared token is never linked by a claim", current: nil, declared: true, policy: .keep, links: false),
        LinkRow(
            name: "a declared token is never linked, under transfer either", current: "u0", declared: true,
            policy: .transfer, links: false),
    ]

    @Test(arguments: linkRows)
    func links(_ row: LinkRow) {
        #expect(O.links("u1", current: row.current, declared: row.declared, policy: row.policy) == row.links)
    }

    @Test func aDeclarationIsNeverTakenByAnother() {
        #expect(O.declare(user: "u1", declaredOwner: nil) == .declared)
        #expect(O.declare(user: "u1", declaredOwner: "u1") == .alreadyDeclared)
        #expect(O.declare(user: "u2", declaredOwner: "u1") == .conflict)
    }
}
