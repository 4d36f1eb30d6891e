import Domain
import Foundation
import HTTPCore
import JSON
import Primitives

/// Revenue truth (issue 26): `GET /v1/admin/projects/:id/charts/:chart`, a project's money settings
/// (`PUT /v1/admin/projects/:id/revenue-settings`) and the operator's exchange rates (`PUT /v1/admin/exchange-rates`).
struct ChartsController: APIController {
    let projects: any ProjectStore
    /// `nil` answers 503.
    let store: (any ChartStore)?
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [
            APIRoute(.get, "/v1/admin/projects/:id/charts/:chart", .adminAPI, access: .admin(.revenueRead), chart),
            APIRoute(.put, "/v1/admin/projects/:id/revenue-settings", .adminAPI, access: .admin(.projectsWrite),
                     setSettings),
            APIRoute(.put, "/v1/admin/exchange-rates", .adminAPI, access: .admin(.exchangeRatesManage), setRates),
        ]
    }

    static let chartSuggestion = "Path: chart is one of " + Chart.allCases.map(\.rawValue).joined(separator: ", ")
        + ". Query: from and to as YYYY-MM-DD (UTC days, inclusive, at most \(ChartQuery.maxDays) days; default the "
        + "last 30 days), interval (day, week or month), optional environment (Production, Sandbox, Xcode, "
        + "LocalTesting), product_id, country (the storefront, ISO 3166-1 alpha-3 such as USA), format (json or csv)."
    static let settingsSuggestion = "Request body requires small_business_program (boolean) and reporting_currency "
        + "(ISO 4217, three capital letters such as USD)."
    static let ratesSuggestion = "Request body requires date (YYYY-MM-DD), base (ISO 4217, e.g. EUR) and rates (an "
        + "object of ISO 4217 codes to positive decimals, as numbers or strings, e.g. {\"USD\": \"1.0921\"}; at most "
        + "18 significant and 12 fractional digits, at most 500 currencies)."

    private func use() throws -> any ChartStore {
        try unwired(store, "Charts are not configured.", "charts")
    }

    /// `GET /v1/admin/projects/:id/charts/:chart?from=&to=&interval=&environment=&product_id=&country=&format=`.
    func chart(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let (query, csv) = try Self.chartQuery(request, projectId: id, now: now())
        let store = try use()
        guard try projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let result = try store.chart(query, now: now())
        var response: Response
        if csv {
            var headers = HTTPHeaders()
            headers.set("Content-Type", "text/csv; charset=utf-8")
            headers.set("Content-Disposition", "attachment; filename=\"\(query.chart.rawValue).csv\"")
            response = Response(status: 200, headers: headers, body: Array(ChartRepresentation.csv(result, query).utf8))
        } else {
            response = Response.json(200, ChartRepresentation.json(result, query))
        }
        // How fresh, in either format (the JSON also says it as `fresh_as_of`; a CSV has no place for it).
        response.headers.set("Bouncer-Fresh-As-Of",
                             RFC3339.string(secondsSince1970: result.freshAsOf.timeIntervalSince1970))
        // Whether proceeds and net are after the operator's tax rates, in either format (the JSON: `proceeds_basis`).
        response.headers.set("Bouncer-Proceeds-Basis", result.settings.proceedsBasis)
        return response
    }

    /// The validated query: unknown parameters are ignored, a repeated one is the last.
    static func chartQuery(_ request: Request, projectId: UUID, now: Date) throws(HTTPError) -> (ChartQuery, csv: Bool) {
        var details: [ErrorDetail] = []
        let chart = Chart(rawValue: request.pathParameters["chart"] ?? "")
        if chart == nil {
            details.append(ErrorDetail(path: ["chart"], message: "Invalid enum value. Expected "
                + Chart.allCases.map { "'\($0.rawValue)'" }.joined(separator: " | ")))
        }
        var from: Int64?
        var to: Int64?
        var interval = ChartInterval.day
        var environment: StoreEnvironment?
        var productId: String?
        var country: String?
        var csv = false
        for item in request.queryItems() {
            switch item.name {
            case "from", "to":
                MetricsController.dayParameter(item, from: &from, to: &to, &details)
            case "interval":
                if let value = ChartInterval(rawValue: item.value) {
                    interval = value
                } else {
                    details.append(ErrorDetail(path: ["interval"], message: "Invalid enum value. Expected 'day' | 'week' | 'month'"))
                }
            case "environment":
                environment = MetricsController.environment(item.value, &details) ?? environment
            case "product_id":
                productId = productIdParameter(item.value, &details) ?? productId
            case "country":
                country = countryParameter(item.value, &details) ?? country
            case "format":
                csv = AuditLogController.csvFormat(item.value, &details) ?? csv
            default:
                continue
            }
        }
        let (first, last) = MetricsController.days(from: from, to: to, now: now, maxDays: ChartQuery.maxDays, &details)
        guard details.isEmpty, let chart else { throw HTTPError.validation(details, suggestion: chartSuggestion) }
        return (ChartQuery(projectId: projectId, chart: chart, from: Date(timeIntervalSince1970: Double(first) * 86_400),
                           to: Date(timeIntervalSince1970: Double(last + 1) * 86_400), interval: interval,
                           environment: environment, productId: productId, country: country), csv)
    }

    /// `product_id=`: 1 to 200 characters, no NUL; else nil and a detail (the charts' and the customer list's).
    static func productIdParameter(_ value: String, _ details: inout [ErrorDetail]) -> String? {
        guard !value.isEmpty, value.utf8.count <= 200, !value.utf8.contains(0) else {
            details.append(ErrorDetail(path: ["product_id"], message: "String must contain 1 to 200 characters, no NUL"))
            return nil
        }
        return value
    }

    /// `country=`: Apple's storefront, ISO 3166-1 alpha-3 (`USA`); else nil and a detail.
    static func countryParameter(_ value: String, _ details: inout [ErrorDetail]) -> String? {
        guard value.utf8.count == 3, value.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
            details.append(ErrorDetail(path: ["country"], message: "Expected ISO 3166-1 alpha-3, e.g. USA"))
            return nil
        }
        return value
    }

    /// `PUT /v1/admin/projects/:id/revenue-settings` `{small_business_program, reporting_currency}`.
    func setSettings(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let body = try RequestBody.object(request, suggestion: Self.settingsSuggestion)
        var details: [ErrorDetail] = []
        let program = body["small_business_program"]?.boolValue
        if program == nil { details.append(ErrorDetail(path: ["small_business_program"], message: "Required boolean")) }
        let currency = body["reporting_currency"]?.stringValue
        if currency.map(ExchangeRate.isCurrencyCode) != true {
            details.append(ErrorDetail(path: ["reporting_currency"], message: "Expected ISO 4217, three capital letters"))
        }
        guard details.isEmpty, let program, let currency else {
            throw HTTPError.validation(details, suggestion: Self.settingsSuggestion)
        }
        let store = try use()
        guard try projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let settings = RevenueSettings(smallBusinessProgram: program, reportingCurrency: currency)
        try store.setSettings(settings, projectId: id)
        var out = JSONBody(capacity: 128)
        out.object {
            $0.field("project_id", id.lowercasedText)
            $0.field("small_business_program", settings.smallBusinessProgram)
            $0.field("reporting_currency", settings.reportingCurrency)
        }
        return Response.json(200, out.bytes)
    }

    /// `PUT /v1/admin/exchange-rates` `{date, base, rates: {CODE: decimal}}`.
    func setRates(_ request: Request) throws -> Response {
        let body = try RequestBody.object(request, suggestion: Self.ratesSuggestion)
        var details: [ErrorDetail] = []
        let day = body["date"]?.stringValue.flatMap(MetricsController.parseDay)
        if day == nil { details.append(ErrorDetail(path: ["date"], message: "Expected a date as YYYY-MM-DD")) }
        let base = body["base"]?.stringValue
        if base.map(ExchangeRate.isCurrencyCode) != true {
            details.append(ErrorDetail(path: ["base"], message: "Expected ISO 4217, three capital letters"))
        }
        var parsed: [(String, ExchangeRate.Value)] = []
        if let rates = body["rates"]?.objectValue, !rates.isEmpty, rates.count <= 500 {
            for (code, value) in rates {
                guard ExchangeRate.isCurrencyCode(code), code != base else {
                    details.append(ErrorDetail(path: ["rates", code], message: "Expected ISO 4217, other than base"))
                    continue
                }
                let text = value.stringValue ?? value.numberValue?.literal
                guard let rate = text.flatMap(ExchangeRate.Value.init) else {
                    details.append(ErrorDetail(path: ["rates", code], message: "Expected a positive decimal"))
                    continue
                }
                parsed.append((code, rate))
            }
        } else {
            details.append(ErrorDetail(path: ["rates"], message: "Required: an object of 1 to 500 rates"))
        }
        guard details.isEmpty, let day, let base else {
            throw HTTPError.validation(details, suggestion: Self.ratesSuggestion)
        }
        let date = Date(timeIntervalSince1970: Double(day) * 86_400)
        let stored = try use().storeRates(parsed.map {
            ExchangeRate(day: date, base: base, currency: $0.0, rate: $0.1)
        })
        var out = JSONBody(capacity: 128)
        out.object {
            $0.field("date", MetricsController.dayString(date))
            $0.field("base", base)
            $0.field("stored", stored)
        }
        return Response.json(200, out.bytes)
    }
}
