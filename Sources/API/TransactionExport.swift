public import Domain
public import Foundation
public import HTTPCore
import Primitives

/// `GET /v1/admin/projects/:id/exports/transactions.csv` (issue 26): every transaction purchased in the range, one
/// row each, with its money and the SHA-256 of the JWS it came from (`include_jws=true`: the JWS too), so anyone can
/// re-verify a row against Apple's root offline (`bouncer verify FILE`). Streamed (`Response.streaming`) from keyset
/// pages: memory stays flat whatever the size.
struct TransactionExportController: APIController {
    let projects: any ProjectStore
    /// `nil` answers 503.
    let store: (any TransactionExportStore)?
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [
            APIRoute(.get, "/v1/admin/projects/:id/exports/transactions.csv", .adminAPI, access: .admin(.revenueRead),
                     export),
        ]
    }

    /// Rows per statement.
    static let pageSize = 500

    /// `GET …/exports/transactions.csv?from=&to=&include_jws=`.
    func export(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let query = try TransactionExportCSV.query(request.queryItems(), projectId: id, now: now())
        let store = try unwired(store, "Exports are not configured.", "charts")
        guard try projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        var headers = HTTPHeaders()
        headers.set("Content-Type", "text/csv; charset=utf-8")
        headers.set("Content-Disposition", "attachment; filename=\"transactions.csv\"")
        return .streaming(200, headers: headers, BodyStream { writer in
            try writer.write(TransactionExportCSV.header(includeJWS: query.includeJWS))
            try store.exportTransactions(query, pageSize: Self.pageSize) { row in
                try writer.write(TransactionExportCSV.line(row, includeJWS: query.includeJWS))
            }
        })
    }
}

/// The export's CSV, the one writer for the route and `bouncer export transactions`, and its reader for
/// `bouncer verify`: RFC 4180 with formula-safe cells (`AuditLogController.csvCell`). Instants are RFC 3339 with
/// milliseconds (Apple's resolution), amounts integers in milli-units (9990 is 9.99), empty when absent.
public enum TransactionExportCSV {
    /// The columns, in order; `jws` only with `include_jws=true`, last. `tax_rate` (percent) and `tax_milli` came
    /// after the others: readers by position keep theirs.
    public static let columns = [
        "environment", "transaction_id", "original_transaction_id", "product_id", "type", "storefront",
        "purchase_date", "expires_date", "revocation_date", "signed_date", "currency", "price_milli",
        "commission_percent", "proceeds_milli", "refund_milli_percent", "refunded_milli", "net_milli",
        "reporting_currency", "price_reporting_milli", "proceeds_reporting_milli", "net_reporting_milli", "jws_sha256",
        "tax_rate", "tax_milli",
    ]

    static let suggestion = "Query: from and to as YYYY-MM-DD (UTC days of the purchase date, inclusive; default the "
        + "last 30 days), include_jws (true or false, default false)."

    /// The export a query string asks for (`from`, `to`: UTC days of the purchase date, inclusive, default the last
    /// 30 days; `include_jws`): unknown parameters are ignored, a repeated one is the last. The route's and the CLI's.
    public static func query(_ items: [(name: String, value: String)], projectId: UUID, now: Date) throws(HTTPError)
        -> TransactionExportQuery
    {
        var details: [ErrorDetail] = []
        var from: Int64?
        var to: Int64?
        var includeJWS = false
        for item in items {
            switch item.name {
            case "from", "to":
                MetricsController.dayParameter(item, from: &from, to: &to, &details)
            case "include_jws":
                switch item.value {
                case "true": includeJWS = true
                case "false": includeJWS = false
                default: details.append(ErrorDetail(path: ["include_jws"], message: "Expected true or false"))
                }
            default:
                continue
            }
        }
        let (first, last) = MetricsController.days(from: from, to: to, now: now, maxDays: Int.max, &details)
        guard details.isEmpty else { throw HTTPError.validation(details, suggestion: suggestion) }
        return TransactionExportQuery(projectId: projectId, from: Date(timeIntervalSince1970: Double(first) * 86_400),
                                      to: Date(timeIntervalSince1970: Double(last + 1) * 86_400), includeJWS: includeJWS)
    }

    /// The header line (CRLF-terminated).
    public static func header(includeJWS: Bool) -> String {
        (columns + (includeJWS ? ["jws"] : [])).joined(separator: ",") + "\r\n"
    }

    /// One row's line (CRLF-terminated).
    public static func line(_ t: ExportedTransaction, includeJWS: Bool) -> String {
        func instant(_ date: Date?) -> String { date.map { RFC3339.string(secondsSince1970: $0.timeIntervalSince1970) } ?? "" }
        func amount(_ value: Int64?) -> String { value.map(String.init) ?? "" }
        let m = t.money
        var cells = [
            t.environment, t.transactionId, t.originalTransactionId, t.productId, t.type, t.storefront ?? "",
            instant(t.purchaseDate), instant(t.expiresDate), instant(t.revocationDate), instant(t.signedDate),
            m?.currency ?? "", amount(m?.priceMilli), m.map { String($0.commissionPercent) } ?? "",
            amount(m?.proceedsMilli), m.map { String($0.refundMilliPercent) } ?? "", amount(m?.refundedMilli),
            amount(m?.netMilli), m?.reportingCurrency ?? "", amount(m?.priceReporting), amount(m?.proceedsReporting),
            amount(m?.netReporting), t.jwsSHA256 ?? "",
            m.map { TaxRate.text(milliPercent: $0.taxMilliPercent) } ?? "", amount(m?.taxMilli),
        ]
        if includeJWS { cells.append(t.jws ?? "") }
        return cells.map(AuditLogController.csvCell).joined(separator: ",") + "\r\n"
    }
}
