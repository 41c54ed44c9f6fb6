import ReceiptModel
import ServiceSupport

/// `receipt-reconcile`'s command line.
public struct ReconcileOptions: Sendable, Equatable {
    /// Report drift, record and produce nothing, move no cursor.
    public var dryRun = false
    /// Which App Store: `production` (default) or `sandbox` (each has its own history, cursor and purchases).
    public var environment: AppStoreEnvironment = .production
    /// The app (the token's `bid`); default the only `ALLOWED_BUNDLE_IDS` entry.
    public var bundleId: String?
    /// Crash drills and tests: stop (exit 3) right after the N-th page is committed, before its corrections are
    /// produced, as a crash there would.
    public var stopAfterPages: Int?

    public init() {}

    /// - Throws: `CommandLineError.helpRequested` for `--help`, else `.usage` naming the flag that is wrong.
    public static func parse(_ arguments: inout CommandLineArguments) throws(CommandLineError) -> ReconcileOptions {
        var options = ReconcileOptions()
        while let flag = try arguments.nextFlag() {
            switch flag {
            // One sweep per run is the only mode (the CronJob schedules the runs); the flag says so explicitly.
            case "--once": break
            case "--dry-run": options.dryRun = true
            case "--environment":
                switch try arguments.value(for: flag).lowercased() {
                case "production": options.environment = .production
                case "sandbox": options.environment = .sandbox
                default: throw .usage("--environment takes production or sandbox")
                }
            case "--bundle-id": options.bundleId = try arguments.value(for: flag)
            case "--stop-after-pages": options.stopAfterPages = try arguments.int(for: flag, in: 1...1_000_000)
            default: throw .unknownArgument(flag)
            }
        }
        return options
    }
}

/// `receipt-reconcile`'s own settings (the APPLE_*, KAFKA_* and topic variables are read as the verifier and the
/// backfill read them).
public struct ReconcileSettings: Sendable, Equatable {
    /// `LEDGER_DATABASE_URL`: the ledger's PostgreSQL (its tables read, the reconcile tables written).
    public var databaseURL: String
    /// `RECONCILE_MAX_CALLS_PER_HOUR`: App Store Server API calls all sweeps of the last hour may make together.
    public var maxCallsPerHour: Int
    /// `RECONCILE_CREDITED_WITHIN_DAYS`: purchases credited this recently have their refund history checked; also
    /// how far back the first sweep reads Notification History.
    public var creditedWithinDays: Int
    /// `RECONCILE_NOTIFICATION_LAG_MINUTES`: notifications younger than this are left for the next sweep (they may
    /// still be on their way through the pipeline).
    public var notificationLagMinutes: Int

    public init(databaseURL: String, maxCallsPerHour: Int = 1_000, creditedWithinDays: Int = 30, notificationLagMinutes: Int = 60) {
        self.databaseURL = databaseURL
        self.maxCallsPerHour = maxCallsPerHour
        self.creditedWithinDays = creditedWithinDays
        self.notificationLagMinutes = notificationLagMinutes
    }

    public static func fromEnvironment(_ settings: Settings, environment: AppStoreEnvironment) throws(ConfigurationError)
        -> ReconcileSettings
    {
        let retention = environment == .sandbox ? 30 : 180
        return ReconcileSettings(
            databaseURL: try settings.required("LEDGER_DATABASE_URL"),
            maxCallsPerHour: try settings.int("RECONCILE_MAX_CALLS_PER_HOUR", default: 1_000, range: 1...1_000_000),
            creditedWithinDays: try settings.int(
                "RECONCILE_CREDITED_WITHIN_DAYS", default: min(30, retention), range: 1...retention),
            notificationLagMinutes: try settings.int(
                "RECONCILE_NOTIFICATION_LAG_MINUTES", default: 60, range: 0...1_440))
    }
}
