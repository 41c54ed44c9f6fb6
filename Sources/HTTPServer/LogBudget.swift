import ServiceSupport

/// At most `linesPerSecond` log lines a second from one source; the lines over it are dropped and counted, and the
/// count goes with the next line let through. libmicrohttpd logs a line per malformed request or connection closed
/// mid-request, which a hostile client can cause thousands of times a second: unbounded, the log would cost more than
/// answering them.
final class LogBudget: Sendable {
    private struct Window {
        var start: UInt64 = 0
        var used = 0
        var dropped = 0
    }

    let linesPerSecond: Int
    private let window = Locked(Window())

    init(linesPerSecond: Int) {
        self.linesPerSecond = max(linesPerSecond, 1)
    }

    /// Whether a line may be logged at `now` (`SystemTime.monotonicNanoseconds`): nil when it must be dropped, else how
    /// many lines were dropped since the last one let through.
    func admit(now: UInt64) -> Int? {
        window.withLock { window in
            if now &- window.start >= 1_000_000_000 {
                window.start = now
                window.used = 0
            }
            guard window.used < linesPerSecond else {
                window.dropped += 1
                return nil
            }
            window.used += 1
            defer { window.dropped = 0 }
            return window.dropped
        }
    }
}
