import ServiceSupport
import Testing

@Suite struct DurationConversionTests {
    @Test func wholeUnitsAreTruncated() {
        #expect(Duration.milliseconds(1500).clampedMilliseconds == 1500)
        #expect(Duration.microseconds(1999).clampedMilliseconds == 1)
        #expect(Duration.seconds(3).clampedNanoseconds == 3_000_000_000)
        #expect(Duration.nanoseconds(1).clampedNanoseconds == 1)
        #expect((Duration.seconds(2) + .nanoseconds(5)).clampedNanoseconds == 2_000_000_005)
    }

    @Test func negativeDurationsAreZeroAndHugeOnesSaturate() {
        #expect(Duration.milliseconds(-5).clampedNanoseconds == 0)
        #expect(Duration.milliseconds(-5).clampedMilliseconds == 0)
        #expect(Duration.seconds(Int64.max).clampedNanoseconds == UInt64.max)
        #expect(Duration.seconds(Int64.max).clampedMilliseconds == Int64.max)
    }
}
