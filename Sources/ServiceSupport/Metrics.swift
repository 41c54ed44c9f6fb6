import Foundation
import Synchronization

/// Prometheus metric kinds, as written in `# TYPE` lines.
public enum MetricKind: String, Sendable {
    case counter, gauge, histogram
}

/// Label names and values of one time series. Keep cardinality low: routes, codes, outcomes, partitions, never ids.
public typealias MetricLabels = [(String, String)]

/// A monotonically increasing count (`*_total`).
public final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    public func increment(by amount: Int = 1) {
        value.add(amount, ordering: .relaxed)
    }

    public var current: Int { value.load(ordering: .relaxed) }
}

/// A value that goes up and down.
public final class Gauge: Sendable {
    private let value = Locked<Double>(0)

    public func set(_ newValue: Double) { value.withLock { $0 = newValue } }
    public func set(_ newValue: Int) { set(Double(newValue)) }
    public func add(_ delta: Double) { value.withLock { $0 += delta } }
    public func increment() { add(1) }
    public func decrement() { add(-1) }
    public var current: Double { value.withLock { $0 } }
}

/// Observations counted into cumulative buckets (`*_seconds` with base units).
public final class Histogram: Sendable {
    public let upperBounds: [Double]
    private struct State {
        var bucketCounts: [Int]
        var sum: Double = 0
        var count: Int = 0
    }
    private let state: Locked<State>

    init(upperBounds: [Double]) {
        self.upperBounds = upperBounds.sorted()
        self.state = Locked(State(bucketCounts: Array(repeating: 0, count: upperBounds.count)))
    }

    public func observe(_ value: Double) {
        let index = upperBounds.firstIndex(where: { value <= $0 })
        state.withLock { state in
            if let index { state.bucketCounts[index] += 1 }
            state.sum += value
            state.count += 1
        }
    }

    /// Observes the seconds elapsed since `start`, a value of `SystemTime.monotonicNanoseconds()`.
    public func observeSeconds(since start: UInt64) {
        observe(SystemTime.secondsSince(start))
    }

    public var count: Int { state.withLock { $0.count } }

    fileprivate func snapshot() -> (cumulative: [Int], sum: Double, count: Int) {
        state.withLock { state in
            var running = 0
            let cumulative = state.bucketCounts.map { running += $0; return running }
            return (cumulative, state.sum, state.count)
        }
    }

    /// Latency buckets from 1 ms to 60 s.
    public static let defaultSecondsBuckets: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]
}

/// The metrics of one process, rendered in the Prometheus text exposition format (version 0.0.4).
///
/// Asking twice for the same name and labels returns the same instrument, so callers may look instruments up
/// once and keep them (the hot path then costs one atomic add).
public final class MetricsRegistry: Sendable {
    private enum Instrument: Sendable {
        case counter(Counter)
        case gauge(Gauge)
        case histogram(Histogram)
    }

    private struct Family: Sendable {
        let name: String
        let help: String
        let kind: MetricKind
        var series: [(labels: MetricLabels, instrument: Instrument)] = []
        var collector: (@Sendable () -> [(MetricLabels, Double)])?
    }

    private let families = Locked<[Family]>([])

    public init() {}

    public func counter(_ name: String, help: String, labels: MetricLabels = []) -> Counter {
        let instrument = register(name: name, help: help, kind: .counter, labels: labels) { .counter(Counter()) }
        guard case .counter(let counter) = instrument else { preconditionFailure("\(name) is not a counter") }
        return counter
    }

    public func gauge(_ name: String, help: String, labels: MetricLabels = []) -> Gauge {
        let instrument = register(name: name, help: help, kind: .gauge, labels: labels) { .gauge(Gauge()) }
        guard case .gauge(let gauge) = instrument else { preconditionFailure("\(name) is not a gauge") }
        return gauge
    }

    public func histogram(
        _ name: String, help: String, labels: MetricLabels = [], buckets: [Double] = Histogram.defaultSecondsBuckets
    ) -> Histogram {
        let instrument = register(name: name, help: help, kind: .histogram, labels: labels) {
            .histogram(Histogram(upperBounds: buckets))
        }
        guard case .histogram(let histogram) = instrument else { preconditionFailure("\(name) is not a histogram") }
        return histogram
    }

