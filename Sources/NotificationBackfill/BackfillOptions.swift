import Foundation

/// `receipt-notifications-backfill`'s command line.
public struct BackfillOptions: Sendable, Equatable {
    /// Notifications signed at or after this time (epoch ms).
    public var sinceMs: Int64
    /// ... and before this one (epoch ms; default now).
    public var untilMs: Int64
    /// Only the notifications Apple could not deliver.
    public var onlyFailures = false
    /// Read and print, write nothing.
    public var dryRun = false
    /// Which App Store: `production` (default) or `sandbox`.
    public var sandbox = false
    /// The app whose notifications to read (the token's `bid`); default the only `ALLOWED_BUNDLE_IDS` entry.
    public var bundleId: String?

    public init(sinceMs: Int64, untilMs: Int64) {
        self.sinceMs = sinceMs
        self.untilMs = untilMs
    }

    /// Apple keeps 180 days of production history and 30 of sandbox history.
    public var retentionDays: Int64 { sandbox ? 30 : 180 }

    /// Parses the arguments; nil for `--help`.
    /// - Throws: `BackfillError` naming the flag that is missing or invalid.
    public static func parse(_ arguments: [String], nowMs: Int64) throws(BackfillError) -> BackfillOptions? {
        var since: Int64?
        var until: Int64?
        var options = BackfillOptions(sinceMs: 0, untilMs: nowMs)
        var remaining = arguments[...]
        func value(_ flag: String) throws(BackfillError) -> String {
            guard let next = remaining.popFirst() else { throw BackfillError("\(flag) needs a value") }
            return next
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--help", "-h": return nil
            case "--since": since = try time(try value(argument), flag: argument)
            case "--until": until = try time(try value(argument), flag: argument)
            case "--only-failures": options.onlyFailures = true
            case "--dry-run": options.dryRun = true
            case "--environment":
                switch try value(argument).lowercased() {
                case "production": options.sandbox = false
                case "sandbox": options.sandbox = true
                default: throw BackfillError("--environment takes production or sandbox")
                }
            case "--bundle-id": options.bundleId = try value(argument)
            default: throw BackfillError("unknown argument '\(argument)'")
            }
        }
        guard let since else {
            throw BackfillError("--since is required: from when to recover notifications (for example the start "
                + "of the outage)")
        }
        options.sinceMs = since
        options.untilMs = until ?? nowMs
        guard options.sinceMs < options.untilMs else {
            throw BackfillError("--since must be before --until")
        }
        let oldest = nowMs - options.retentionDays * 86_400_000
        guard options.sinceMs >= oldest else {
            throw BackfillError(
                "--since is more than \(options.retentionDays) days ago: Apple keeps \(options.retentionDays) days of "
                    + "\(options.sandbox ? "sandbox" : "production") notification history")
        }
        return options
    }

    /// Epoch milliseconds or an ISO 8601 time (`2026-01-31T12:00:00Z`).
    static func time(_ text: String, flag: String) throws(BackfillError) -> Int64 {
        if let milliseconds = Int64(text) { return milliseconds }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        throw BackfillError(
            "\(flag) takes epoch milliseconds or an ISO 8601 time like 2026-01-31T12:00:00Z, not '\(text)'")
    }
}
