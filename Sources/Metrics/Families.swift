import Primitives

/// A family of counters, one per combination of label values.
public final class Counter: MetricFamily, Sendable {
    let name: String
    let help: String
    var type: MetricType { .counter }
    let labelNames: [String]
    private let series: SeriesTable<UInt64>

    init(name: String, help: String, labelNames: [String], registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.series = SeriesTable(registry: registry, labelCount: labelNames.count)
    }

    /// Adds `amount` to the series named by `labelValues` (one per label name, in order; a wrong count is ignored).
    public func increment(_ labelValues: [String] = [], by amount: UInt64 = 1) {
        series.update(labelValues, initial: 0) { $0 &+= amount }
    }

    /// The current value of one series (0 when it was never incremented).
    public func value(_ labelValues: [String] = []) -> UInt64 { series.value(labelValues) ?? 0 }

    func renderSamples(into out: inout String) {
        for (values, count) in series.sorted() {
            Exposition.sample(name: name, labels: labelNames, values: values, value: Exposition.format(count), into: &out)
        }
    }
}

/// A family of gauges, one per combination of label values.
public final class Gauge: MetricFamily, Sendable {
    let name: String
    let help: String
    var type: MetricType { .gauge }
    let labelNames: [String]
    private let series: SeriesTable<Double>

    init(name: String, help: String, labelNames: [String], registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.series = SeriesTable(registry: registry, labelCount: labelNames.count)
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

    func renderSamples(into out: inout String) {
        for (values, value) in series.sorted() {
            Exposition.sample(name: name, labels: labelNames, values: values, value: Exposition.format(value), into: &out)
        }
    }
}

/// A family of histograms: per combination of label values, counts per bucket, a sum and a count.
public final class Histogram: MetricFamily, Sendable {
    struct State: Sendable {
        /// Non-cumulative: `counts[i]` observations fell in (bounds[i-1], bounds[i]]; the last slot is +Inf.
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    let name: String
    let help: String
    var type: MetricType { .histogram }
    let labelNames: [String]
    /// Finite upper bounds, ascending, without duplicates.
    let bounds: [Double]
    private let series: SeriesTable<State>

    init(name: String, help: String, labelNames: [String], buckets: [Double], registry: MetricsRegistry) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.bounds = Array(Set(buckets.filter { $0.isFinite })).sorted()
        self.series = SeriesTable(registry: registry, labelCount: labelNames.count)
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

/// Label values → state, under one lock, capped at the registry's `maxSeriesPerFamily`.
final class SeriesTable<Value: Sendable>: Sendable {
    private let table = Locked<[[String]: Value]>([:])
    private let registry: MetricsRegistry
    private let labelCount: Int

    init(registry: MetricsRegistry, labelCount: Int) {
        self.registry = registry
        self.labelCount = labelCount
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

    func sorted() -> [([String], Value)] {
        let snapshot = table.withLock { $0 }
        return snapshot.map { ($0.key, $0.value) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
    }
}
