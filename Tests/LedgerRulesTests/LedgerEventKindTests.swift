import LedgerRules
import Testing

/// The events topic's types as the ledger reads them: the contract's closed set, each with its input.
@Suite struct LedgerEventKindTests {
    @Test func everyTypeOfTheContractAndNothingElse() {
        #expect(LedgerEventKind.of("credit") == .credit)
        #expect(LedgerEventKind.of("debit") == .debit)
        #expect(LedgerEventKind.of("recredit") == .recredit)
        #expect(LedgerEventKind.of("revoke") == .revoke)
        #expect(LedgerEventKind.of("subscription_status") == .subscriptionStatus)
        #expect(LedgerEventKind.of("consumption_request") == .consumptionRequest)
        for quiet in ["test", "info"] { #expect(LedgerEventKind.of(quiet) == .noMoney) }
        #expect(LedgerEventKind.credit.movesMoney && LedgerEventKind.subscriptionStatus.movesMoney)
        #expect(!LedgerEventKind.consumptionRequest.movesMoney && !LedgerEventKind.noMoney.movesMoney)
        for unknown in ["Credit", "refund", "", "consent_withdrawn"] { #expect(LedgerEventKind.of(unknown) == nil) }
    }

    @Test func moneyEventsCarryApplesSigningTime() {
        #expect(
            LedgerEventKind.debit.input(revocationPercentage: 50_000, expiresDateMs: nil, signedDateMs: 7)
                == .signed(atMs: 7, .debit(revocationPercentage: 50_000)))
        #expect(LedgerEventKind.recredit.input(revocationPercentage: nil, expiresDateMs: nil, signedDateMs: nil) == .recredit)
        #expect(
            LedgerEventKind.subscriptionStatus.input(revocationPercentage: nil, expiresDateMs: 9, signedDateMs: 3)
                == .signed(atMs: 3, .subscriptionStatus(expiresDateMs: 9)))
        #expect(LedgerEventKind.credit.input(revocationPercentage: nil, expiresDateMs: nil, signedDateMs: 1) == nil)
        #expect(LedgerEventKind.noMoney.input(revocationPercentage: nil, expiresDateMs: nil, signedDateMs: 1) == nil)
        #expect(
            LedgerEventKind.consumptionRequest.input(revocationPercentage: nil, expiresDateMs: nil, signedDateMs: 1)
                == nil)
    }
}
