import Domain
import Foundation
import HTTPCore

/// The operator's per-storefront tax rates (issue 26, README "Money"): `PUT /v1/admin/tax-rates` publishes one day's,
/// `GET /v1/admin/tax-rates[?date=]` reads them. Proceeds are after the tax of each transaction's storefront once any
/// rate is configured (`proceeds_basis` in every answer with money), before tax otherwise.
struct TaxRatesController: APIController {
    /// `nil` answers 503.
    let store: (any TaxRateStore)?

    var routes: [APIRoute] {
        [
            // The operator's, as exchange rates are (the same permission: both are published figures every project's
            // money is computed with, and no role may change them).
            APIRoute(.put, "/v1/admin/tax-rates", .adminAPI, access: .admin(.exchangeRatesManage), setRates),
            // No tenant's data: whoever may read revenue may see the rates behind it.
            APIRoute(.get, "/v1/admin/tax-rates", .adminAPI, access: .admin(.revenueRead), rates),
        ]
    }

    static let maximumRates = 500
    static let suggestion = "Request body requires date (YYYY-MM-DD, the first day the rates apply) and rates (an "
        + "object of storefronts, ISO 3166-1 alpha-3 such as DEU, to the tax included in their prices as a percent, a "
        + "string or number from 0 to below 100 with at most 3 decimals, e.g. {\"DEU\": \"19\", \"CHE\": \"8.1\"}; at "
        + "most \(maximumRates) storefronts)."
    static let readSuggestion = "Optional query parameter: date (YYYY-MM-DD): each storefront's rate in force that day."

    private func use() throws -> any TaxRateStore {
        try unwired(store, "Tax rates are not configured.", "charts")
    }

    /// `PUT /v1/admin/tax-rates` `{date, rates: {STOREFRONT: percent}}`.
    func setRates(_ request: Request) throws -> Response {
        let body = try RequestBody.object(request, suggestion: Self.suggestion)
        var details: [ErrorDetail] = []
        let day = body["date"]?.stringValue.flatMap(MetricsController.parseDay)
        if day == nil { details.append(ErrorDetail(path: ["date"], message: "Expected a date as YYYY-MM-DD")) }
        var parsed: [(String, Int)] = []
        if let rates = body["rates"]?.objectValue, !rates.isEmpty, rates.count <= Self.maximumRates {
            for (storefront, value) in rates {
                guard TaxRate.isStorefront(storefront) else {
                    details.append(ErrorDetail(path: ["rates", storefront], message: "Expected ISO 3166-1 alpha-3, e.g. DEU"))
                    continue
                }
                guard let milli = (value.stringValue ?? value.numberValue?.literal).flatMap(TaxRate.milliPercent) else {
                    details.append(ErrorDetail(path: ["rates", storefront],
                                               message: "Expected a percent from 0 to below 100, at most 3 decimals"))
                    continue
                }
                parsed.append((storefront, milli))
            }
        } else {
            details.append(ErrorDetail(path: ["rates"], message: "Required: an object of 1 to \(Self.maximumRates) rates"))
        }
        guard details.isEmpty, let day else { throw HTTPError.validation(details, suggestion: Self.suggestion) }
        let date = Date(timeIntervalSince1970: Double(day) * 86_400)
        let stored = try use().storeTaxRates(parsed.map { TaxRate(day: date, storefront: $0.0, milliPercent: $0.1) })
        var out = JSONBody(capacity: 64)
        out.object {
            $0.field("date", MetricsController.dayString(date))
            $0.field("stored", stored)
        }
        return Response.json(200, out.bytes)
    }

    /// `GET /v1/admin/tax-rates?date=`: every rate by storefront and day, or each storefront's in force on `date`.
    func rates(_ request: Request) throws -> Response {
        var day: Int64?
        for item in request.queryItems() where item.name == "date" {
            guard let parsed = MetricsController.parseDay(item.value) else {
                throw HTTPError.validation([ErrorDetail(path: ["date"], message: "Expected a date as YYYY-MM-DD")],
                                           suggestion: Self.readSuggestion)
            }
            day = parsed
        }
        let date = day.map { Date(timeIntervalSince1970: Double($0) * 86_400) }
        let rates = try use().taxRates(on: date)
        var out = JSONBody(capacity: 64 + 56 * rates.count)
        out.object {
            $0.field("date", date.map(MetricsController.dayString))
            $0.objects("rates", rates) { rate, body in
                body.field("storefront", rate.storefront)
                body.field("date", MetricsController.dayString(rate.day))
                body.field("rate", TaxRate.text(milliPercent: rate.milliPercent))
            }
        }
        return Response.json(200, out.bytes)
    }
}
