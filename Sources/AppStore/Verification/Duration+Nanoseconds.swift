extension Duration {
    /// Whole nanoseconds, 0 for negative durations, saturating at `UInt64.max`.
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let sum = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || sum.overflow ? .max : sum.partialValue
    }
}
