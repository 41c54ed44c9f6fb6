#if canImport(Glibc)
import Glibc
#endif
import ServiceSupport

/// Open-file descriptors for the connections an `HTTPServer` may hold: each connection is one descriptor, and a
/// process out of descriptors cannot open anything else either (Kafka's sockets, files), so the server makes sure
/// they fit at start. Many systems start services with a soft limit of 1,024 and a much higher hard limit.
enum FileDescriptorBudget {
    /// Descriptors left for everything but client connections: Kafka and other sockets, epoll sets and their
    /// wake-up pipes, log and configuration files.
    static let reserve = 256

    struct Plan: Equatable {
        /// The soft limit to set, when it must be raised.
        var raiseSoftLimitTo: UInt64?
        /// The connection limit that fits under the (raised) soft limit with `reserve` to spare.
        var connectionLimit: Int
    }

    /// What to do for `connectionLimit` connections under the limits `soft` and `hard` (`RLIM_INFINITY` is
    /// `UInt64.max`): raise the soft limit as far as needed and allowed, and lower the connection limit to what fits.
    static func plan(connectionLimit: Int, soft: UInt64, hard: UInt64) -> Plan {
        let needed = UInt64(max(connectionLimit, 0)) &+ UInt64(reserve)
        guard soft < needed else { return Plan(raiseSoftLimitTo: nil, connectionLimit: connectionLimit) }
        let target = min(needed, max(hard, soft))
        let fitting = target > UInt64(reserve) ? Int(target - UInt64(reserve)) : 1
        return Plan(
            raiseSoftLimitTo: target > soft ? target : nil, connectionLimit: max(1, min(connectionLimit, fitting)))
    }

    /// Applies `plan` to this process: raises the soft `RLIMIT_NOFILE` when needed, and returns the connection
    /// limit to use (logging a warning when it is below the configured one).
    static func apply(connectionLimit: Int, logger: Logger) -> Int {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return connectionLimit }
        let decided = plan(
            connectionLimit: connectionLimit, soft: UInt64(limits.rlim_cur), hard: UInt64(limits.rlim_max))
        var soft = UInt64(limits.rlim_cur)
        if let target = decided.raiseSoftLimitTo {
            var raised = limits
            raised.rlim_cur = rlim_t(target)
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                soft = target
                logger.info(
                    "raised the open-file limit for the connection limit",
                    ["soft_limit": .int(Int(clamping: target)), "connection_limit": .int(connectionLimit)])
            }
        }
        let fitting = plan(connectionLimit: connectionLimit, soft: soft, hard: soft).connectionLimit
        if fitting < connectionLimit {
            logger.warning(
                "the open-file limit is too low for the connection limit; fewer connections are accepted (raise "
                    + "`ulimit -n` / LimitNOFILE)",
                ["open_file_limit": .int(Int(clamping: soft)), "configured_connections": .int(connectionLimit),
                 "accepted_connections": .int(fitting), "reserved_descriptors": .int(reserve)])
        }
        return fitting
    }
}
