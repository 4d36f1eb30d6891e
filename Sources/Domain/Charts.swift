public import Foundation

/// The charts of `GET /v1/admin/projects/:id/charts/:chart` (issue 26; README "Charts" defines each with its
/// formula). Each is a table: one point per interval, a fixed list of integer measures (money in milli-units of the
/// reporting currency), ratios derived from two of them.
public enum Chart: String, Sendable, CaseIterable {
    case revenue
    case mrr
    case mrrMovement = "mrr_movement"
    case activeSubscriptions = "active_subscriptions"
    case activeTrials = "active_trials"
    case trialConversion = "trial_conversion"
    case churn
    case refundRate = "refund_rate"
    case subscriptionRetention = "subscription_retention"
    case realizedLTV = "realized_ltv"

    /// The months since a cohort's first payment that `subscription_retention` follows: 0 (the first payment's
    /// month) to 12 (a year later).
    public static let retentionMonths = 0...12

    /// The measures, in order. `_milli` ones are money.
    public var measures: [String] {
        switch self {
        case .revenue: return ["gross_milli", "proceeds_milli", "refunds_milli", "net_milli"]
        case .mrr: return ["mrr_milli", "subscriptions"]
        case .mrrMovement:
            return ["new_milli", "expansion_milli", "contraction_milli", "churned_milli", "reactivation_milli"]
        case .activeSubscriptions: return ["active_subscriptions"]
        case .activeTrials: return ["active_trials"]
        case .trialConversion: return ["trials", "conversions"]
        case .churn: return ["active_at_start", "churned"]
        case .refundRate: return ["transactions", "refunded"]
        case .subscriptionRetention:
            return ["subscribers"] + Self.retentionMonths.flatMap { ["reached_\($0)", "retained_\($0)"] }
        case .realizedLTV: return ["customers", "net_milli"]
        }
    }

    /// Measures that are a state at the interval's end (the totals show the last point's), not a flow (summed).
    public var stock: Set<String> {
        switch self {
        case .mrr: return ["mrr_milli", "subscriptions"]
        case .activeSubscriptions: return ["active_subscriptions"]
        case .activeTrials: return ["active_trials"]
        default: return []
        }
    }

    /// The ratio column: its name, numerator, denominator (nil: none).
    public var ratio: (name: String, numerator: Int, denominator: Int)? {
        switch self {
        case .trialConversion: return ("conversion_rate", 1, 0)
        case .churn: return ("churn_rate", 1, 0)
        case .refundRate: return ("refund_rate", 1, 0)
        case .realizedLTV: return ("net_per_customer_milli", 1, 0)
        default: return nil
        }
    }

    /// Every ratio column, in order: `ratio`'s, or `subscription_retention`'s one per month since
    /// (`retention_k` = retained_k ÷ reached_k).
    public var ratios: [(name: String, numerator: Int, denominator: Int)] {
        guard self == .subscriptionRetention else { return ratio.map { [$0] } ?? [] }
        return Self.retentionMonths.map { ("retention_\($0)", 2 + 2 * $0, 1 + 2 * $0) }
    }

    /// Whether the measures hold money (and so may have amounts without a rate, reported apart).
    public var money: Bool { measures.contains { $0.hasSuffix("_milli") } }
}

public enum ChartInterval: String, Sendable, CaseIterable {
    case day, week, month
}

/// What a chart is asked: a project, whole UTC days `[from, to)`, the interval, filters.
public struct ChartQuery: Sendable, Equatable {
    public var projectId: UUID
    public var chart: Chart
    public var from: Date
    public var to: Date
    public var interval: ChartInterval
    public var environment: StoreEnvironment?
    public var productId: String?
    /// Apple's `storefront` (ISO 3166-1 alpha-3, e.g. `USA`).
    public var country: String?

    /// At most this many days (as the overview).
    public static let maxDays = 366

