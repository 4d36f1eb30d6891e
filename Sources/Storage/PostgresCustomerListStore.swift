public import Domain
public import Foundation
import Postgres

/// The customer list (`GET /v1/admin/projects/:id/customers`, README "Customers as a list"): one statement over the
/// project's current bindings (`subscriptions`, by its primary key's `project_id` prefix), their purchases (primary
/// key) and their transactions' money facts (`revenue_transactions_original_idx`); a page's entitlements by the
/// bindings' and grants' `(project_id, user_id…)` indexes. The money rules are those of
/// `schema/functions/bouncer_money_*.sql` as the `revenue` chart applies them. The net is computed for every customer
/// only when the query sorts or filters by it; otherwise for the page's customers alone.
public final class PostgresCustomerListStore: PostgresStore, @unchecked Sendable, CustomerListStore {
    public func customers(_ query: CustomerListQuery, now: Date) throws -> CustomerPage {
        let limit = min(max(query.limit, 1), CustomerListQuery.maximumLimit)
        let netFirst = query.sort == .net || query.minNetMilli != nil
        let order = query.descending ? "DESC" : "ASC"
        let compare = query.descending ? "<" : ">"
        return try StorageErrors.mapping("customers") {
            try pool.transaction(isolation: .repeatableRead) { c in
                _ = try c.execute("SET LOCAL jit = off")
                let settings = try PostgresChartStore.settings(c, query.projectId)
                var customers: [CustomerSummary] = []
                var positions: [CustomerListQuery.Position] = []
                for row in try c.query("""
                    WITH q AS NOT MATERIALIZED (SELECT \(query.projectId)::uuid AS project,
                        \(query.environment?.rawValue)::text AS env, \(query.status?.rawValue)::text AS status,
                        \(query.productId)::text AS product, \(query.country)::text AS country,
                        \(query.firstSeenFrom)::timestamptz AS seen_from, \(query.firstSeenTo)::timestamptz AS seen_to,
                        \(query.minNetMilli)::int8 AS min_net, \(query.after?.value)::int8 AS after_value,
                        \(query.after?.userId)::text AS after_user, \(settings.reportingCurrency)::text AS cur,
                        \(settings.smallBusinessProgram)::boolean AS sbp,
                        \(settings.taxRatesConfigured)::boolean AS taxed, \(now)::timestamptz AS now),
                    h AS MATERIALIZED (SELECT s.user_id, s.bound_at, p.environment, p.original_transaction_id,
                            p.product_id, p.purchase_date, bouncer_purchase_status(ROW(p.*)::purchases, q.now) AS status,
                            COALESCE(p.revocation_date, GREATEST(p.expires_date, p.grace_period_expires_date)) AS ended
                        FROM q JOIN subscriptions s ON s.project_id = q.project AND s.revoked_at IS NULL
                            AND (q.env IS NULL OR s.environment = q.env)
                        JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                            AND p.original_transaction_id = s.original_transaction_id),
                    c AS (SELECT h.user_id, min(h.bound_at) AS first_seen, max(h.purchase_date) AS last_purchase,
                            CASE WHEN bool_or(h.status = 'active') OR EXISTS (SELECT 1 FROM grants g
                                    WHERE g.project_id = q.project AND g.user_id = h.user_id AND g.revoked_at IS NULL
                                      AND (g.expires_at IS NULL OR g.expires_at > q.now)) THEN 'active'
                                ELSE (array_agg(h.status ORDER BY h.ended DESC NULLS LAST))[1] END AS status
                        FROM q, h GROUP BY q.project, q.now, q.product, q.country, h.user_id
                        HAVING (q.product IS NULL OR bool_or(h.product_id = q.product))
                           AND (q.country IS NULL OR bool_or(EXISTS (SELECT 1 FROM revenue_transactions r
                                WHERE r.project_id = q.project AND r.original_transaction_id = h.original_transaction_id
                                  AND r.environment = h.environment AND r.storefront = q.country)))),
                    f AS (SELECT c.* FROM q, c WHERE (q.status IS NULL OR c.status = q.status)
                        AND (q.seen_from IS NULL OR c.first_seen >= q.seen_from)
                        AND (q.seen_to IS NULL OR c.first_seen < q.seen_to)),
                    \(unsafeSQL: netFirst ? Self.netOver("f") : "n AS (SELECT f.* FROM f)"),
                    k AS (SELECT n.*, \(unsafeSQL: Self.sortValue(query.sort)) AS v FROM q, n
                        WHERE \(unsafeSQL: netFirst ? "q.min_net IS NULL OR n.net >= q.min_net" : "true")),
                    page AS (SELECT k.* FROM q, k
                        WHERE q.after_value IS NULL OR (k.v, k.user_id COLLATE "C") \(unsafeSQL: compare)
                            (q.after_value, q.after_user COLLATE "C")
                        ORDER BY k.v \(unsafeSQL: order), k.user_id COLLATE "C" \(unsafeSQL: order)
                        LIMIT \(limit + 1)),
                    \(unsafeSQL: netFirst ? "pn AS (SELECT page.* FROM page)" : Self.netOver("page", as: "pn")),
                    x AS (SELECT pn.user_id, array_agg(w.currency ORDER BY w.currency)
                                FILTER (WHERE w.currency IS NOT NULL) AS currencies,
                            array_agg(w.amount ORDER BY w.currency) FILTER (WHERE w.currency IS NOT NULL) AS amounts
                        FROM pn LEFT JOIN (SELECT m.user_id, m.currency, sum(m.amount)::int8 AS amount
                            FROM m WHERE m.rate IS NULL GROUP BY 1, 2) w ON w.user_id = pn.user_id
                        GROUP BY pn.user_id)
                    SELECT pn.user_id, pn.v, pn.status, pn.first_seen, pn.last_purchase, pn.net,
                        x.currencies, x.amounts,
                        ARRAY(SELECT DISTINCT e.entitlement FROM (
                            SELECT unnest(pr.entitlements) AS entitlement FROM subscriptions s
                            JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                                AND p.original_transaction_id = s.original_transaction_id
                            JOIN products pr ON pr.project_id = q.project AND pr.product_id = p.product_id
                            WHERE s.project_id = q.project AND s.user_id = pn.user_id AND s.revoked_at IS NULL
                              AND (q.env IS NULL OR s.environment = q.env) AND bouncer_purchase_status(ROW(p.*)::purchases, q.now) = 'active'
                              AND NOT (p.environment = 'Sandbox' AND EXISTS (SELECT 1 FROM projects o
                                  WHERE o.id = q.project AND o.sandbox_access = 'allowlist'
                                    AND NOT pn.user_id = ANY (o.sandbox_allowed_user_ids)))
                            UNION ALL
                            SELECT g.entitlement FROM grants g WHERE g.project_id = q.project AND g.user_id = pn.user_id
                              AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > q.now)) e
                            ORDER BY 1) AS entitlements
                    FROM q, pn JOIN x ON x.user_id = pn.user_id
                    ORDER BY pn.v \(unsafeSQL: order), pn.user_id COLLATE "C" \(unsafeSQL: order)
                    """) {
                    let currencies = try row.decode("currencies", as: [String]?.self) ?? []
                    let amounts = try row.decode("amounts", as: [Int64]?.self) ?? []
                    let userId = try row.decode("user_id", as: String.self)
                    positions.append(.init(value: try row.decode("v", as: Int64.self), userId: userId))
                    var unconverted: [String: Int64] = [:]
                    for (currency, amount) in zip(currencies, amounts) { unconverted[currency] = amount }
                    customers.append(CustomerSummary(
                        userId: userId,
                        status: CustomerListQuery.Status(rawValue: try row.decode("status", as: String.self)) ?? .expired,
                        entitlements: try row.decode("entitlements", as: [String].self),
                        firstSeen: try row.decode("first_seen", as: Date.self),
                        lastPurchase: try row.decode("last_purchase", as: Date?.self),
                        netMilli: try row.decode("net", as: Int64.self),
                        unconverted: unconverted))
                }
                guard customers.count > limit else {
                    return CustomerPage(settings: settings, customers: customers, next: nil)
                }
                customers.removeLast(customers.count - limit)
                return CustomerPage(settings: settings, customers: customers, next: positions.dropFirst(limit - 1).first)
            }
        }
    }

