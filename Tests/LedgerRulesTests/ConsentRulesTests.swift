import LedgerRules
import Testing

/// Which consents a `RESCIND_CONSENT` withdraws: the consent as it stands, against when Apple signed the rescind.
@Suite struct ConsentRulesTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let consented: Bool
        let consentUpdatedAtMs: Int64
        let rescindSignedAtMs: Int64?
        let withdraws: Bool
        let why: String
        var testDescription: String { why }
    }

    static let rows: [Row] = [
        Row(consented: true, consentUpdatedAtMs: 1_000, rescindSignedAtMs: 2_000, withdraws: true,
            why: "consent given before the rescind: withdrawn"),
        Row(consented: true, consentUpdatedAtMs: 3_000, rescindSignedAtMs: 2_000, withdraws: false,
            why: "consent given again after Apple signed the rescind (a late or replayed event): it stands"),
        Row(consented: true, consentUpdatedAtMs: 2_000, rescindSignedAtMs: 2_000, withdraws: true,
            why: "the same millisecond: the side that shares no data"),
        Row(consented: true, consentUpdatedAtMs: 3_000, rescindSignedAtMs: nil, withdraws: true,
            why: "no signed date: taken as new"),
        Row(consented: false, consentUpdatedAtMs: 1_000, rescindSignedAtMs: 2_000, withdraws: false,
            why: "already withdrawn: nothing to withdraw (its time stays the withdrawal's)"),
        Row(consented: false, consentUpdatedAtMs: 1_000, rescindSignedAtMs: nil, withdraws: false,
            why: "already withdrawn, no signed date: nothing to withdraw"),
    ]

    @Test(arguments: rows) func rescindWithdraws(_ row: Row) {
        #expect(
            ConsentRules.rescindWithdraws(
                consented: row.consented, consentUpdatedAtMs: row.consentUpdatedAtMs,
                rescindSignedAtMs: row.rescindSignedAtMs) == row.withdraws, "\(row.why)")
    }
}
