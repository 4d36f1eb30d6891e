import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// `bouncer_revenue_roll_up` computes a batch's rows in one statement (issue 22, session 18: the carry of paid service
/// as a running sum per purchase, started over by each run's first period); before, a PL/pgSQL loop walked each
/// purchase's transactions one by one, a statement per purchase and per row written. The loop is kept here as the
/// oracle (`loopDefinition`, the function as it was at `eb34806`): the same random histories (paid periods back to
/// back and after gaps on both sides of the 60-day rule, free trials, family-shared and unpriced periods, full,
/// prorated and reason-only refunds, overlapping periods, a one-time purchase; transactions arriving late and refunds
/// after), derived in the same batches, leave the same rows in every roll-up table under either definition, and again
/// after a replay of every purchase whole; and what the set statement derives batch by batch equals its rebuild from
/// nothing. The spans of MRR the roll-up drives (`bouncer_revenue_values_sync`) are computed for a batch in one
/// statement since session 19; the oracle keeps their per-purchase function too (`valuesSyncDefinition`).
final class RevenueRollUpOracleTests: XCTestCase {
    private func derive(_ s: TestStores, _ project: Project) throws {
        let store = PostgresWebhookStore(pool: s.pool)
        // Small batches: several purchases per batch, and a purchase's log rows split across batches.
        while try store.deriveChanges(projectId: project.id, limit: 5) > 0 {}
    }

    /// The roll-up tables: every table the roll-up writes.
    static let tables = ["revenue_transactions", "revenue_days", "revenue_runs", "revenue_run_days", "revenue_values",
                         "revenue_value_days", "revenue_cohorts", "revenue_ltv_purchases", "revenue_ltv_customers",
                         "revenue_ltv_days", "revenue_movement_days"]

    /// Every roll-up table's rows of `project`, as text without the project's id.
    private func rollUps(_ s: TestStores, _ project: Project) throws -> [String] {
        let union = Self.tables.map { "SELECT '\($0) ' || t::text AS r FROM \($0) t WHERE t.project_id = $1" }
            .joined(separator: " UNION ALL ")
        let id = project.id.uuidString.lowercased()
        return try s.rows("\(unsafeSQL: union.replacingOccurrences(of: "$1", with: "'\(id)'"))")
            .map { try $0.decode("r", as: String.self).replacingOccurrences(of: id, with: "P") }.sorted()
    }

    /// Appends one log row per purchase of `project` asking for all of it (0062's and 0078's backfill), then derives.
    private func replayWhole(_ s: TestStores, _ project: Project) throws {
        try s.askForRevenueWhole(project)
        try derive(s, project)
    }

