public import Domain
import Foundation
import Postgres

/// The transactions export (issue 26): `transactions` (every stored transaction, its signed facts) with its money
/// from `revenue_transactions` under the rules of `schema/functions/bouncer_money_*.sql` (the charts' own: the
/// storefront's tax rate of the purchase day once the operator has configured rates, one lookup per row), and its
/// evidence from `transaction_jws`. Keyset pages over the primary key (project, environment, transaction id), the
/// purchase range a filter: no index on the hot table for an occasional export, and each page costs one statement
/// and one pooled connection, given back before the rows are written out.
extension PostgresChartStore: TransactionExportStore {
    public func exportTransactions(_ query: TransactionExportQuery, pageSize: Int,
                                   each: (ExportedTransaction) throws -> Void) throws {
        let limit = max(1, min(pageSize, 5_000))
        var after: (environment: String, id: String)?
        var settings: RevenueSettings?
        while true {
            let page = try StorageErrors.mapping("transactions export") {
                try pool.withConnection { c -> [ExportedTransaction] in
                    let s = try settings ?? Self.settings(c, query.projectId)
                    settings = s
                    return try c.query("""
                        SELECT t.environment, t.transaction_id, t.original_transaction_id, t.product_id, t.type,
                            t.payload->>'storefront' AS storefront, t.purchase_date, t.expires_date,
                            timestamptz 'epoch' + (t.payload->>'revocationDate')::int8 * interval '1 millisecond'
                                AS revocation_date, t.signed_date, encode(sha256(convert_to(h.header || '.' || j.body, 'UTF8')), 'hex') AS jws_sha256,
                            CASE WHEN \(query.includeJWS)::boolean THEN h.header || '.' || j.body END AS jws,
                            r.currency, r.price_milli, m.pct::int8 AS commission, m.proceeds,
                            r.refund_milli_percent::int8 AS refund_milli_percent,
                            bouncer_money_share(r.price_milli, r.refund_milli_percent) AS refunded,
                            m.proceeds - bouncer_money_share(m.proceeds, r.refund_milli_percent) AS net,
                            bouncer_money_convert(r.price_milli, x.sale) AS price_reporting,
                            bouncer_money_convert(m.proceeds, x.sale) AS proceeds_reporting,
                            CASE WHEN r.refund_milli_percent = 0 THEN bouncer_money_convert(m.proceeds, x.sale)
                                ELSE bouncer_money_convert(m.proceeds, x.sale) - bouncer_money_convert(
                                    bouncer_money_share(m.proceeds, r.refund_milli_percent), x.refund) END
                                AS net_reporting,
                            tx.rate::int8 AS tax_rate, bouncer_money_tax(r.price_milli, tx.rate) AS tax
                        FROM transactions t
                        LEFT JOIN revenue_transactions r ON r.project_id = t.project_id
                            AND r.environment = t.environment AND r.transaction_id = t.transaction_id
                        LEFT JOIN transaction_jws j ON j.project_id = t.project_id AND j.environment = t.environment
                            AND j.transaction_id = t.transaction_id
                        LEFT JOIN jws_headers h ON h.sha256 = j.header_sha256
                        CROSS JOIN LATERAL (SELECT CASE WHEN \(s.taxRatesConfigured)::boolean
                            THEN bouncer_money_tax_rate(r.storefront, (r.purchase_date AT TIME ZONE 'UTC')::date)
                            ELSE 0 END AS rate) tx
                        CROSS JOIN LATERAL (SELECT c.pct, bouncer_money_proceeds(r.price_milli, c.pct, tx.rate) AS proceeds
                            FROM (SELECT bouncer_money_commission(\(s.smallBusinessProgram)::boolean,
                                r.type = 'Auto-Renewable Subscription', r.paid_days_before) AS pct) c) m
                        CROSS JOIN LATERAL (SELECT
                            bouncer_money_rate(r.currency, \(s.reportingCurrency)::text,
                                (r.purchase_date AT TIME ZONE 'UTC')::date) AS sale,
                            bouncer_money_rate(r.currency, \(s.reportingCurrency)::text,
                                (r.refund_date AT TIME ZONE 'UTC')::date) AS refund) x
                        WHERE t.project_id = \(query.projectId)
                          AND (t.environment, t.transaction_id) > (\(after?.environment ?? "")::text, \(after?.id ?? "")::text)
                          AND t.purchase_date >= \(query.from) AND t.purchase_date < \(query.to)
                        ORDER BY t.environment, t.transaction_id
                        LIMIT \(Int64(limit))
                        """).map { try Self.exported($0, reportingCurrency: s.reportingCurrency) }
                }
            }
            for row in page { try each(row) }
            guard page.count == limit, let last = page.last else { return }
            after = (last.environment, last.transactionId)
        }
    }

    private static func exported(_ row: Row, reportingCurrency: String) throws -> ExportedTransaction {
        var money: ExportedTransaction.Money?
        if let currency = try row.decode("currency", as: String?.self),
           let price = try row.decode("price_milli", as: Int64?.self) {
            money = ExportedTransaction.Money(
                currency: currency, priceMilli: price,
                commissionPercent: Int(try row.decode("commission", as: Int64?.self) ?? 0),
                proceedsMilli: try row.decode("proceeds", as: Int64?.self) ?? 0,
                refundMilliPercent: Int(try row.decode("refund_milli_percent", as: Int64?.self) ?? 0),
                refundedMilli: try row.decode("refunded", as: Int64?.self) ?? 0,
                netMilli: try row.decode("net", as: Int64?.self) ?? 0,
                reportingCurrency: reportingCurrency,
                priceReporting: try row.decode("price_reporting", as: Int64?.self),
                proceedsReporting: try row.decode("proceeds_reporting", as: Int64?.self),
                netReporting: try row.decode("net_reporting", as: Int64?.self),
                taxMilliPercent: Int(try row.decode("tax_rate", as: Int64?.self) ?? 0),
                taxMilli: try row.decode("tax", as: Int64?.self) ?? 0)
        }
        return ExportedTransaction(
            environment: try row.decode("environment", as: String.self),
            transactionId: try row.decode("transaction_id", as: String.self),
            originalTransactionId: try row.decode("original_transaction_id", as: String.self),
            productId: try row.decode("product_id", as: String.self),
            type: try row.decode("type", as: String.self),
            storefront: try row.decode("storefront", as: String?.self),
            purchaseDate: try row.decode("purchase_date", as: Date.self),
            expiresDate: try row.decode("expires_date", as: Date?.self),
            revocationDate: try row.decode("revocation_date", as: Date?.self),
            signedDate: try row.decode("signed_date", as: Date.self),
            money: money,
            jwsSHA256: try row.decode("jws_sha256", as: String?.self),
            jws: try row.decode("jws", as: String?.self))
    }
}
