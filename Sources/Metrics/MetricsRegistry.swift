import Primitives

/// The Prometheus metric types this module renders (text exposition format 0.0.4).
public struct MetricType: Sendable, Hashable, CustomStringConvertible {
    /// The `# TYPE` word.
    public let rawValue: String
    private init(_ rawValue: String) { self.rawValue = rawValue }
    /// A monotonically increasing count.
    public static let counter = MetricType("counter")
    /// A value that goes up and down.
    public static let gauge = MetricType("gauge")
    /// Bucketed observations with `_bucket`, `_sum` and `_count` series.
    public static let histogram = MetricType("histogram")
    /// The `# TYPE` word.
    public var description: String { rawValue }
}

/// One value of a scrape-time (callback) family: label values in the family's label order, and the value.
public struct MetricSample: Sendable, Equatable {
    /// Label values, one per label name of the family.
    public var labelValues: [String]
    /// The value.
    public var value: Double

    /// A sample with the given label values and value.
    public init(_ labelValues: [String] = [], _ value: Double) {
        self.labelValues = labelValues
        self.value = value
    }
}

/// Owns metric families and renders them all in the Prometheus text format, in registration order.
///
/// Families are registered once at start-up; recording is thread-safe and costs one short lock. Every
/// family holds at most `maxSeriesPerFamily` label combinations: label values can come from the outside
/// world (an Apple notification type), and a flood of new values must not grow memory without bound.
/// Increments for combinations beyond the cap are dropped and counted in `metrics_series_dropped_total`.
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of `render()`'s output.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private let families = Locked<[any MetricFamily]>([])
    let maxSeriesPerFamily: Int
    let dropped = Locked<UInt64>(0)

    /// An empty registry; `maxSeriesPerFamily` bounds the label combinations of each family (default 1,000).
    public init(maxSeriesPerFamily: Int = 1000) {
        self.maxSeriesPerFamily = max(1, maxSeriesPerFamily)
    }

    /// Registers a counter family. `name` must be a valid metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`),
    /// conventionally ending in `_total`.
    public func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        register(Counter(name: name, help: help, labelNames: labels, registry: self))
    }

    /// Registers a gauge family.
    public func gauge(_ name: String, help: String, labels: [String] = []) -> Gauge {
        register(Gauge(name: name, help: help, labelNames: labels, registry: self))
    }

    /// Registers a histogram family with upper bounds `buckets` (sorted here; `+Inf` is implicit).
    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double]) -> Histogram {
        register(Histogram(name: name, help: help, labelNames: labels, buckets: buckets, registry: self))
    }

    /// Registers a family whose samples are read at scrape time (e.g. pool statistics, memory), so nothing
    /// has to be updated on the hot path. `collect` runs on the scraping thread and must not block.
    public func callback(
        _ name: String, help: String, type: MetricType, labels: [String] = [],
        _ collect: @escaping @Sendable () -> [MetricSample]
    ) {
        _ = register(CallbackFamily(name: name, help: help, type: type, labelNames: labels, collect: collect))
    }

    private func register<F: MetricFamily>(_ family: F) -> F {
        families.withLock { $0.append(family) }
        return family
    }

    /// Every family in the text exposition format 0.0.4, series sorted by label values; ends with a newline.
    public func render() -> String {
        var out = ""
        out.reserveCapacity(4096)
        for family in families.withLock({ $0 }) {
            Exposition.header(name: family.name, help: family.help, type: family.type, into: &out)
            family.renderSamples(into: &out)
        }
        let lost = dropped.withLock { $0 }
        if lost > 0 {
            Exposition.header(name: "metrics_series_dropped_total",
                              help: "Increments dropped because a family reached its label-combination cap.",
                              type: .counter, into: &out)
            Exposition.sample(name: "metrics_series_dropped_total", labels: [], values: [],
                              value: Exposition.format(lost), into: &out)
        }
        return out
    }
}

/// What every family can do for the registry.
protocol MetricFamily: Sendable {
    var name: String { get }
    var help: String { get }
    var type: MetricType { get }
    func renderSamples(into out: inout String)
}

/// A family whose samples come from a closure at scrape time.
struct CallbackFamily: MetricFamily {
    let name: String
    let help: String
    let type: MetricType
    let labelNames: [String]
    let collect: @Sendable () -> [MetricSample]

    func renderSamples(into out: inout String) {
        for sample in collect() where sample.labelValues.count == labelNames.count {
            Exposition.sample(name: name, labels: labelNames, values: sample.labelValues,
                              value: Exposition.format(sample.value), into: &out)
        }
    }
}
