/// Reads the `Retry-After` header of an App Store Server API 429.
///
/// Apple documents it as "a UNIX time, in milliseconds" when the next request may be sent; other clients read it as
/// seconds (a delta, as HTTP defines it, or a UNIX time). All three are accepted, told apart by size: above 10^12 it
/// is epoch milliseconds (10^12 ms is 2001), above 10^9 epoch seconds (10^9 s is 2001), otherwise a delta in
/// seconds. A missing or unreadable value holds for `defaultHoldMs`; every hold is kept within
/// `minimumHoldMs...maximumHoldMs`, so a stale time does not leave the endpoint hammered and a bogus far-future
/// one does not stop it for days.
public enum RetryAfter {
    /// The hold when Apple gives no usable `Retry-After` (its limits are enforced hourly; a minute is a compromise).
    public static let defaultHoldMs: Int64 = 60_000
    public static let minimumHoldMs: Int64 = 1_000
    /// An hour: Apple's limits are per hour, so no hold needs to be longer.
    public static let maximumHoldMs: Int64 = 3_600_000

    /// Milliseconds to hold the endpoint back from `nowWallMs` (epoch milliseconds).
    public static func holdMs(
        _ value: String?, nowWallMs: Int64, defaultHoldMs: Int64 = RetryAfter.defaultHoldMs
    ) -> Int64 {
        let raw: Int64
        if let number = value.flatMap(parse) {
            if number > 1_000_000_000_000 {
                raw = number - nowWallMs
            } else if number > 1_000_000_000 {
                raw = number.multipliedReportingOverflow(by: 1_000).overflow ? Int64.max : number * 1_000 - nowWallMs
            } else {
                raw = number * 1_000
            }
        } else {
            raw = defaultHoldMs
        }
        return min(max(raw, minimumHoldMs), maximumHoldMs)
    }

    /// A non-negative whole number (a fraction is dropped: `1.5` seconds holds 1 s, raised to the minimum anyway).
    private static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingASCIISpaces
        let whole = trimmed.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard !whole.isEmpty, whole.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(whole) ?? Int64.max
    }
}

extension String {
    fileprivate var trimmingASCIISpaces: Substring {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" || last == "\r" || last == "\n" { slice.removeLast() }
        return slice
    }
}
