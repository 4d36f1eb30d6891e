public import Domain
public import Foundation
import Postgres

/// Usage per account and month, and quotas, in PostgreSQL (schema/0054). Tracked revenue is derived from the
/// overview's rollups (`PostgresOverviewMetricsStore.days`: `overview_days` plus the log rows not derived yet).
public final class PostgresUsageStore: PostgresStore, @unchecked Sendable, UsageStore {
    /// `YYYY-MM-01`, bound as text and cast to `date`.
    private static func day(_ month: UsageMonth) -> String { month.description + "-01" }

    /// One statement for every delta: a project's counts go to its account; deltas of deleted accounts or projects
    /// drop out of the join.
    public func add(_ deltas: [UsageDelta]) throws {
        var accounts: [String] = [], projects: [String] = [], months: [String] = []
        var columns = [[String]](repeating: [], count: UsageKind.allCases.count)
        for delta in deltas {
            switch delta.owner {
            case .account(let id):
                accounts.append(id.uuidString)
                projects.append("")
            case .project(let id):
                accounts.append("")
                projects.append(id.uuidString)
            }
            months.append(Self.day(delta.month))
            for kind in UsageKind.allCases {
                columns[kind.rawValue].append(String(kind.rawValue < delta.counts.count ? delta.counts[kind.rawValue] : 0))
            }
        }
        let receipts = columns[UsageKind.receipts.rawValue], notifications = columns[UsageKind.notifications.rawValue]
        let calls = columns[UsageKind.appStoreCalls.rawValue], webhooks = columns[UsageKind.webhooksDelivered.rawValue]
        _ = try StorageErrors.mapping("add usage") {
            try pool.withConnection { connection in
                // Subqueries, not CTEs: Citus sends this statement to every node's copy of the reference tables and
                // leaves a table named in a CTE unrenamed there (a query of the distributed table on a shard, refused).
                try connection.execute("""
                    INSERT INTO account_usage (account_id, month, receipts, notifications, app_store_calls,
                        webhooks_delivered)
                    SELECT o.account_id, o.month, sum(o.r), sum(o.n), sum(o.c), sum(o.w)
                    FROM (
                        SELECT COALESCE(u.account, pr.account_id) AS account_id, u.month, u.r, u.n, u.c, u.w
                        FROM (
                            SELECT NULLIF(t.a, '')::uuid AS account, NULLIF(t.p, '')::uuid AS project,
                                t.m::date AS month, t.r::int8 AS r, t.n::int8 AS n, t.c::int8 AS c, t.w::int8 AS w
                            FROM unnest(\(accounts)::text[], \(projects)::text[], \(months)::text[], \(receipts)::text[],
                                \(notifications)::text[], \(calls)::text[], \(webhooks)::text[]) AS t(a, p, m, r, n, c, w)
                        ) u
                        LEFT JOIN projects pr ON pr.id = u.project
                    ) o JOIN accounts a ON a.id = o.account_id
                    GROUP BY o.account_id, o.month
                    ON CONFLICT (account_id, month) DO UPDATE SET
                        receipts = account_usage.receipts + EXCLUDED.receipts,
                        notifications = account_usage.notifications + EXCLUDED.notifications,
                        app_store_calls = account_usage.app_store_calls + EXCLUDED.app_store_calls,
                        webhooks_delivered = account_usage.webhooks_delivered + EXCLUDED.webhooks_delivered
                    """)
            }
        }
    }

    public func usage(accountId: UUID, month: UsageMonth) throws -> AccountUsage? {
        try StorageErrors.mapping("usage") {
            try pool.withConnection { connection in
                guard try connection.query("SELECT 1 FROM accounts WHERE id = \(accountId)").first != nil else {
                    return nil
                }
                let first = Self.day(month), next = Self.day(month.next)
                var counts: [UsageKind: Int64] = [:]
                for kind in UsageKind.allCases { counts[kind] = 0 }
                if let row = try connection.query("""
                    SELECT receipts, notifications, app_store_calls, webhooks_delivered FROM account_usage
                    WHERE account_id = \(accountId) AND month = \(first)::date
                    """).first {
                    counts[.receipts] = try row.decode("receipts", as: Int64.self)
                    counts[.notifications] = try row.decode("notifications", as: Int64.self)
                    counts[.appStoreCalls] = try row.decode("app_store_calls", as: Int64.self)
                    counts[.webhooksDelivered] = try row.decode("webhooks_delivered", as: Int64.self)
                }
                var revenue: [String: Int64] = [:]
                for row in try connection.query("""
                    WITH q AS (SELECT id AS project, NULL::text AS env FROM projects WHERE account_id = \(accountId)),
                    d AS (\(unsafeSQL: PostgresOverviewMetricsStore.days))
                    SELECT d.currency, sum(d.revenue_milli)::int8 AS milli FROM d
                    WHERE d.day >= \(first)::date AND d.day < \(next)::date AND d.currency IS NOT NULL
                    GROUP BY d.currency HAVING sum(d.priced) > 0
                    """) {
                    revenue[try row.decode("currency", as: String.self)] = try row.decode("milli", as: Int64.self)
                }
                return AccountUsage(month: month, counts: counts, revenue: revenue)
            }
        }
    }

