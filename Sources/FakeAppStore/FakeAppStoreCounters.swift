import Synchronization
import ServiceSupport

/// Calls per receipt and environment, for tests (`GET /admin/counters`).
final class FakeAppStoreCounters: Sendable {
    struct Calls: Sendable, Equatable {
        var production = 0
        var sandbox = 0
        var total: Int { production + sandbox }
    }

    private struct State {
        var byReceipt: [String: Calls] = [:]
        var totals = Calls()
    }

    private let state = Locked(State())

    /// Counts a call and returns the receipt's calls before it (both environments).
    func record(receipt key: String, sandbox: Bool) -> Int {
        state.withLock { state in
            let before = state.byReceipt[key, default: Calls()]
            var after = before
            if sandbox {
                after.sandbox += 1
                state.totals.sandbox += 1
            } else {
                after.production += 1
                state.totals.production += 1
            }
            state.byReceipt[key] = after
            return before.total
        }
    }

    func calls(receipt key: String) -> Calls {
        state.withLock { $0.byReceipt[key] ?? Calls() }
    }

    func knows(_ key: String) -> Bool {
        state.withLock { $0.byReceipt[key] != nil }
    }

    var totals: Calls { state.withLock { $0.totals } }
    var receiptCount: Int { state.withLock { $0.byReceipt.count } }

    func reset() {
        state.withLock { $0 = State() }
    }
}