    /// The transactions of `purchases` random purchases, in the batches they arrive in.
    private func arrivals(_ rng: inout SplitMix64, purchases: Int) -> [[(user: String, facts: TransactionFacts)]] {
        var arriving: [(user: String, facts: TransactionFacts)] = []
        var later: [(user: String, facts: TransactionFacts)] = []
        for k in 0..<purchases {
            let original = "o\(k)"
            let user = "u\(k % 7)"
            if k % 10 == 9 {
                // A one-time purchase: revenue without paid service.
                arriving.append((user, TransactionFacts(
                    transactionId: original, originalTransactionId: original, productId: "lifetime",
                    type: .nonConsumable, environment: .production, purchaseDate: Fixtures.at(Double(k)),
                    signedDate: Fixtures.at(Double(k)),
                    payloadJSON: "{\"transactionId\": \"\(original)\", \"price\": 49990, \"currency\": \"USD\"}")))
                continue
            }
            var day = Double(rng.next(20))
            for i in 0..<(1 + rng.next(10)) {
                let id = "\(original)-\(i)"
                let length = rng.next(4) == 0 ? 7.0 : 30.0
                let roll = rng.next(100)
                var price: Int? = [9990, 9990, 4990, 29990][rng.next(4)]
                var t = TransactionFacts(
                    transactionId: id, originalTransactionId: original, productId: "pro.monthly",
                    type: .autoRenewable, environment: .production, purchaseDate: Fixtures.at(day),
                    originalPurchaseDate: Fixtures.at(0), expiresDate: Fixtures.at(day + length),
                    ownershipType: .purchased, signedDate: Fixtures.at(day), payloadJSON: "")
                switch roll {
                case 0..<10:
                    t.offerDiscountType = .freeTrial
                    price = rng.next(2) == 0 ? 0 : nil
                case 10..<15: t.ownershipType = .familyShared
                case 15..<20: price = nil
                case 20..<28:
                    t.revocationDate = Fixtures.at(day + 3)
                    t.revocationReason = 1
                    t.revocationType = .refundFull
                case 28..<33:
                    t.revocationDate = Fixtures.at(day + 10)
                    t.revocationReason = 1
                    t.revocationType = .refundProrated
                    t.revocationPercentage = 50000
                case 33..<36:
                    t.revocationDate = Fixtures.at(day + 12)
                    t.revocationReason = 0
                default: break
                }
                t.payloadJSON = payload(t, price: price, currency: k % 3 == 0 ? "EUR" : "USD")
                // A quarter of the transactions arrive after later ones of their purchase.
                if rng.next(4) == 0 && !arriving.isEmpty {
                    arriving.insert((user, t), at: arriving.count - rng.next(min(arriving.count, 12)) - 1)
                } else {
                    arriving.append((user, t))
                }
                // Some are refunded after they were derived: in full, prorated, or with a reason only. (Apple changes
                // nothing else of a signed transaction: its price and ownership stay.)
                if rng.next(6) == 0 {
                    var changed = t
                    changed.signedDate = Fixtures.at(day + 20)
                    changed.revocationDate = Fixtures.at(day + 15)
                    changed.revocationReason = 1
                    switch rng.next(3) {
                    case 0: changed.revocationType = .refundFull
                    case 1:
                        changed.revocationType = .refundProrated
                        changed.revocationPercentage = 25000
                    default: changed.revocationType = nil
                    }
                    changed.payloadJSON = payload(changed, price: price, currency: k % 3 == 0 ? "EUR" : "USD")
                    later.append((user, changed))
                }
                // The next period: back to back mostly; after gaps around the 60-day rule; or overlapping (a
                // crossgrade inside the period; a week's period inside a month's, which the month outlasts: a change
                // to it, arriving late or refunded, makes the spans' sync walk back to the month).
                day += length + [0, 0, 0, 0, 0, 5, 59, 60, 61, 75, -10, -25][rng.next(12)]
            }
        }
        var batches: [[(user: String, facts: TransactionFacts)]] = []
        var rest = arriving[...]
        while !rest.isEmpty {
            let n = min(rest.count, 1 + rng.next(12))
            batches.append(Array(rest.prefix(n)))
            rest = rest.dropFirst(n)
        }
        return batches + later.map { [$0] }
    }

