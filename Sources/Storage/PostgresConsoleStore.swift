public import Domain
public import Foundation
import Postgres
public import Primitives

/// Console sessions in `console_sessions` (by token hash). Errors: see `StorageErrors`.
public final class PostgresConsoleSessionStore: PostgresStore, @unchecked Sendable, ConsoleSessionStore {
    /// Inserts the session and deletes expired ones in the same transaction.
    public func createSession(tokenHash: [UInt8], adminFingerprint: [UInt8], createdAt: Date, expiresAt: Date) throws {
        try StorageErrors.mapping("create console session") {
            try pool.transaction { connection in
                _ = try connection.execute("DELETE FROM console_sessions WHERE expires_at <= \(createdAt)")
                _ = try connection.execute("""
                    INSERT INTO console_sessions (token_hash, admin_fingerprint, created_at, expires_at)
                    VALUES (\(tokenHash), \(adminFingerprint), \(createdAt), \(expiresAt))
                    """)
            }
        }
    }

    /// Inserts a member's session (schema/0051: it goes when the member does) and deletes expired ones.
    public func createMemberSession(tokenHash: [UInt8], accountId: UUID, memberId: UUID, createdAt: Date,
                                    expiresAt: Date) throws {
        try StorageErrors.mapping("create member session") {
            try pool.transaction { connection in
                _ = try connection.execute("DELETE FROM console_sessions WHERE expires_at <= \(createdAt)")
                _ = try connection.execute("""
                    INSERT INTO console_sessions (token_hash, admin_fingerprint, account_id, member_id, created_at,
                                                  expires_at)
                    VALUES (\(tokenHash), \([UInt8]()), \(accountId), \(memberId), \(createdAt), \(expiresAt))
                    """)
            }
        }
    }

