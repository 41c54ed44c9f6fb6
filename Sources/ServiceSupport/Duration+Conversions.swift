extension Duration {
    /// Whole nanoseconds (truncated): 0 for a negative duration, `UInt64.max` when it does not fit.
    @inlinable
    public var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let sum = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || sum.overflow ? .max : sum.partialValue
    }

    /// Whole milliseconds (truncated): 0 for a negative duration, `Int64.max` when it does not fit.
    @inlinable
    public var clampedMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let sum = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflow || sum.overflow ? .max : sum.partialValue
    }
}
