@_spi(Testing) import AppStore
import AppStoreServerAPI
import ReceiptModel
import ServiceSupport
import Testing
import TestSupport

/// The bounded, expiring memory of Apple's "not found" answers (the quota bound for junk transaction ids).
@Suite struct TransactionNotFoundMemoryTests {
    private func key(_ id: String, _ environment: AppStoreEnvironment = .production, bundle: String = "com.example.a")
        -> TransactionNotFoundMemory.Key
    {
        TransactionNotFoundMemory.Key(environment: environment, bundleId: bundle, transactionId: id)
    }

    private let notFound = ServerAPIError(
        .notFound, "Transaction id not found.", environment: .production, httpStatus: 404, errorCode: 4_040_010)

    @Test func aDefinitiveAnswerIsRecalledForItsOwnLookupOnly() {
        let memory = TransactionNotFoundMemory(clock: ManualClock())
        memory.remember(key("1"), notFound)
        #expect(memory.recall(key("1")) == notFound)
        #expect(memory.recall(key("1", .sandbox)) == nil)
        #expect(memory.recall(key("1", bundle: "com.example.b")) == nil)
        #expect(memory.recall(key("2")) == nil)
        #expect(memory.statistics.recalled == 1 && memory.statistics.remembered == 1)
    }

    @Test(arguments: [
        ServerAPIError.Kind.unauthorized, .rateLimited, .retryable, .invalidRequest,
    ])
    func nothingButApplesPermanentNoIsRemembered(kind: ServerAPIError.Kind) {
        let memory = TransactionNotFoundMemory(clock: ManualClock())
        memory.remember(key("1"), ServerAPIError(kind, "no", environment: .production))
        #expect(memory.recall(key("1")) == nil)
        #expect(memory.count == 0)
        let invalid = ServerAPIError(.invalidTransactionId, "Invalid transaction id.", environment: .production,
                                     httpStatus: 400, errorCode: 4_000_006)
        memory.remember(key("2"), invalid)
        #expect(memory.recall(key("2")) == invalid)
    }

    @Test func answersExpireAfterTheTTL() {
        let clock = ManualClock()
        let memory = TransactionNotFoundMemory(limits: .init(maxEntries: 10, ttl: .seconds(30)), clock: clock)
        memory.remember(key("1"), notFound)
        clock.advance(by: .seconds(29))
        memory.remember(key("2"), notFound)
        #expect(memory.recall(key("1")) != nil)
        clock.advance(by: .seconds(1))
        #expect(memory.recall(key("1")) == nil)
        #expect(memory.recall(key("2")) != nil)
        // Remembered again after expiry: a fresh 30 s.
        memory.remember(key("1"), notFound)
        clock.advance(by: .seconds(29))
        #expect(memory.recall(key("1")) != nil)
        #expect(memory.recall(key("2")) == nil)
    }

    @Test func atTheBoundTheOldestIsForgottenFirst() {
        let clock = ManualClock()
        let memory = TransactionNotFoundMemory(limits: .init(maxEntries: 3, ttl: .seconds(600)), clock: clock)
        for id in 1...5 {
            memory.remember(key(String(id)), notFound)
            clock.advance(by: .seconds(1))
        }
        #expect(memory.count == 3)
        #expect((1...5).map { memory.recall(key(String($0))) != nil } == [false, false, true, true, true])
        // Expired entries leave before live ones when room is needed (3 expires now, 4 and 5 a second or two later).
        clock.advance(by: .seconds(597))
        memory.remember(key("6"), notFound)
        #expect(memory.recall(key("3")) == nil)
        #expect(memory.recall(key("4")) != nil && memory.recall(key("5")) != nil && memory.recall(key("6")) != nil)
        #expect(memory.count <= 3)
    }

    @Test func theSameLookupRememberedTwiceIsOneEntryThatOutlivesItsOlderQueueItem() {
        let clock = ManualClock()
        let memory = TransactionNotFoundMemory(limits: .init(maxEntries: 2, ttl: .seconds(600)), clock: clock)
        // Two concurrent submissions of one id both asked Apple and both remember the answer.
        memory.remember(key("1"), notFound)
        clock.advance(by: .seconds(1))
        memory.remember(key("1"), notFound)
        #expect(memory.count == 1)
        clock.advance(by: .seconds(1))
        // Room is made by dropping the older queue item: the entry, remembered later, stays.
        memory.remember(key("2"), notFound)
        #expect(memory.recall(key("1")) != nil && memory.recall(key("2")) != nil)
    }

    @Test func disabledRemembersNothing() {
        let memory = TransactionNotFoundMemory(limits: .disabled, clock: ManualClock())
        memory.remember(key("1"), notFound)
        #expect(memory.recall(key("1")) == nil)
        let zeroEntries = TransactionNotFoundMemory(limits: .init(maxEntries: 0), clock: ManualClock())
        zeroEntries.remember(key("1"), notFound)
        #expect(zeroEntries.recall(key("1")) == nil)
    }
}
