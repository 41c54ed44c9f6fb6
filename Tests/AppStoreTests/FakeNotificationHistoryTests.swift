import FakeAppStore
import ServiceSupport
import Testing

@Suite("fake App Store notification history (bounded)")
struct FakeNotificationHistoryTests {
    private func notification(_ index: Int) -> FakeNotification {
        FakeNotification(
            notificationType: "ONE_TIME_CHARGE", subtype: nil, notificationUUID: "uuid-\(index)",
            bundleId: "com.example.game", environment: "Production", appAppleId: nil,
            signedDateMs: 1_700_000_000_000 + Int64(index))
    }

    @Test("keeps the most recent `capacity` notifications, oldest forgotten first; all are still observed")
    func boundedRing() {
        let observed = ObservedChanges()
        let history = FakeNotificationHistory(capacity: 3) { observed.append($0) }
        for index in 0..<5 {
            history.add(notification(index), signedPayload: "payload-\(index)", url: nil)
        }
        #expect(history.all.map(\.notificationUUID) == ["uuid-2", "uuid-3", "uuid-4"])
        #expect(history.entry(uuid: "uuid-0") == nil)
        #expect(history.entry(uuid: "uuid-4")?.signedPayload == "payload-4")
        #expect(observed.count == 5)
        history.add(notification(5), signedPayload: "payload-5", url: nil)
        #expect(history.all.map(\.notificationUUID) == ["uuid-3", "uuid-4", "uuid-5"])
    }

    @Test("the default cap is documented and bounds a long run")
    func defaultCapacity() {
        let history = FakeNotificationHistory()
        #expect(history.capacity == FakeNotificationHistory.defaultCapacity)
        #expect(FakeNotificationHistory.defaultCapacity == 4_096)
        for index in 0..<(FakeNotificationHistory.defaultCapacity + 10) {
            history.add(notification(index), signedPayload: "p", url: nil)
        }
        #expect(history.all.count == FakeNotificationHistory.defaultCapacity)
        #expect(history.all.first?.notificationUUID == "uuid-10")
    }
}

final class ObservedChanges: Sendable {
    private let changes = Locked<Int>(0)

    func append(_ change: FakeNotificationHistory.Change) {
        _ = change
        changes.withLock { $0 += 1 }
    }

    var count: Int { changes.withLock { $0 } }
}
