import AppStore
import Dispatch
import FakeAppStore
import Foundation
import ReceiptModel
import Testing

/// A 21007/21008 redirect gets only what is left of the attempt's deadline, never a fresh full timeout.
@Suite(.serialized) struct RedirectDeadlineTests {
    private func answer(
        _ harness: FakeAppStoreHarness, _ receipt: String, timeoutMs: Int, deadlineMs: Int
    ) async -> BackendAnswer {
        await withCheckedContinuation { continuation in
            harness.backend.verify(
                BackendRequest(
                    receiptData: receipt, startEnvironment: .production, timeoutMs: timeoutMs,
                    deadline: .now() + .milliseconds(deadlineMs))
            ) { continuation.resume(returning: $0) }
        }
    }

    @Test func theRedirectedCallEndsByTheDeadline() async throws {
        let harness = try FakeAppStoreHarness()
        // Both endpoints answer after 300 ms: production's 21007 leaves ~200 ms of the 500 for the sandbox call.
        let receipt = FakeReceipt.valid(id: "slow-sandbox", environment: "Sandbox", delayMs: 300)
        // A whole configured timeout for the sandbox call would let its answer (at ~600 ms) arrive as a receipt;
        // limited to what is left of the 500 ms, it times out first (or, on a busy machine, is not even made). The
        // outcome, not the elapsed time, is what the test judges: the suites share two busy cores.
        let answer = await answer(harness, receipt, timeoutMs: 3_000, deadlineMs: 500)
        #expect(answer.result == .retryable(.transient))
        #expect(answer.environment == .sandbox)
        #expect(harness.fake.calls(receipt: "slow-sandbox").production == 1)
    }

    @Test func noRedirectedCallWithTooLittleTimeLeft() async throws {
        let harness = try FakeAppStoreHarness()
        // Production answers 21007 quickly; the deadline leaves less than 50 ms after that answer.
        let receipt = FakeReceipt.valid(id: "late-sandbox", environment: "Sandbox", delayMs: 100)
        let answer = await answer(harness, receipt, timeoutMs: 1_000, deadlineMs: 140)
        guard case .retryable = answer.result else {
            Issue.record("expected a retryable answer: \(answer)")
            return
        }
        // The redirect decision was reached (production's 21007 arrived), so "no sandbox call" is the rule's doing.
        #expect(harness.fake.calls(receipt: "late-sandbox").production == 1)
        #expect(answer.appleStatus == 21007)
        #expect(harness.fake.calls(receipt: "late-sandbox").sandbox == 0)
    }

    @Test func aRedirectWithTimeLeftStillSucceeds() async throws {
        let harness = try FakeAppStoreHarness()
        let receipt = FakeReceipt.valid(id: "quick-sandbox", environment: "Sandbox", delayMs: 50)
        let answer = await answer(harness, receipt, timeoutMs: 2_000, deadlineMs: 2_000)
        guard case .receipt(let apple) = answer.result else {
            Issue.record("no receipt: \(answer)")
            return
        }
        #expect(apple.environment == .sandbox)
        #expect(answer.calls == 2)
    }
}
