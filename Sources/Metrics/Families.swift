import Primitives

/// A family of counters, one per combination of label values.
public final class Counter: SeriesFamily, Sendable {
    var type: MetricType { .counter }
    let series: SeriesTable<UInt64>

    init(name: String, help: String, labelNames: [String], registry: MetricsRegistry) {
        series = SeriesTable(name: name, help: help, labelNames: labelNames, registry: registry)
    }

    /// Adds `amount` to the series named by `labelValues` (one per label name, in order; a wrong count is ignored).
    public func increment(_ labelValues: [String] = [], by amount: UInt64 = 1) {
        series.update(labelValues, initial: 0) { $0 &+= amount }
    }

    /// The current value of one series (0 when it was never incremented).
    public func value(_ labelValues: [String] = []) -> UInt64 { series.value(labelValues) ?? 0 }

    func renderSamples(into out: inout String) { series.renderSamples(into: &out, Exposition.format) }
}

/// A family of gauges, one per combination of label values.
public final class Gauge: SeriesFamily, Sendable {
    var type: MetricType { .gauge }
    let series: SeriesTable<Double>

    init(name: String, help: String, labelNames: [String], registry: MetricsRegistry) {
        series = SeriesTable(name: name, help: help, labelNames: labelNames, registry: registry)
    }

    /// Sets one series.
    public func set(_ value: Double, _ labelValues: [String] = []) {
        series.update(labelValues, initial: 0) { $0 = value }
    }

    /// Adds `delta` (negative to subtract) to one series.
    public func add(_ delta: Double, _ labelValues: [String] = []) {
        series.update(labelValues, initial: 0) { $0 += delta }
    }

    /// The current value of one series (0 when never set).
    public func value(_ labelValues: [String] = []) -> Double { series.value(labelValues) ?? 0 }

    func renderSamples(into out: inout String) { series.renderSamples(into: &out, Exposition.format) }
}

/// A family of histograms: per combination of label values, counts per bucket, a sum and a count.
public final class Histogram: SeriesFamily, Sendable {
    struct State: Sendable {
        /// Non-cumulative: `counts[i]` observations fell in (bounds[i-1], bounds[i]]; the last slot is +Inf.
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    var type: MetricType { .histogram }
    /// Finite upper bounds, ascending, without duplicates.
    let bounds: [Double]
    let series: SeriesTable<State>

    init(name: String, help: String, labelNames: [String], buckets: [Double], registry: MetricsRegistry) {
        bounds = Array(Set(buckets.filter { $0.isFinite })).sorted()
        series = SeriesTable(name: name, help: help, labelNames: labelNames, registry: registry)
    }

    /// Records one observation (NaN is ignored).
    public func observe(_ value: Double, _ labelValues: [String] = []) {
        guard !value.isNaN else { return }
        var index = bounds.count
        // Few buckets (≈ a dozen): a linear scan beats a binary search's branches.
        for (i, bound) in bounds.enumerated() where value <= bound {
            index = i
            break
        }
        let slots = bounds.count + 1
        series.update(labelValues, initial: State(counts: Array(repeating: 0, count: slots))) { state in
            if index < state.counts.count { state.counts[index] &+= 1 }
            state.sum += value
            state.count &+= 1
        }
    }

    /// Observations recorded for one series (0 when none).
    public func count(_ labelValues: [String] = []) -> UInt64 { series.value(labelValues)?.count ?? 0 }

    func renderSamples(into out: inout String) {
        let bucketLabels = labelNames + ["le"]
        for (values, state) in series.sorted() {
            var cumulative: UInt64 = 0
            for (i, count) in state.counts.enumerated() {
                cumulative &+= count
                let le = i < bounds.count ? Exposition.format(bounds[i]) : "+Inf"
                Exposition.sample(name: name + "_bucket", labels: bucketLabels, values: values + [le],
                                  value: Exposition.format(cumulative), into: &out)
            }
            Exposition.sample(name: name + "_sum", labels: labelNames, values: values,
                              value: Exposition.format(state.sum), into: &out)
            Exposition.sample(name: name + "_count", labels: labelNames, values: values,
                              value: Exposition.format(state.count), into: &out)
        }
    }
}

/// A family whose series live in a `SeriesTable`, which also names the family.
protocol SeriesFamily: MetricFamily {
    associatedtype Value: Sendable
    var series: SeriesTable<Value> { get }
}

extension SeriesFamily {
    var name: String { series.name }
    var help: String { series.help }
    var labelNames: [String] { series.labelNames }
}

/// A family's name, help and label names, and its label values → state, under one lock, capped at the registry's
/// `maxSeriesPerFamily`.
final class SeriesTable<Value: Sendable>: Sendable {
    let name: String
    let help: String
    let labelNames: [String]
    private let table = Locked<[[String]: Value]>([:])
    private let registry: MetricsRegistry
    private var labelCount: Int { labelNames.count }

    init(name: String, help: String, labelNames: [String], registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.registry = registry
    }

    func update(_ labelValues: [String], initial: @autoclosure () -> Value, _ body: (inout Value) -> Void) {
        guard labelValues.count == labelCount else { return }
        let cap = registry.maxSeriesPerFamily
        let accepted = table.withLock { table -> Bool in
            if table.count >= cap, table[labelValues] == nil { return false }
            body(&table[labelValues, default: initial()])
            return true
        }
        if !accepted { registry.dropped.withLock { $0 &+= 1 } }
    }

    func value(_ labelValues: [String]) -> Value? { table.withLock { $0[labelValues] } }

    /// One sample per series, in label order, its value written by `format`.
    func renderSamples(into out: inout String, _ format: (Value) -> String) {
        for (values, value) in sorted() {
            Exposition.sample(name: name, labels: labelNames, values: values, value: format(value), into: &out)
        }
    }

    func sorted() -> [([String], Value)] {
        let snapshot = table.withLock { $0 }
        return snapshot.map { ($0.key, $0.value) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
    }
}