    /// The payload of `t`: the fields the store reads from it (price, currency, offer and refund), as Apple signs them.
    private func payload(_ t: TransactionFacts, price: Int?, currency: String) -> String {
        var fields = ["\"transactionId\": \"\(t.transactionId)\""]
        if let price { fields += ["\"price\": \(price)", "\"currency\": \"\(currency)\""] }
        if let offer = t.offerDiscountType { fields.append("\"offerDiscountType\": \"\(offer.rawValue)\"") }
        if let type = t.revocationType { fields.append("\"revocationType\": \"\(type.rawValue)\"") }
        if let percentage = t.revocationPercentage { fields.append("\"revocationPercentage\": \(percentage)") }
        if let revoked = t.revocationDate {
            fields.append("\"revocationDate\": \(Int(revoked.timeIntervalSince1970 * 1000))")
        }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    /// The rows of one side missing from the other, each marked with its side.
    private func difference(_ a: [String], _ b: [String]) -> [String] {
        let (x, y) = (Set(a), Set(b))
        return (a.filter { !y.contains($0) }.map { "set  " + $0 } + b.filter { !x.contains($0) }.map { "loop " + $0 })
            .sorted { $0.dropFirst(5) < $1.dropFirst(5) }
    }

    private func record(_ s: TestStores, _ project: Project, _ batches: [[(user: String, facts: TransactionFacts)]])
        throws {
        for batch in batches {
            for (user, t) in batch {
                _ = try s.purchases.recordTransactions([t], source: .receipt, userId: user, deviceId: nil,
                                                       project: project, now: Fixtures.at(0))
            }
            try derive(s, project)
        }
    }

    /// Revenue is a priced transaction or a free trial (0062): a period without a price and without a free-trial offer
    /// (a payload without `price`), with another offer or none, has no row. (The loop read that test's NULL as
    /// revenue and wrote a row of price 0; 0098 repairs those rows.)
    func testAnUnpricedPeriodIsNotRevenue() throws {
        let s = try TestStores.make(label: "rollupunpriced")
        defer { s.close() }
        let project = try s.makeProject()
        let priced = Fixtures.monthly("1000-0", original: "1000", start: 0, price: 9990)
        var unpriced = Fixtures.monthly("1000-1", original: "1000", start: 30)
        unpriced.payloadJSON = #"{"transactionId": "1000-1"}"#
        var offered = Fixtures.monthly("1000-2", original: "1000", start: 60)
        offered.payloadJSON = #"{"transactionId": "1000-2", "offerDiscountType": "PAY_AS_YOU_GO"}"#
        var trial = Fixtures.monthly("2000-0", original: "2000", start: 0)
        trial.payloadJSON = #"{"transactionId": "2000-0", "offerDiscountType": "FREE_TRIAL"}"#
        _ = try s.purchases.recordTransactions([priced, unpriced, offered, trial], source: .receipt, userId: "alice",
                                               deviceId: nil, project: project, now: Fixtures.at(0))
        try derive(s, project)
        XCTAssertEqual(try s.rows("""
            SELECT transaction_id || ' ' || price_milli || ' ' || trial || ' ' || paid_days_before AS r
            FROM revenue_transactions WHERE project_id = \(project.id) ORDER BY 1
            """).map { try $0.decode("r", as: String.self) }, ["1000-0 9990 false 0", "2000-0 0 true 0"])
    }

    /// A prorated refund keeps access (the stored transaction has no revocation date), so the log's fact of the
    /// transaction did not change when one arrived after the transaction: its revenue row kept no refund until a
    /// replay. The fact carries the refund's kind and share now; the row gets the refund when it arrives, and again
    /// when its share changes.
    func testAProratedRefundArrivingLaterIsRolledUp() throws {
        let s = try TestStores.make(label: "rollupprorated")
        defer { s.close() }
        let project = try s.makeProject()
        let t = Fixtures.monthly("1000-0", original: "1000", start: 0, price: 9990)
        let refund = { (percentage: Int64, signed: Double) throws -> String in
            var refunded = t
            refunded.signedDate = Fixtures.at(signed)
            refunded.revocationDate = Fixtures.at(10)
            refunded.revocationReason = 1
            refunded.revocationType = .refundProrated
            refunded.revocationPercentage = percentage
            refunded.payloadJSON = self.payload(refunded, price: 9990, currency: "USD")
            _ = try s.purchases.recordTransactions([refunded], source: .receipt, userId: "alice", deviceId: nil,
                                                   project: project, now: Fixtures.at(0))
            try self.derive(s, project)
            return try s.rows("""
                SELECT refund_milli_percent || ' ' || COALESCE(refund_date::text, '-') || ' ' || paid_ms AS r
                FROM revenue_transactions WHERE project_id = \(project.id)
                """).map { try $0.decode("r", as: String.self) }.joined()
        }
        _ = try s.purchases.recordTransactions([t], source: .receipt, userId: "alice", deviceId: nil,
                                               project: project, now: Fixtures.at(0))
        try derive(s, project)
        let refundDate = try s.rows("SELECT \(Fixtures.at(10))::timestamptz::text AS d")[0].decode("d", as: String.self)
        // Access kept: the period's paid service stays whole (30 days).
        XCTAssertEqual(try refund(50000, 11), "50000 \(refundDate) 2592000000")
        XCTAssertEqual(try refund(25000, 12), "25000 \(refundDate) 2592000000")
    }

    func testTheSetRollUpWritesWhatTheLoopWrote() throws {
        for seed: UInt64 in [1, 22, 333] {
            let s = try TestStores.make(label: "rollupset")
            defer { s.close() }
            let bySet = try s.makeProject(1)
            let byLoop = try s.makeProject(2)
            var rng = SplitMix64(state: seed)
            let batches = arrivals(&rng, purchases: 40)

            try record(s, bySet, batches)
            let setRows = try rollUps(s, bySet)
            try replayWhole(s, bySet)
            let setReplayed = try rollUps(s, bySet)
            // Derived batch by batch as the histories arrived, or rebuilt from nothing: the same rows.
            try s.pool.withConnection { c in
                for table in Self.tables {
                    _ = try c.execute("DELETE FROM \(unsafeSQL: table) WHERE project_id = \(bySet.id)")
                }
            }
            try replayWhole(s, bySet)
            XCTAssertEqual(difference(setRows, try rollUps(s, bySet)), [], "seed \(seed): rebuilt")
            // The histories reach every branch: carried service, runs started over, trials, refunds, rows removed.
            let shapes = try s.rows("""
                SELECT count(*) FILTER (WHERE paid_ms_before > 0) AS carried,
                    count(*) FILTER (WHERE paid_ms_before = 0 AND paid_ms > 0 AND purchase_date > (
                        SELECT min(w.purchase_date) FROM revenue_transactions w WHERE w.project_id = v.project_id
                          AND w.original_transaction_id = v.original_transaction_id AND w.paid_ms > 0)) AS restarted,
                    count(*) FILTER (WHERE trial) AS trials,
                    count(*) FILTER (WHERE refund_milli_percent = 100000) AS refunded,
                    count(*) FILTER (WHERE refund_milli_percent BETWEEN 1 AND 99999) AS prorated, count(*) AS rows,
                    (SELECT count(*) FROM transactions x WHERE x.project_id = \(bySet.id)) - count(*) AS not_revenue
                FROM revenue_transactions v WHERE v.project_id = \(bySet.id)
                """)[0]
            for column in ["carried", "restarted", "trials", "refunded", "prorated", "not_revenue"] {
                XCTAssertGreaterThan(try shapes.decode(column, as: Int.self), 0, "seed \(seed): \(column)")
            }
            XCTAssertGreaterThan(try shapes.decode("rows", as: Int.self), 100, "seed \(seed)")

            try s.pool.withConnection { c in
                _ = try c.execute("\(unsafeSQL: Self.valuesSyncDefinition)")
                _ = try c.execute("\(unsafeSQL: Self.loopDefinition)")
            }
            try record(s, byLoop, batches)
            let loopRows = try rollUps(s, byLoop)
            XCTAssertEqual(setRows.count, loopRows.count, "seed \(seed)")
            XCTAssertEqual(difference(setRows, loopRows), [], "seed \(seed)")
            try replayWhole(s, byLoop)
            XCTAssertEqual(difference(setReplayed, try rollUps(s, byLoop)), [], "seed \(seed): replayed whole")
        }
    }

    /// `schema/functions/bouncer_revenue_roll_up.sql` at `eb34806`: the loop, a statement per purchase and per row;
    /// one change, its test of revenue made NULL-safe (`testAnUnpricedPeriodIsNotRevenue`).
    static let loopDefinition = #"""
        CREATE OR REPLACE FUNCTION bouncer_revenue_roll_up(p_project_id uuid, p_changes jsonb) RETURNS void
        LANGUAGE plpgsql VOLATILE SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
        DECLARE
            g record;
            t record;
            v_new revenue_transactions;
            v_carry bigint;
            v_ended timestamptz;
            v_trial boolean;
            v_refunded int;
            v_paid_end timestamptz;
            v_ms bigint;
            v_changed boolean;
            v_first boolean;
            v_moved revenue_transactions[] := '{}';
            v_signs int[] := '{}';
            v_envs text[] := '{}';
            v_ids text[] := '{}';
            v_froms timestamptz[] := '{}';
            v_value_moves revenue_value_days[] := '{}';
            v_value_move revenue_value_days;
            v_movement_moves revenue_movement_days[] := '{}';
            v_movement_move revenue_movement_days;
            v_sync record;
        BEGIN
            IF p_changes IS NULL THEN
                RETURN;
            END IF;
            FOR g IN
                SELECT e.environment, e.original_transaction_id AS original_id, min(CASE
                    WHEN e.tx ? 'revenue' THEN '-infinity'::timestamptz
                    WHEN jsonb_typeof(e.tx -> 'old') = 'object' OR jsonb_typeof(e.tx -> 'new') = 'object'
                    THEN LEAST(COALESCE((e.tx -> 'old' ->> 'purchase_date')::timestamptz, 'infinity'),
                               COALESCE((e.tx -> 'new' ->> 'purchase_date')::timestamptz, 'infinity')) END) AS d0
                FROM jsonb_to_recordset(p_changes) e (environment text, original_transaction_id text, tx jsonb)
                WHERE e.original_transaction_id IS NOT NULL
                GROUP BY 1, 2
            LOOP
                CONTINUE WHEN g.d0 IS NULL;
                v_changed := false;
                v_first := true;
                FOR t IN
                    SELECT b.carry, b.ended_max AS ended, x.environment, x.transaction_id, x.original_transaction_id,
                        x.product_id, x.type, x.price_milli, x.currency, x.offer_discount_type, x.ownership_type,
                        x.is_renewal, x.purchase_date, x.expires_date,
                        x.revocation_date, x.revocation_type, x.revocation_percentage,
                        x.payload ->> 'storefront' AS storefront,
                        CASE WHEN jsonb_typeof(x.payload -> 'revocationDate') = 'number'
                            THEN to_timestamp((x.payload ->> 'revocationDate')::numeric / 1000) END AS payload_revoked,
                        v.project_id IS NOT NULL AS had, v AS old
                    FROM transactions x
                    LEFT JOIN revenue_transactions v ON v.project_id = p_project_id AND v.environment = x.environment
                        AND v.transaction_id = x.transaction_id
                    LEFT JOIN (SELECT w.paid_ms_before + w.paid_ms AS carry, w.ended_max FROM revenue_transactions w
                        WHERE w.project_id = p_project_id AND w.original_transaction_id = g.original_id
                          AND w.purchase_date < g.d0 AND w.environment = g.environment
                        ORDER BY w.purchase_date DESC LIMIT 1) b ON true
                    WHERE x.project_id = p_project_id AND x.environment = g.environment
                      AND x.original_transaction_id = g.original_id AND x.purchase_date >= g.d0
                    ORDER BY x.purchase_date, x.transaction_id
                LOOP
                    IF v_first THEN
                        v_carry := COALESCE(t.carry, 0);
                        v_ended := t.ended;
                        v_first := false;
                    END IF;
                    IF NOT ((t.price_milli IS NOT NULL OR t.offer_discount_type IS NOT DISTINCT FROM 'FREE_TRIAL')
                            AND t.ownership_type IS DISTINCT FROM 'FAMILY_SHARED') THEN
                        IF t.had THEN
                            DELETE FROM revenue_transactions v WHERE v.project_id = p_project_id
                              AND v.environment = g.environment AND v.transaction_id = t.transaction_id;
                            v_moved := v_moved || t.old;
                            v_signs := v_signs || -1;
                            v_changed := true;
                        END IF;
                        CONTINUE;
                    END IF;
                    v_trial := COALESCE(t.offer_discount_type = 'FREE_TRIAL', false);
                    v_refunded := bouncer_money_refund_share(COALESCE(t.revocation_date,
                        CASE WHEN t.revocation_type IS NOT NULL THEN t.purchase_date END), t.revocation_type,
                        t.revocation_percentage);
                    v_paid_end := CASE WHEN t.type = 'Auto-Renewable Subscription' AND NOT v_trial
                            AND COALESCE(t.price_milli, 0) > 0 AND t.expires_date IS NOT NULL AND v_refunded < 100000
                        THEN GREATEST(LEAST(t.expires_date, COALESCE(t.revocation_date, t.expires_date)),
                            t.purchase_date) END;
                    IF v_paid_end IS NOT NULL
                            AND (v_ended IS NULL OR t.purchase_date > v_ended + interval '60 days') THEN
                        v_carry := 0;
                    END IF;
                    v_ms := COALESCE(round(extract(epoch FROM v_paid_end - t.purchase_date) * 1000)::bigint, 0);
                    IF v_paid_end IS NOT NULL THEN
                        v_ended := GREATEST(v_ended, v_paid_end);
                    END IF;
                    v_new := ROW(p_project_id, t.environment, t.transaction_id, t.original_transaction_id, t.product_id,
                        t.type, t.storefront, COALESCE(t.currency, ''), COALESCE(t.price_milli, 0), v_trial,
                        COALESCE(t.is_renewal, false), t.purchase_date, t.expires_date, t.revocation_date,
                        CASE WHEN v_refunded > 0 THEN COALESCE(t.revocation_date, t.payload_revoked) END,
                        v_refunded, (v_carry / 86400000)::int, v_carry, v_ms, v_ended,
                        COALESCE((t.old).converted, false))::revenue_transactions;
                    v_carry := v_carry + v_ms;
                    CONTINUE WHEN t.old IS NOT DISTINCT FROM v_new;
                    INSERT INTO revenue_transactions AS v SELECT v_new.*
                    ON CONFLICT (project_id, environment, transaction_id) DO UPDATE SET
                        original_transaction_id = EXCLUDED.original_transaction_id, product_id = EXCLUDED.product_id,
                        type = EXCLUDED.type, storefront = EXCLUDED.storefront, currency = EXCLUDED.currency,
                        price_milli = EXCLUDED.price_milli, trial = EXCLUDED.trial, renewal = EXCLUDED.renewal,
                        purchase_date = EXCLUDED.purchase_date, expires_date = EXCLUDED.expires_date,
                        revocation_date = EXCLUDED.revocation_date, refund_date = EXCLUDED.refund_date,
                        refund_milli_percent = EXCLUDED.refund_milli_percent,
                        paid_days_before = EXCLUDED.paid_days_before, paid_ms_before = EXCLUDED.paid_ms_before,
                        paid_ms = EXCLUDED.paid_ms, ended_max = EXCLUDED.ended_max;
                    IF t.had THEN
                        v_moved := v_moved || t.old;
                        v_signs := v_signs || -1;
                    END IF;
                    v_moved := v_moved || v_new;
                    v_signs := v_signs || 1;
                    v_changed := true;
                END LOOP;
                IF v_changed OR g.d0 = '-infinity' THEN
                    v_envs := v_envs || g.environment;
                    v_ids := v_ids || g.original_id;
                    v_froms := v_froms || g.d0;
                    SELECT * INTO v_sync FROM bouncer_revenue_values_sync(p_project_id, g.environment, g.original_id,
                        g.d0);
                    FOREACH v_value_move IN ARRAY v_sync.value_days LOOP
                        v_value_moves := v_value_moves || v_value_move;
                    END LOOP;
                    FOREACH v_movement_move IN ARRAY v_sync.movement_days LOOP
                        v_movement_moves := v_movement_moves || v_movement_move;
                    END LOOP;
                END IF;
            END LOOP;
            IF cardinality(v_ids) = 0 THEN
                RETURN;
            END IF;
            PERFORM bouncer_revenue_value_days_move(p_project_id, v_value_moves);
            PERFORM bouncer_revenue_movement_days_move(p_project_id, v_movement_moves);
            PERFORM bouncer_revenue_cohort_sync(p_project_id, v_envs, v_ids, v_froms);
            PERFORM bouncer_revenue_days_move_batch(p_project_id, v_moved, v_signs);
            PERFORM bouncer_revenue_ltv_move(p_project_id, v_moved, v_signs);
            UPDATE revenue_transactions v SET converted = NOT v.converted
            FROM unnest(v_envs, v_ids) AS k (env, original_id)
            WHERE v.project_id = p_project_id AND v.original_transaction_id = k.original_id AND v.environment = k.env
              AND v.trial
              AND v.converted IS DISTINCT FROM EXISTS (SELECT 1 FROM revenue_transactions w
                  WHERE w.project_id = p_project_id AND w.original_transaction_id = k.original_id
                    AND w.environment = k.env AND NOT w.trial AND w.price_milli > 0
                    AND w.purchase_date >= v.purchase_date);
            PERFORM bouncer_revenue_runs_sync(p_project_id, v_envs, v_ids, v_froms);
        END;
        $$
        """#

    /// `schema/functions/bouncer_revenue_values_sync.sql` at `39c3ecc`: the spans of one purchase per call, six
    /// statements each, which `loopDefinition` calls for each purchase (its argument list, (uuid, text, text,
    /// timestamptz), an overload of the batch's: 0099 drops it from every database, this test installs it again).
    static let valuesSyncDefinition = #"""
        CREATE OR REPLACE FUNCTION bouncer_revenue_values_sync(p_project_id uuid, p_environment text, p_original_id text,
            p_from timestamptz, OUT value_days revenue_value_days[], OUT movement_days revenue_movement_days[])
        LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            c refcursor;
            r record;
            v_ids text[] := '{}';
            v_stop timestamptz;
            v_keep revenue_values;
            v_since timestamptz;
            v_old revenue_values[];
            v_before revenue_values[];
            v_new revenue_values[];
            v_gone timestamptz[];
        BEGIN
            -- The spans that reach p_from; the first may have begun before it (kept up to p_from), and its paid_since holds (the
            -- purchase's first payment came before that span began, so no change from p_from on moves it).
            -- (And those that ended in the day before it: mrr_movement's first day may begin under one, v_before.)
            -- (And, from the same rows, paid_since of the latest span begun before p_from: a span that ended by p_from.)
            SELECT array_agg(s ORDER BY s.starts_at) FILTER (WHERE s.ends_at >= p_from),
                array_agg(s) FILTER (WHERE s.ends_at < p_from AND s.ends_at > p_from - interval '24 hours'),
                (array_agg(s.paid_since ORDER BY s.starts_at DESC) FILTER (WHERE s.starts_at < p_from))[1]
            INTO v_old, v_before, v_since FROM revenue_values s
            WHERE s.project_id = p_project_id AND s.environment = p_environment AND s.original_transaction_id = p_original_id;
            IF (v_old[1]).starts_at < p_from THEN
                v_keep := v_old[1];
                v_since := v_keep.paid_since;
            END IF;
            IF v_since IS NULL THEN
                SELECT v.purchase_date INTO v_since FROM revenue_transactions v
                WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
                  AND v.environment = p_environment AND NOT v.trial AND v.price_milli > 0
                ORDER BY v.original_transaction_id, v.purchase_date LIMIT 1;
            END IF;
            -- Earlier periods still running after p_from: only when the span before it runs past it, or ends at p_from where
            -- another begins (a later period there may hide an earlier one): the old spans cover every period, up to the same
            -- 400-day bound. A renewal that begins as the last period ends reads none.
            IF v_keep.ends_at > p_from OR (v_keep.ends_at = p_from AND (v_old[2]).starts_at = p_from) THEN
                OPEN c FOR SELECT v.transaction_id, v.purchase_date, v.ended_max,
                        v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
                            AND v.expires_date IS NOT NULL AND LEAST(v.expires_date,
                                COALESCE(v.revocation_date, 'infinity'::timestamptz),
                                v.purchase_date + interval '400 days') > p_from AS reaches
                    FROM revenue_transactions v
                    WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
                      AND v.purchase_date < p_from AND v.purchase_date > p_from - interval '400 days'
                      AND v.environment = p_environment
                    ORDER BY v.original_transaction_id DESC, v.purchase_date DESC;
                LOOP
                    FETCH c INTO r;
                    EXIT WHEN NOT FOUND OR r.purchase_date < v_stop;
                    IF r.reaches THEN
                        v_ids := v_ids || r.transaction_id;
                    END IF;
                    -- Every row up to this one ended by p_from (rows of its purchase date still read: their order is a tie).
                    IF v_stop IS NULL AND (r.ended_max IS NULL OR r.ended_max <= p_from) THEN
                        v_stop := r.purchase_date;
                    END IF;
                END LOOP;
                CLOSE c;
                v_ids := v_ids || ARRAY(SELECT v.transaction_id FROM revenue_transactions v
                    WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
                      AND v.environment = p_environment AND v.refund_milli_percent >= 100000
                      AND v.purchase_date < p_from AND v.purchase_date > p_from - interval '400 days'
                      AND v.type = 'Auto-Renewable Subscription' AND NOT v.trial AND v.price_milli > 0
                      AND v.expires_date IS NOT NULL
                      AND LEAST(v.expires_date, COALESCE(v.revocation_date, 'infinity'::timestamptz)) > p_from);
            END IF;
            -- The spans from p_from on: between consecutive period boundaries, the latest period covering the piece's start;
            -- pieces of one value that touch joined, and the first joined to the kept span when it continues its value.
            -- (Two reads, each by its own index: the rows from p_from on by the purchase's, the earlier ones by their keys.)
            WITH rt AS (SELECT v.* FROM revenue_transactions v
                    WHERE v.project_id = p_project_id AND v.original_transaction_id = p_original_id
                      AND v.purchase_date >= p_from AND v.environment = p_environment
                    UNION ALL
                    SELECT v.* FROM revenue_transactions v
                    WHERE cardinality(v_ids) > 0 AND v.project_id = p_project_id AND v.environment = p_environment
                      AND v.transaction_id = ANY (v_ids)),
                p AS (SELECT rt.transaction_id AS id, rt.purchase_date AS s, LEAST(rt.expires_date,
                        COALESCE(rt.revocation_date, 'infinity'::timestamptz), rt.purchase_date + interval '400 days') AS e,
                        rt.currency, bouncer_money_monthly(rt.price_milli, rt.purchase_date, rt.expires_date) AS m
                    FROM rt
                    WHERE rt.type = 'Auto-Renewable Subscription' AND NOT rt.trial AND rt.price_milli > 0
                      AND rt.expires_date IS NOT NULL),
                x AS (SELECT GREATEST(p.s, p_from) AS x FROM p WHERE p.e > GREATEST(p.s, p_from)
                    UNION SELECT p.e FROM p WHERE p.e > GREATEST(p.s, p_from)),
                k AS (SELECT x.x AS a, lead(x.x) OVER (ORDER BY x.x) AS z FROM x),
                top AS (SELECT k.a, k.z, t.currency, t.m FROM k CROSS JOIN LATERAL (SELECT p.currency, p.m FROM p
                        WHERE p.s <= k.a AND p.e > k.a ORDER BY p.s DESC, p.id DESC LIMIT 1) t
                    WHERE k.z IS NOT NULL
                    UNION ALL
                    SELECT v_keep.starts_at, p_from, v_keep.currency, v_keep.monthly_milli WHERE v_keep.starts_at IS NOT NULL),
                b AS (SELECT top.*, CASE WHEN top.a = lag(top.z) OVER w AND top.currency = lag(top.currency) OVER w
                            AND top.m = lag(top.m) OVER w THEN 0 ELSE 1 END AS brk
                    FROM top WINDOW w AS (ORDER BY top.a)),
                g AS (SELECT b.*, sum(b.brk) OVER (ORDER BY b.a) AS grp FROM b)
            SELECT array_agg(ROW(p_project_id, p_environment, p_original_id, n.s, n.e, n.currency, n.m, v_since)::revenue_values
                    ORDER BY n.s)
            INTO v_new
            FROM (SELECT min(g.a) AS s, max(g.z) AS e, g.currency, g.m FROM g GROUP BY g.grp, g.currency, g.m) n;
            value_days := '{}';
            movement_days := '{}';
            IF v_old IS NOT DISTINCT FROM v_new THEN
                RETURN;
            END IF;
            -- A span that keeps its start is updated in place (a renewal moves its end), one that begins elsewhere written,
            -- one whose start is gone removed.
            v_gone := ARRAY(SELECT o.starts_at FROM unnest(v_old) o
                WHERE o.starts_at <> ALL (ARRAY(SELECT n.starts_at FROM unnest(v_new) n)));
            IF cardinality(v_gone) > 0 THEN
                DELETE FROM revenue_values s WHERE s.project_id = p_project_id AND s.environment = p_environment
                  AND s.original_transaction_id = p_original_id AND s.starts_at = ANY (v_gone);
            END IF;
            INSERT INTO revenue_values AS s SELECT n.* FROM unnest(v_new) n WHERE NOT (n = ANY (COALESCE(v_old, '{}')))
            ON CONFLICT (project_id, environment, original_transaction_id, starts_at) DO UPDATE SET ends_at = EXCLUDED.ends_at,
                currency = EXCLUDED.currency, monthly_milli = EXCLUDED.monthly_milli, paid_since = EXCLUDED.paid_since;
            -- mrr_movement's days (schema/0087), from the spans before and after.
            movement_days := bouncer_revenue_movement_moves(p_project_id, p_environment, p_from, v_before, v_old, v_new);
            -- Each span counts +1 on the day that closes its start, −1 on the day that closes its end; a removed one the
            -- opposite.
            value_days := ARRAY(SELECT ROW(p_project_id, p_environment, x.day, x.currency, x.m, sum(x.n))::revenue_value_days
                FROM (SELECT ((o.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1 AS day, o.currency,
                        o.monthly_milli AS m, -1 AS n FROM unnest(v_old) o
                    UNION ALL SELECT ((o.ends_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, o.currency,
                        o.monthly_milli, 1 FROM unnest(v_old) o
                    UNION ALL SELECT ((n.starts_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, n.currency,
                        n.monthly_milli, 1 FROM unnest(v_new) n
                    UNION ALL SELECT ((n.ends_at - interval '1 microsecond') AT TIME ZONE 'UTC')::date + 1, n.currency,
                        n.monthly_milli, -1 FROM unnest(v_new) n) x
                GROUP BY x.day, x.currency, x.m HAVING sum(x.n) <> 0);
        END;
        $$
        """#
}
