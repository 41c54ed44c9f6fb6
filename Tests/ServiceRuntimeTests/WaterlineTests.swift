@_spi(Testing) import ServiceRuntime
import Testing

/// The consumer link's pause/resume rule, without Kafka.
@Suite struct WaterlineTests {
    @Test func pausesAtTheHighMarkResumesAtTheLowOneAndHoldsBetween() {
        let waterline = ConsumerLink.Waterline(high: 10) { 0 }
        #expect(waterline.low == 5)
        #expect(waterline.step(level: 9, paused: false) == nil)
        #expect(waterline.step(level: 10, paused: false) == .pause)
        #expect(waterline.step(level: 12, paused: true) == nil)
        #expect(waterline.step(level: 6, paused: true) == nil)
        #expect(waterline.step(level: 5, paused: true) == .resume)
        #expect(waterline.step(level: 3, paused: false) == nil)
    }

    @Test func aLowMarkIsAlwaysBelowTheHighOne() {
        #expect(ConsumerLink.Waterline(high: 1) { 0 }.low == 0)
        #expect(ConsumerLink.Waterline(high: 4, low: 9) { 0 }.low == 3)
        #expect(ConsumerLink.Waterline(high: 0) { 0 }.high == 1)
    }
}

@Suite struct DrainOnceTests {
    @Test func onlyTheFirstClaimDrains() {
        let once = DrainOnce()
        #expect(!once.isClaimed)
        #expect(once.claim())
        #expect(!once.claim())
        #expect(once.isClaimed)
    }
}