    /// One counter per value of `label`, keyed by the value: a family whose series are all known up front, looked up
    /// once (counting then costs one atomic add) and rendered at 0 before anything is counted.
    public func counters(
        _ name: String, help: String, label: String, values: some Sequence<String>
    ) -> [String: Counter] {
        Self.family(values, text: { $0 }) { counter(name, help: help, labels: [(label, $0)]) }
    }

    /// `counters(_:help:label:values:)` keyed by a type whose raw value is the label's value (a reason, a kind).
    public func counters<Value: RawRepresentable & Hashable>(
        _ name: String, help: String, label: String, values: some Sequence<Value>
    ) -> [Value: Counter] where Value.RawValue == String {
        Self.family(values, text: \.rawValue) { counter(name, help: help, labels: [(label, $0)]) }
    }

    /// One gauge per value of `label`, keyed by the value (as `counters(_:help:label:values:)`).
    public func gauges(_ name: String, help: String, label: String, values: some Sequence<String>) -> [String: Gauge] {
        Self.family(values, text: { $0 }) { gauge(name, help: help, labels: [(label, $0)]) }
    }

    private static func family<Value: Hashable, Instrument>(
        _ values: some Sequence<Value>, text: (Value) -> String, make: (String) -> Instrument
    ) -> [Value: Instrument] {
        var instruments: [Value: Instrument] = [:]
        for value in values { instruments[value] = make(text(value)) }
        return instruments
    }

    /// A family whose series are computed when scraped (consumer lag per partition, queue depths).
    public func collect(
        _ name: String, help: String, kind: MetricKind, _ collector: @escaping @Sendable () -> [(MetricLabels, Double)]
    ) {
        families.withLock { families in
            if let index = families.firstIndex(where: { $0.name == name }) {
                families[index].collector = collector
            } else {
                var family = Family(name: name, help: help, kind: kind)
                family.collector = collector
                families.append(family)
            }
        }
    }

    private func register(
        name: String, help: String, kind: MetricKind, labels: MetricLabels, make: () -> Instrument
    ) -> Instrument {
        families.withLock { families in
            let index: Int
            if let existing = families.firstIndex(where: { $0.name == name }) {
                precondition(families[existing].kind == kind, "metric \(name) registered as \(families[existing].kind)")
                index = existing
            } else {
                families.append(Family(name: name, help: help, kind: kind))
                index = families.count - 1
            }
            if let found = families[index].series.first(where: { Self.same($0.labels, labels) }) {
                return found.instrument
            }
            let instrument = make()
            families[index].series.append((labels, instrument))
            return instrument
        }
    }

    private static func same(_ a: MetricLabels, _ b: MetricLabels) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// The whole registry in Prometheus text format.
    public func render() -> String {
        let snapshot = families.withLock { $0 }
        var out = ""
        for family in snapshot {
            out += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.rawValue)\n"
            for (labels, instrument) in family.series {
                switch instrument {
                case .counter(let counter):
                    out += "\(family.name)\(Self.format(labels)) \(counter.current)\n"
                case .gauge(let gauge):
                    out += "\(family.name)\(Self.format(labels)) \(Self.format(gauge.current))\n"
                case .histogram(let histogram):
                    let (cumulative, sum, count) = histogram.snapshot()
                    for (bound, bucketCount) in zip(histogram.upperBounds, cumulative) {
                        out += "\(family.name)_bucket\(Self.format(labels + [("le", Self.format(bound))])) \(bucketCount)\n"
                    }
                    out += "\(family.name)_bucket\(Self.format(labels + [("le", "+Inf")])) \(count)\n"
                    out += "\(family.name)_sum\(Self.format(labels)) \(Self.format(sum))\n"
                    out += "\(family.name)_count\(Self.format(labels)) \(count)\n"
                }
            }
            if let collector = family.collector {
                for (labels, value) in collector() {
                    out += "\(family.name)\(Self.format(labels)) \(Self.format(value))\n"
                }
            }
        }
        return out
    }

    private static func format(_ labels: MetricLabels) -> String {
        guard !labels.isEmpty else { return "" }
        let inner = labels.map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(name)=\"\(escaped)\""
        }
        return "{" + inner.joined(separator: ",") + "}"
    }

    private static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