    public init(projectId: UUID, chart: Chart, from: Date, to: Date, interval: ChartInterval,
                environment: StoreEnvironment?, productId: String?, country: String?) {
        self.projectId = projectId
        self.chart = chart
        self.from = from
        self.to = to
        self.interval = interval
        self.environment = environment
        self.productId = productId
        self.country = country
    }
}

/// One interval of a chart: its first day, its measures in the reporting currency, and per currency without a
/// rate its amounts as Apple signed them (never dropped, never mixed in).
public struct ChartPoint: Sendable, Equatable {
    public var date: Date
    public var values: [Int64]
    public var unconverted: [String: [Int64]]

    public init(date: Date, values: [Int64], unconverted: [String: [Int64]] = [:]) {
        self.date = date
        self.values = values
        self.unconverted = unconverted
    }
}

public struct ChartResult: Sendable, Equatable {
    public var settings: RevenueSettings
    public var points: [ChartPoint]
    /// Every change recorded up to this instant is in the chart: the oldest change the deriver has not rolled up
    /// yet, or the answer's time when none waits.
    public var freshAsOf: Date

    public init(settings: RevenueSettings, points: [ChartPoint], freshAsOf: Date) {
        self.settings = settings
        self.points = points
        self.freshAsOf = freshAsOf
    }

    /// Totals of the points: flows summed (churn's actives at start too: its total rate is the intervals' average
    /// weighted by their actives), stocks the last point's.
    public func totals(_ chart: Chart) -> ChartPoint {
        let stock = chart.stock
        func fold(_ rows: [[Int64]]) -> [Int64] {
            chart.measures.enumerated().map { i, name in
                if stock.contains(name) { return rows.last.map { $0.indices.contains(i) ? $0[i] : 0 } ?? 0 }
                return rows.reduce(Int64(0)) { $0 &+ ($1.indices.contains(i) ? $1[i] : 0) }
            }
        }
        var unconverted: [String: [Int64]] = [:]
        for currency in Set(points.flatMap { $0.unconverted.keys }) {
            unconverted[currency] = fold(points.map { $0.unconverted[currency] ?? chart.measures.map { _ in 0 } })
        }
        return ChartPoint(date: points.first?.date ?? freshAsOf, values: fold(points.map(\.values)),
                          unconverted: unconverted)
    }

    /// `numerator / denominator` with 4 decimals, rounded half away from zero, as text ("0.3333", "-0.0500"); nil
    /// when the denominator is not positive.
    public static func ratio(_ numerator: Int64, _ denominator: Int64) -> String? {
        guard denominator > 0 else { return nil }
        let scaled = Money.rounded(Int128(numerator) * 10_000, dividedBy: Int128(denominator))
        let whole = String(scaled.magnitude / 10_000)
        let fraction = String(scaled.magnitude % 10_000)
        return (scaled < 0 ? "-" : "") + whole + "." + String(repeating: "0", count: 4 - fraction.count) + fraction
    }
}

/// The operator's per-storefront tax rates (`tax_rates`; README "Money").
public protocol TaxRateStore: Sendable {
    /// Stores rates (replacing those of the same storefront and day; an audit entry in the same transaction); the
    /// number stored.
    func storeTaxRates(_ rates: [TaxRate]) throws -> Int
    /// Every stored rate by storefront and day; with `on`, each storefront's rate in force that day (the latest
    /// dated on or before it).
    func taxRates(on day: Date?) throws -> [TaxRate]
}

/// Reads the charts from the roll-ups (SQL in Storage).
public protocol ChartStore: TransactionExportStore, TaxRateStore {
    func chart(_ query: ChartQuery, now: Date) throws -> ChartResult
    /// Sets a project's money settings (an audit entry in the same transaction).
    func setSettings(_ settings: RevenueSettings, projectId: UUID) throws
    /// Stores published rates (replacing those of the same day, base and currency; an audit entry in the same
    /// transaction); the number stored.
    func storeRates(_ rates: [ExchangeRate]) throws -> Int
}