    /// A live session; a member's with the member's current role (a member without a password has no session).
    public func session(tokenHash: [UInt8], at now: Date) throws -> ConsoleSession? {
        try StorageErrors.mapping("console session") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT s.expires_at, s.admin_fingerprint, s.account_id, s.member_id, m.role
                    FROM console_sessions s
                    LEFT JOIN members m ON m.account_id = s.account_id AND m.id = s.member_id
                    WHERE s.token_hash = \(tokenHash) AND s.expires_at > \(now)
                      AND (s.member_id IS NULL OR m.password_hash IS NOT NULL)
                    """).first.map { row in
                    var principal = Principal.operator
                    if let memberId = try row.decode("member_id", as: UUID?.self),
                       let accountId = try row.decode("account_id", as: UUID?.self) {
                        let role = try row.decode("role", as: String?.self).flatMap(Role.init(rawValue:))
                        guard let role else { throw PostgresProjectStore.missingRow("members.role of a session") }
                        principal = .member(id: memberId, accountId: accountId, role: role)
                    }
                    return ConsoleSession(expiresAt: try row.decode("expires_at", as: Date.self),
                                          adminFingerprint: try row.decode("admin_fingerprint", as: [UInt8].self),
                                          principal: principal)
                }
            }
        }
    }

    /// Deletes the session.
    public func deleteSession(tokenHash: [UInt8]) throws -> Bool {
        try StorageErrors.mapping("delete console session") {
            try pool.withConnection { connection in
                try connection.execute("DELETE FROM console_sessions WHERE token_hash = \(tokenHash)") > 0
            }
        }
    }

    /// Deletes every session (not a tenant table: sessions belong to the operator, not to a project).
    public func deleteAllSessions() throws -> Int {
        try StorageErrors.mapping("delete console sessions") {
            try pool.transaction { connection in
                let deleted = try connection.execute("DELETE FROM console_sessions")
                try AuditRows.write(connection, changes: [AuditChange("sessions", .int(deleted), .int(0))])
                return deleted
            }
        }
    }
}

/// The revenue dashboard's overview, read from the rollups the deriver keeps from the change log
/// (`schema/0035_overview_days.sql`): per-day sums (`overview_days`), the current day's events at their instants
/// (`overview_instants`) and free trials (`overview_trials`), plus the log rows not derived yet
/// (`bouncer_overview_events` of the pending rows), all in one snapshot, so a receipt shows as soon as it commits.
/// No statement reads an index of the receipt's tables by date; the trial conversions' lookup of paid transactions
/// goes through `transactions_original_idx`.
///
/// Every figure is what the index-based statements of main before 0035 computed (kept in
/// `Tests/StorageTests/OverviewSpecification.swift`, compared on random data by `OverviewRollupTests`) for ranges of
/// whole UTC days, which is what `OverviewRange` holds. A transaction is active from its purchase until the earlier
/// of its expiry and revocation (no expiry: until revoked; consumables never); active at an instant = started before
/// it − stopped by it, running sums from the first day, so a bound at midnight uses the rows' `midnight` flag and one
/// within a day (`now`) the instants. Entitlements weigh each product's counts by its mapped entitlements, read from
/// `products`.
public final class PostgresOverviewMetricsStore: PostgresStore, @unchecked Sendable, OverviewMetricsStore {
    /// The project's log rows not derived yet, as `bouncer_overview_events` takes them (`q.project`: the statement's).
    static let pending = """
        (SELECT jsonb_agg(jsonb_build_object('environment', c.environment, 'tx', c.data -> 'tx'))
         FROM purchase_changes c WHERE c.project_id = q.project AND c.data ? 'tx')
        """

    /// The per-day sums, rollup and pending rows, of the project and environment (`q.project`, `q.env`; `q` may hold
    /// several projects: the usage of an account reads its revenue through it, `PostgresUsageStore`).
    static let days = """
        SELECT o.day, o.midnight, o.product_id, CASE WHEN o.currency_null THEN NULL ELSE o.currency END AS currency,
            o.starts, o.start_subs, o.new_purchases, o.renewals, o.priced, o.revenue_milli, o.ends, o.end_subs,
            o.stops, o.stop_subs, o.refunds, o.expirations, o.mrr_n, o.mrr_milli
        FROM overview_days o, q WHERE o.project_id = q.project AND (q.env IS NULL OR o.environment = q.env)
        UNION ALL
        SELECT (e.at AT TIME ZONE 'UTC')::date, (e.at AT TIME ZONE 'UTC')::time = time '00:00', e.product_id,
            e.currency, e.starts, e.start_subs, e.new_purchases, e.renewals, e.priced, e.revenue_milli, e.ends,
            e.end_subs, e.stops, e.stop_subs, e.refunds, e.expirations, e.mrr_n, e.mrr_milli
        FROM q, bouncer_overview_events(\(pending)) e WHERE q.env IS NULL OR e.environment = q.env
        """

    /// The events at their instants from `q.n0` (a midnight) on: the instants table and the pending rows while it
    /// keeps that day (`q.kept`), else every transaction and purchase of the project (a "now" before yesterday, which
    /// the server's clock never asks: the instants were pruned). `ROW(t.*)::transactions`, not `t`: on Citus, where
    /// the statement runs on the tenant's worker, a whole row of a table is its shard's row type.
    private static let instants = """
        SELECT o.at, o.product_id, CASE WHEN o.currency_null THEN NULL ELSE o.currency END AS currency, o.ends,
            o.end_subs, o.expirations, o.mrr_n, o.mrr_milli
        FROM overview_instants o, q
        WHERE q.kept AND o.project_id = q.project AND o.at > q.n0 AND (q.env IS NULL OR o.environment = q.env)
        UNION ALL
        SELECT e.at, e.product_id, e.currency, e.ends, e.end_subs, e.expirations, e.mrr_n, e.mrr_milli
        FROM q, bouncer_overview_events(\(pending)) e
        WHERE q.kept AND (q.env IS NULL OR e.environment = q.env)
        UNION ALL
        SELECT e.at, e.product_id, e.currency, e.ends, e.end_subs, e.expirations, e.mrr_n, e.mrr_milli
        FROM q, transactions t, bouncer_overview_events(jsonb_build_array(jsonb_build_object('environment',
            t.environment, 'tx', jsonb_build_object('new',
                bouncer_overview_fields(ROW(t.*)::transactions))))) e
        WHERE NOT q.kept AND t.project_id = q.project AND (q.env IS NULL OR t.environment = q.env)
        UNION ALL
        SELECT e.at, e.product_id, e.currency, e.ends, e.end_subs, e.expirations, e.mrr_n, e.mrr_milli
        FROM q, purchases p, bouncer_overview_events(jsonb_build_array(jsonb_build_object('environment',
            p.environment, 'tx', jsonb_build_object('p_new',
                bouncer_overview_purchase_fields(ROW(p.*)::purchases))))) e
        WHERE NOT q.kept AND p.project_id = q.project AND (q.env IS NULL OR p.environment = q.env)
        """

    /// Midnight UTC of the day of `date`.
    private static func midnight(before date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    /// The overview.
    public func overview(projectId: UUID, range: OverviewRange, environment: StoreEnvironment?, now: Date) throws
        -> OverviewMetrics
    {
        let lo = range.from
        let hi = range.to
        let env = environment?.rawValue
        let dayCount = max(0, range.days)
        var days = (0..<dayCount).map { OverviewDay(day: lo.addingTimeInterval(Double($0) * 86_400)) }
        // The day of `now` (index from `lo`) and its midnight: events up to that midnight are in the per-day sums,
        // later ones up to `now` in the instants.
        let n0 = Self.midnight(before: now)
        let nowDay = Int((n0.timeIntervalSince(lo) / 86_400).rounded())
        let partial = n0 < now
        /// Whether an event of day `d` (from `lo`), at midnight or not, happened by `now` and is in the per-day sums.
        func byMidnightOfNow(_ d: Int, _ midnight: Bool) -> Bool { d < nowDay || (d == nowDay && midnight) }
        func weighted(_ weights: [String: Int], _ product: String, _ n: Int) -> Int { (weights[product] ?? 0) &* n }
        let (revenue, mrr) = try StorageErrors.mapping("overview metrics") { () throws -> ([String: Int64], [String: Int64]) in
            try pool.transaction(isolation: .repeatableRead) { c in
                // Every statement reads a few thousand rollup rows, but the instants' fallback (a scan of the
                // project's transactions, skipped by a one-time filter) is costed as if it ran: JIT compiling for it
                // took seconds (bench/overview: 2.7 s of a 14 ms statement).
                _ = try c.execute("SET LOCAL jit = off")
                var weights: [String: Int] = [:]
                for row in try c.query("""
                    SELECT product_id, cardinality(entitlements)::int8 AS n FROM products WHERE project_id = \(projectId)
                    """) {
                    weights[try row.decode("product_id", as: String.self)] = try row.decode("n", as: Int.self)
                }
                // Active at the range's start: started before it, minus stopped by it (at its midnight included).
                var subs = 0
                var ents = 0
                for row in try c.query("""
                    WITH q AS NOT MATERIALIZED (SELECT \(projectId)::uuid AS project, \(env)::text AS env,
                        (\(lo) AT TIME ZONE 'UTC')::date AS lo)
                    SELECT d.product_id,
                        (COALESCE(sum(d.start_subs) FILTER (WHERE d.day < q.lo), 0)
                         - COALESCE(sum(d.stop_subs) FILTER (WHERE d.day < q.lo OR d.midnight), 0))::int8 AS subs,
                        (COALESCE(sum(d.starts) FILTER (WHERE d.day < q.lo), 0)
                         - COALESCE(sum(d.stops) FILTER (WHERE d.day < q.lo OR d.midnight), 0))::int8 AS n
                    FROM (\(unsafeSQL: Self.days)) d, q
                    WHERE d.day <= q.lo
                    GROUP BY d.product_id
                    """) {
                    subs &+= try row.decode("subs", as: Int.self)
                    ents &+= weighted(weights, try row.decode("product_id", as: String.self), try row.decode("n", as: Int.self))
                }
                var deltaSubs = [Int](repeating: 0, count: dayCount)
                var deltaEnts = [Int](repeating: 0, count: dayCount)
                var revenue: [String: Int64] = [:]
                // The range's days: starts, revenue, refunds; ends and expirations that happened by now (an end at
                // the range's start midnight is already out of the count at its start).
                for row in try c.query("""
                    WITH q AS NOT MATERIALIZED (SELECT \(projectId)::uuid AS project, \(env)::text AS env,
                        (\(lo) AT TIME ZONE 'UTC')::date AS lo, (\(hi) AT TIME ZONE 'UTC')::date AS hi)
                    SELECT (d.day - q.lo)::int8 AS d, (CASE WHEN d.midnight THEN 1 ELSE 0 END)::int8 AS midnight, d.product_id, d.currency,
                        sum(d.starts)::int8 AS starts, sum(d.start_subs)::int8 AS start_subs,
                        sum(d.new_purchases)::int8 AS new_purchases, sum(d.renewals)::int8 AS renewals,
                        sum(d.priced)::int8 AS priced, sum(d.revenue_milli)::int8 AS revenue_milli,
                        sum(d.ends)::int8 AS ends, sum(d.end_subs)::int8 AS end_subs, sum(d.refunds)::int8 AS refunds,
                        sum(d.expirations)::int8 AS expirations
                    FROM (\(unsafeSQL: Self.days)) d, q
                    WHERE d.day >= q.lo AND d.day < q.hi
                    GROUP BY 1, 2, 3, 4
                    """) {
                    let i = try row.decode("d", as: Int.self)
                    guard days.indices.contains(i) else { continue }
                    let product = try row.decode("product_id", as: String.self)
                    let midnight = try row.decode("midnight", as: Int.self) != 0
                    deltaSubs[i] &+= try row.decode("start_subs", as: Int.self)
                    deltaEnts[i] &+= weighted(weights, product, try row.decode("starts", as: Int.self))
                    days[i].newPurchases &+= try row.decode("new_purchases", as: Int.self)
                    days[i].renewals &+= try row.decode("renewals", as: Int.self)
                    days[i].refunds &+= try row.decode("refunds", as: Int.self)
                    if let currency = try row.decode("currency", as: String?.self),
                       try row.decode("priced", as: Int.self) > 0 {
                        let milli = try row.decode("revenue_milli", as: Int64.self)
                        days[i].revenue[currency, default: 0] &+= milli
                        revenue[currency, default: 0] &+= milli
                    }
                    if byMidnightOfNow(i, midnight) {
                        days[i].expirations &+= try row.decode("expirations", as: Int.self)
                        if !(i == 0 && midnight) {
                            deltaSubs[i] &-= try row.decode("end_subs", as: Int.self)
                            deltaEnts[i] &-= weighted(weights, product, try row.decode("ends", as: Int.self))
                        }
                    }
                }
                // Today's ends and expirations after its midnight, up to now.
                if partial, days.indices.contains(nowDay) {
                    for row in try c.query("""
                        WITH q AS NOT MATERIALIZED (SELECT \(projectId)::uuid AS project, \(env)::text AS env,
                            \(n0)::timestamptz AS n0, \(now)::timestamptz AS at,
                            (\(n0)::timestamptz >= (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day')
                                AT TIME ZONE 'UTC') AS kept)
                        SELECT i.product_id, sum(i.ends)::int8 AS ends, sum(i.end_subs)::int8 AS end_subs,
                            sum(i.expirations)::int8 AS expirations
                        FROM (\(unsafeSQL: Self.instants)) i, q
                        WHERE i.at > q.n0 AND i.at <= q.at
                        GROUP BY 1
                        """) {
                        let product = try row.decode("product_id", as: String.self)
                        days[nowDay].expirations &+= try row.decode("expirations", as: Int.self)
                        deltaSubs[nowDay] &-= try row.decode("end_subs", as: Int.self)
                        deltaEnts[nowDay] &-= weighted(weights, product, try row.decode("ends", as: Int.self))
                    }
                }
                for i in days.indices {
                    subs &+= deltaSubs[i]
                    ents &+= deltaEnts[i]
                    days[i].activeSubscriptions = subs
                    days[i].activeEntitlements = ents
                }
                // Trial conversions: a free trial ending that day, followed by a paid transaction of its subscription.
                for row in try c.query("""
                    WITH q AS NOT MATERIALIZED (SELECT \(projectId)::uuid AS project, \(env)::text AS env,
                        \(lo)::timestamptz AS lo, \(hi)::timestamptz AS hi, (\(lo) AT TIME ZONE 'UTC')::date AS lod)
                    SELECT ((t.expires_date AT TIME ZONE 'UTC')::date - q.lod)::int8 AS d, count(*) AS n
                    FROM (SELECT x.environment, x.expires_date, x.transaction_id, x.original_transaction_id,
                              x.purchase_date
                          FROM (SELECT o.environment, o.expires_date, o.transaction_id, o.original_transaction_id,
                                    o.purchase_date, o.n
                                FROM overview_trials o, q
                                WHERE o.project_id = q.project AND o.expires_date >= q.lo AND o.expires_date < q.hi
                                UNION ALL
                                SELECT e.environment, e.expires_date, e.transaction_id, e.original_transaction_id,
                                    e.purchase_date, e.n
                                FROM q, bouncer_overview_trials(\(unsafeSQL: Self.pending)) e
                                WHERE e.expires_date >= q.lo AND e.expires_date < q.hi) x
                          GROUP BY 1, 2, 3, 4, 5
                          HAVING sum(x.n) > 0) t, q
                    WHERE (q.env IS NULL OR t.environment = q.env)
                      AND EXISTS (SELECT 1 FROM transactions n
                                  WHERE n.project_id = q.project AND n.environment = t.environment
                                    AND n.original_transaction_id = t.original_transaction_id
                                    AND n.transaction_id <> t.transaction_id AND n.purchase_date >= t.purchase_date
                                    AND n.price_milli > 0)
                    GROUP BY 1
                    """) {
                    let i = try row.decode("d", as: Int.self)
                    guard days.indices.contains(i) else { continue }
                    days[i].trialConversions = try row.decode("n", as: Int.self)
                }
                // MRR at the end of the range (or now): each active subscription's price over its period, per 30
                // days; the per-day sums up to the instant's midnight, the instants after it.
                let at = min(hi, now)
                let atMidnight = Self.midnight(before: at)
                var mrr: [String: Int64] = [:]
                for row in try c.query("""
                    WITH q AS NOT MATERIALIZED (SELECT \(projectId)::uuid AS project, \(env)::text AS env,
                        (\(at) AT TIME ZONE 'UTC')::date AS m, \(atMidnight)::timestamptz AS n0,
                        \(at)::timestamptz AS at,
                        (\(atMidnight)::timestamptz >= (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day')
                            AT TIME ZONE 'UTC') AS kept)
                    SELECT x.currency, round(sum(x.mrr_milli))::int8 AS milli
                    FROM (SELECT d.currency, d.mrr_n, d.mrr_milli FROM (\(unsafeSQL: Self.days)) d, q
                          WHERE d.day <= q.m AND (d.day < q.m OR d.midnight) AND d.currency IS NOT NULL
                          UNION ALL
                          SELECT i.currency, i.mrr_n, i.mrr_milli FROM (\(unsafeSQL: Self.instants)) i, q
                          WHERE q.n0 < q.at AND i.at > q.n0 AND i.at <= q.at AND i.currency IS NOT NULL) x
                    GROUP BY 1
                    HAVING sum(x.mrr_n) > 0
                    """) {
                    mrr[try row.decode("currency", as: String.self)] = try row.decode("milli", as: Int64.self)
                }
                return (revenue, mrr)
            }
        }
        return OverviewMetrics(days: days, revenue: revenue, mrr: mrr)
    }
}