    /// The sort key's value in `k` (the cursor's `value`): milliseconds since 1970 for a date (none sorts first
    /// ascending), milli-units for net.
    static func sortValue(_ key: CustomerListQuery.SortKey) -> String {
        switch key {
        case .firstSeen: return "floor(extract(epoch FROM n.first_seen) * 1000)::int8"
        case .lastPurchase:
            return "COALESCE(floor(extract(epoch FROM n.last_purchase) * 1000)::int8, -9223372036854775808)"
        case .net: return "n.net"
        }
    }

    /// CTEs `m` (each money amount of the customers of `source`: proceeds by purchase day (after its storefront's
    /// tax of that day, `tr`, once the operator has configured rates), refunded proceeds
    /// negated by refund day, with the rate into the reporting currency, NULL when none) and `out` (`source`'s rows
    /// with `net`, the sum of the converted amounts, each rounded once), as the `revenue` chart's net. `rates` is
    /// MATERIALIZED: once per (currency, day); inlined, the planner pushes `rate IS NOT NULL` below the DISTINCT and
    /// looks a rate up per amount (8× slower on 100,000 customers).
    static func netOver(_ source: String, as out: String = "n") -> String {
        """
        a0 AS NOT MATERIALIZED (SELECT \(source).user_id, r.currency, r.purchase_date, r.refund_date,
                r.refund_milli_percent, r.price_milli, r.type, r.paid_days_before, COALESCE(r.storefront, '') AS sf,
                (r.purchase_date AT TIME ZONE 'UTC')::date AS sale_day
            FROM q CROSS JOIN \(source) JOIN h ON h.user_id = \(source).user_id
            JOIN revenue_transactions r ON r.project_id = q.project AND r.original_transaction_id = h.original_transaction_id
                AND r.environment = h.environment
            WHERE r.price_milli > 0),
        \(PostgresChartStore.taxRates("tr", of: "SELECT DISTINCT a0.sf, a0.sale_day AS day FROM a0")),
        a AS (SELECT a0.user_id, a0.currency, a0.purchase_date, a0.refund_date, a0.refund_milli_percent,
                bouncer_money_proceeds(a0.price_milli, bouncer_money_commission(q.sbp,
                    a0.type = 'Auto-Renewable Subscription', a0.paid_days_before), COALESCE(tr.tax, 0)) AS proceeds
            FROM q, a0 LEFT JOIN tr ON tr.sf = a0.sf AND tr.day = a0.sale_day),
        e AS (SELECT a.user_id, a.currency, (a.purchase_date AT TIME ZONE 'UTC')::date AS day, a.proceeds AS amount FROM a
            UNION ALL
            SELECT a.user_id, a.currency, (a.refund_date AT TIME ZONE 'UTC')::date,
                -bouncer_money_share(a.proceeds, a.refund_milli_percent)
            FROM a WHERE a.refund_date IS NOT NULL AND a.refund_milli_percent > 0),
        rates AS MATERIALIZED (SELECT d.currency, d.day, bouncer_money_rate(d.currency, q.cur, d.day) AS rate
            FROM q, (SELECT DISTINCT e.currency, e.day FROM e) d),
        m AS (SELECT e.*, rates.rate FROM e JOIN rates ON rates.currency = e.currency AND rates.day = e.day),
        \(out) AS (SELECT \(source).*, COALESCE(t.net, 0)::int8 AS net FROM \(source)
            LEFT JOIN (SELECT m.user_id, sum(bouncer_money_convert(m.amount, m.rate)) AS net FROM m
                WHERE m.rate IS NOT NULL GROUP BY m.user_id) t ON t.user_id = \(source).user_id)
        """
    }
}
