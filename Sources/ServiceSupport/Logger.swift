import Foundation
import Synchronization

/// Severity of a log line; lines below the logger's threshold are not written.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug = 0, info, warning, error

    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = level
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A value attached to a log line. Only ids, sizes, codes and durations belong here:
/// never receipt contents, shared secrets or API keys.
public enum LogValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    var json: String {
        switch self {
        case .string(let s): JSONText.quoted(s)
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? String(d) : "null"
        case .bool(let b): b ? "true" : "false"
        }
    }
}

/// Where log lines go. The default writes to standard error; tests may capture lines instead.
public protocol LogSink: Sendable {
    func write(line: String)
}

public struct StandardErrorSink: LogSink {
    private static let lock = Locked(())

    public init() {}

    public func write(line: String) {
        let bytes = Array((line + "\n").utf8)
        // One write(2) per line under a lock, so concurrent lines never interleave.
        Self.lock.withLock { _ in FileDescriptorWrite.all(bytes, to: 2) }
    }
}

/// A structured logger writing one JSON object per line:
/// `{"ts":"...","level":"info","logger":"ingest","msg":"...", ...fields}`.
public struct Logger: Sendable {
    public let label: String
    public let threshold: LogLevel
    private let sink: any LogSink
    private let baseFields: [(String, LogValue)]

    public init(label: String, threshold: LogLevel = .info, sink: any LogSink = StandardErrorSink()) {
        self.label = label
        self.threshold = threshold
        self.sink = sink
        self.baseFields = []
    }

    private init(label: String, threshold: LogLevel, sink: any LogSink, baseFields: [(String, LogValue)]) {
        self.label = label
        self.threshold = threshold
        self.sink = sink
        self.baseFields = baseFields
    }

    /// A logger whose threshold comes from `LOG_LEVEL` (debug, info, warning, error; default info).
    public static func fromEnvironment(label: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Logger {
        let level = environment["LOG_LEVEL"].flatMap(LogLevel.init(name:)) ?? .info
        return Logger(label: label, threshold: level)
    }

    /// A logger with the same sink and threshold, a different label.
    public func named(_ label: String) -> Logger {
        Logger(label: label, threshold: threshold, sink: sink, baseFields: baseFields)
    }

    /// A logger that adds `fields` to every line.
    public func with(_ fields: KeyValuePairs<String, LogValue>) -> Logger {
        Logger(label: label, threshold: threshold, sink: sink, baseFields: baseFields + fields.map { ($0.key, $0.value) })
    }

    public func isEnabled(_ level: LogLevel) -> Bool { level >= threshold }

    public func debug(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.debug, message(), fields)
    }

    public func info(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.info, message(), fields)
    }

    public func warning(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.warning, message(), fields)
    }

    public func error(_ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, LogValue> = [:]) {
        log(.error, message(), fields)
    }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, _ fields: KeyValuePairs<String, LogValue>) {
        guard isEnabled(level) else { return }
        var line = "{\"ts\":\(JSONText.quoted(Self.timestamp())),\"level\":\"\(level.name)\",\"logger\":\(JSONText.quoted(label)),\"msg\":\(JSONText.quoted(message()))"
        for (key, value) in baseFields { line += ",\(JSONText.quoted(key)):\(value.json)" }
        for (key, value) in fields { line += ",\(JSONText.quoted(key)):\(value.json)" }
        line += "}"
        sink.write(line: line)
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = now.tv_nsec / 1_000_000
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, millis)
    }
}
