public import Foundation
import Primitives

/// A calendar month in UTC, the period of usage and of the monthly quota.
public struct UsageMonth: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Months since January 1970 (negative before): the in-memory counters' key, cheap to compute per request.
    public let ordinal: Int64

    /// The month `ordinal` months after January 1970.
    public init(ordinal: Int64) { self.ordinal = ordinal }

    /// The month of `year` and `month` (1–12).
    public init(year: Int64, month: Int64) { ordinal = (year - 1970) * 12 + (month - 1) }

    /// The UTC month containing `date`.
    public init(containing date: Date) {
        let days = Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))
        let civil = GregorianCalendar.civil(daysSince1970: days)
        self.init(year: civil.year, month: civil.month)
    }

    /// `YYYY-MM` (years 0001–9999, months 01–12); nil otherwise.
    public init?(text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 7, bytes[4] == UInt8(ascii: "-"),
              let year = Int64(String(decoding: bytes[0..<4], as: UTF8.self)),
              let month = Int64(String(decoding: bytes[5..<7], as: UTF8.self)),
              bytes[0..<4].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), bytes[5..<7].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              year >= 1, (1...12).contains(month) else { return nil }
        self.init(year: year, month: month)
    }

    /// The year (Gregorian).
    public var year: Int64 { (ordinal >= 0 ? ordinal : ordinal - 11) / 12 + 1970 }
    /// The month, 1–12.
    public var month: Int64 { ordinal - (year - 1970) * 12 + 1 }

    /// Days since 1970-01-01 of the month's first day.
    public var firstDay: Int64 { GregorianCalendar.daysSince1970(year: year, month: month, day: 1) }
    /// Midnight UTC of the month's first day.
    public var start: Date { Date(timeIntervalSince1970: Double(firstDay) * 86_400) }
    /// The month after.
    public var next: UsageMonth { UsageMonth(ordinal: ordinal + 1) }

    /// `YYYY-MM`.
    public var description: String {
        let month = self.month < 10 ? "0\(self.month)" : "\(self.month)"
        var year = "\(year)"
        while year.utf8.count < 4 { year = "0" + year }
        return year + "-" + month
    }

    /// Whole seconds from `now` to the next month's start, at least 1 (the monthly quota's `Retry-After`).
    public static func secondsToNextMonth(from now: Date) -> Int {
        let left = UsageMonth(containing: now).next.start.timeIntervalSince(now)
        return max(1, Int(left.rounded(.up)))
    }

    public static func < (a: UsageMonth, b: UsageMonth) -> Bool { a.ordinal < b.ordinal }
}

/// What an account's usage counts, per month (each one a column of `account_usage`).
public enum UsageKind: Int, Sendable, CaseIterable {
    /// `POST /v1/receipts/…` answered 201 (what `receipts_per_month` limits).
    case receipts
    /// App Store Server Notifications accepted (`POST /v1/notifications/…` answered 200).
    case notifications
    /// Requests Bouncer made to the App Store Server API for the account's projects.
    case appStoreCalls
    /// Webhook events delivered (a 2xx from the endpoint).
    case webhooksDelivered
}

/// An account's quotas; nil: unlimited.
public struct AccountQuotas: Sendable, Equatable {
    /// Receipts verified per UTC month; past it the account's public routes answer 429 until the next month.
    public var receiptsPerMonth: Int64?
    /// Requests per second on the account's public routes (all its projects together).
    public var requestsPerSecond: Int64?

    /// No limit.
    public static let unlimited = AccountQuotas()

    /// Creates a value.
    public init(receiptsPerMonth: Int64? = nil, requestsPerSecond: Int64? = nil) {
        self.receiptsPerMonth = receiptsPerMonth
        self.requestsPerSecond = requestsPerSecond
    }

    /// Whether neither quota is set.
    public var isUnlimited: Bool { receiptsPerMonth == nil && requestsPerSecond == nil }

    /// The largest quota accepted (beyond any real use, small enough for every arithmetic on it).
    public static let maximum: Int64 = 1_000_000_000_000
}

/// An account's usage in one month.
public struct AccountUsage: Sendable, Equatable {
    /// The month.
    public var month: UsageMonth
    /// The counts (flushed, plus this process's not flushed yet), by kind.
    public var counts: [UsageKind: Int64]
    /// Tracked revenue: the month's purchase and renewal prices per currency, in milli-units (Apple's `price`),
    /// every environment, derived from the overview's rollups.
    public var revenue: [String: Int64]

    /// Creates a value.
    public init(month: UsageMonth, counts: [UsageKind: Int64], revenue: [String: Int64]) {
        self.month = month
        self.counts = counts
        self.revenue = revenue
    }
}

/// Counts to add to `account_usage`: `account` (or, when the counter knew only the project, `project`'s account).
public struct UsageDelta: Sendable, Equatable {
    /// Whose counts.
    public enum Owner: Sendable, Hashable {
        /// The account itself.
        case account(UUID)
        /// The account of this project (resolved by the store when it writes).
        case project(UUID)
    }

    /// Whose counts.
    public var owner: Owner
    /// Which month.
    public var month: UsageMonth
    /// How many of each kind (indexed by `UsageKind.rawValue`).
    public var counts: [Int64]
}

/// Usage counters and quotas in PostgreSQL (`PostgresUsageStore`).
public protocol UsageStore: Sendable {
    /// Adds the deltas in one statement (`count = count + delta`); deltas of deleted accounts or projects vanish.
    func add(_ deltas: [UsageDelta]) throws
    /// The account's stored counts and tracked revenue for `month`; nil when there is no such account.
    func usage(accountId: UUID, month: UsageMonth) throws -> AccountUsage?
    /// The account's quotas (unlimited when none are set); nil when there is no such account.
    func quotas(accountId: UUID) throws -> AccountQuotas?
    /// Replaces the account's quotas; `.accountNotFound` when there is no such account.
    func setQuotas(accountId: UUID, _ quotas: AccountQuotas, now: Date) throws -> AccountQuotas
    /// Every account with a quota, with its stored receipts count of `month`.
    func limitedAccounts(month: UsageMonth) throws -> [(accountId: UUID, quotas: AccountQuotas, receipts: Int64)]
}