    public func quotas(accountId: UUID) throws -> AccountQuotas? {
        try StorageErrors.mapping("quotas") {
            try pool.withConnection { connection in
                guard let row = try connection.query("""
                    SELECT q.receipts_per_month, q.requests_per_second FROM accounts a
                    LEFT JOIN account_quotas q ON q.account_id = a.id WHERE a.id = \(accountId)
                    """).first else { return nil }
                return AccountQuotas(receiptsPerMonth: try row.decode("receipts_per_month", as: Int64?.self),
                                     requestsPerSecond: try row.decode("requests_per_second", as: Int64?.self))
            }
        }
    }

    public func setQuotas(accountId: UUID, _ quotas: AccountQuotas, now: Date) throws -> AccountQuotas {
        try StorageErrors.mapping("set quotas") {
            try pool.transaction { connection in
                guard try connection.query("SELECT 1 FROM accounts WHERE id = \(accountId) FOR KEY SHARE").first != nil
                else { throw AccountAdministration.notFound(accountId) }
                let before = try connection.query("""
                    SELECT receipts_per_month, requests_per_second FROM account_quotas
                    WHERE account_id = \(accountId) FOR UPDATE
                    """).first
                func value(_ column: String) throws -> AuditValue {
                    try before?.decode(column, as: Int64?.self).flatMap { Int(exactly: $0) }.map { .int($0) } ?? .null
                }
                func value(_ limit: Int64?) -> AuditValue { limit.flatMap { Int(exactly: $0) }.map { .int($0) } ?? .null }
                if quotas.isUnlimited {
                    try connection.execute("DELETE FROM account_quotas WHERE account_id = \(accountId)")
                } else {
                    try connection.execute("""
                        INSERT INTO account_quotas (account_id, receipts_per_month, requests_per_second, updated_at)
                        VALUES (\(accountId), \(Bind.int64(quotas.receiptsPerMonth)),
                            \(Bind.int64(quotas.requestsPerSecond)), \(now))
                        ON CONFLICT (account_id) DO UPDATE SET receipts_per_month = EXCLUDED.receipts_per_month,
                            requests_per_second = EXCLUDED.requests_per_second, updated_at = EXCLUDED.updated_at
                        """)
                }
                try AuditRows.write(connection, changes: AuditRows.diff(
                    [("receipts_per_month", try value("receipts_per_month")),
                     ("requests_per_second", try value("requests_per_second"))],
                    [("receipts_per_month", value(quotas.receiptsPerMonth)),
                     ("requests_per_second", value(quotas.requestsPerSecond))]))
                return quotas
            }
        }
    }

    public func limitedAccounts(month: UsageMonth) throws -> [(accountId: UUID, quotas: AccountQuotas, receipts: Int64)] {
        try StorageErrors.mapping("limited accounts") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT q.account_id, q.receipts_per_month, q.requests_per_second,
                        COALESCE(u.receipts, 0)::int8 AS receipts
                    FROM account_quotas q
                    LEFT JOIN account_usage u ON u.account_id = q.account_id AND u.month = \(Self.day(month))::date
                    """).map { row in
                    (try row.decode("account_id", as: UUID.self),
                     AccountQuotas(receiptsPerMonth: try row.decode("receipts_per_month", as: Int64?.self),
                                   requestsPerSecond: try row.decode("requests_per_second", as: Int64?.self)),
                     try row.decode("receipts", as: Int64.self))
                }
            }
        }
    }
}
