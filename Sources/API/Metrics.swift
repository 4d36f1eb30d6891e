import Domain
import Foundation
import HTTPCore
import Primitives

/// `GET /v1/admin/projects/:id/metrics/overview`: the revenue dashboard's numbers.
struct MetricsController: APIController {
    let projects: any ProjectStore
    /// `nil` answers 503.
    let store: (any OverviewMetricsStore)?
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [APIRoute(.get, "/v1/admin/projects/:id/metrics/overview", .adminAPI, access: .admin(.revenueRead), overview)]
    }

    static let overviewSuggestion = "Query: from and to as YYYY-MM-DD (UTC days, inclusive, at most "
        + "\(OverviewRange.maxDays) days; default the last 30 days), interval=day, optional environment "
        + "(Production, the default; Sandbox, Xcode, LocalTesting; or all)."

    func overview(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let (range, environment) = try Self.overviewQuery(request, now: now())
        guard let store else {
            throw HTTPError.serviceUnavailable(message: "Metrics are not configured.", suggestion: "Retry later.")
        }
        guard try projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let metrics = try store.overview(projectId: id, range: range, environment: environment, now: now())
        var body = JSONBody(capacity: 256 + 200 * metrics.days.count)
        body.beginObject()
        body.field("project_id", id.lowercasedText)
        body.field("from", Self.dayString(range.from))
        body.field("to", Self.dayString(range.to.addingTimeInterval(-86_400)))
        body.field("interval", "day")
        body.field("environment", environment?.rawValue ?? "all")
        body.key("days")
        body.beginArray()
        var totals = OverviewDay(day: range.from)
        for day in metrics.days {
            body.beginObject()
            body.field("date", Self.dayString(day.day))
            body.field("active_subscriptions", day.activeSubscriptions)
            body.field("active_entitlements", day.activeEntitlements)
            Self.writeCounts(day, into: &body)
            body.key("revenue")
            Self.writeAmounts(day.revenue, into: &body)
            body.endObject()
            totals.newPurchases &+= day.newPurchases
            totals.renewals &+= day.renewals
            totals.refunds &+= day.refunds
            totals.expirations &+= day.expirations
            totals.trialConversions &+= day.trialConversions
        }
        body.endArray()
        body.key("totals")
        body.beginObject()
        body.field("active_subscriptions", metrics.days.last?.activeSubscriptions ?? 0)
        body.field("active_entitlements", metrics.days.last?.activeEntitlements ?? 0)
        Self.writeCounts(totals, into: &body)
        body.key("revenue")
        Self.writeAmounts(metrics.revenue, into: &body)
        body.endObject()
        body.key("mrr")
        Self.writeAmounts(metrics.mrr, into: &body)
        body.endObject()
        return Response.json(200, body.bytes)
    }

    private static func writeCounts(_ day: OverviewDay, into body: inout JSONBody) {
        body.field("new_purchases", day.newPurchases)
        body.field("renewals", day.renewals)
        body.field("refunds", day.refunds)
        body.field("expirations", day.expirations)
        body.field("trial_conversions", day.trialConversions)
    }

    /// `{"EUR":4990,"USD":9990}`, currencies sorted so equal data gives equal bytes.
    private static func writeAmounts(_ amounts: [String: Int64], into body: inout JSONBody) {
        body.beginObject()
        for currency in amounts.keys.sorted() {
            body.key(named: currency)
            body.int(amounts[currency] ?? 0)
        }
        body.endObject()
    }

    /// The validated query: unknown parameters are ignored, a repeated one is the last. The environment is
    /// Production unless asked (test purchases stay out of the revenue figures); `all` (nil) sums every environment.
    static func overviewQuery(_ request: Request, now: Date) throws(HTTPError) -> (OverviewRange, StoreEnvironment?) {
        var from: Int64?
        var to: Int64?
        var environment: StoreEnvironment? = .production
        var details: [ErrorDetail] = []
        for item in request.queryItems() {
            switch item.name {
            case "from", "to":
                dayParameter(item, from: &from, to: &to, &details)
            case "interval":
                if item.value != "day" {
                    details.append(ErrorDetail(path: ["interval"], message: "Invalid enum value. Expected 'day'"))
                }
            case "environment":
                if item.value == "all" {
                    environment = nil
                } else {
                    environment = Self.environment(item.value, allowingAll: true, &details) ?? environment
                }
            default:
                continue
            }
        }
        let (first, last) = days(from: from, to: to, now: now, maxDays: OverviewRange.maxDays, &details)
        if !details.isEmpty { throw HTTPError.validation(details, suggestion: overviewSuggestion) }
        return (OverviewRange(from: Date(timeIntervalSince1970: Double(first) * 86_400),
                              to: Date(timeIntervalSince1970: Double(last + 1) * 86_400)), environment)
    }

    /// `environment=`: one of Apple's environments, else nil and a detail.
    static func environment(_ value: String, allowingAll: Bool = false, _ details: inout [ErrorDetail])
        -> StoreEnvironment?
    {
        let known: [StoreEnvironment] = [.production, .sandbox, .xcode, .localTesting]
        if let match = known.first(where: { $0.rawValue == value }) { return match }
        details.append(ErrorDetail(
            path: ["environment"],
            message: "Invalid enum value. Expected 'Production' | 'Sandbox' | 'Xcode' | 'LocalTesting'"
                + (allowingAll ? " | 'all'" : "")))
        return nil
    }

    /// The days asked, `[first, last]` since 1970: `to` (default today) and `from` (default 29 days before it), at
    /// most `maxDays`; a problem adds a detail (only when the parameters themselves parsed).
    static func days(from: Int64?, to: Int64?, now: Date, maxDays: Int, _ details: inout [ErrorDetail])
        -> (first: Int64, last: Int64)
    {
        let today = Int64((now.timeIntervalSince1970 / 86_400).rounded(.down))
        let last = to ?? today
        let first = from ?? (last - 29)
        if details.isEmpty {
            if first > last {
                details.append(ErrorDetail(path: ["from"], message: "from must not be after to"))
            } else if last - first + 1 > Int64(maxDays) {
                details.append(ErrorDetail(path: ["to"], message: "At most \(maxDays) days"))
            }
        }
        return (first, last)
    }

    /// A `from=` or `to=` query item: its day into `from` or `to`, else a detail (the overview's, the charts' and the
    /// export's ranges).
    static func dayParameter(_ item: (name: String, value: String), from: inout Int64?, to: inout Int64?,
                             _ details: inout [ErrorDetail]) {
        guard let day = parseDay(item.value) else {
            details.append(ErrorDetail(path: [item.name], message: "Expected a date as YYYY-MM-DD"))
            return
        }
        if item.name == "from" { from = day } else { to = day }
    }

    /// Days since 1970-01-01 of a `YYYY-MM-DD` date in 1970…9999 (a real calendar date), else nil.
    static func parseDay(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for i in range {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                value = value * 10 + Int64(b[i] - 0x30)
            }
            return value
        }
        guard let y = number(0..<4), let m = number(5..<7), let d = number(8..<10),
              y >= 1970, GregorianCalendar.isValid(year: y, month: m, day: d) else { return nil }
        return GregorianCalendar.daysSince1970(year: y, month: m, day: d)
    }

    /// `YYYY-MM-DD` of a UTC midnight.
    static func dayString(_ date: Date) -> String {
        RFC3339.day(secondsSince1970: date.timeIntervalSince1970)
    }
}
