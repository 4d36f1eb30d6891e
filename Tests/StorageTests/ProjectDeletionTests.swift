import Domain
import Foundation
import Postgres
import Storage
import Synchronization
import TestSupport
import XCTest

/// The receipt's tables and the rollups derived from its log have no foreign key to `projects` (schema/0075): a
/// receipt takes no lock on the project's row, and the project's deletion (`bouncer_project_purge`, schema/0080) removes their rows.
final class ProjectDeletionTests: XCTestCase {
    /// The tables 0075 (and 0076) took the foreign key from: written by `bouncer_record_transaction` and the
    /// deriver's roll-ups.
    static let unkeyed = ["overview_days", "overview_instants", "overview_trials", "purchases", "revenue_cohorts",
                          "revenue_days", "revenue_ltv_customers", "revenue_ltv_days", "revenue_ltv_purchases",
                          "revenue_movement_days", "revenue_run_days", "revenue_runs", "revenue_transactions",
                          "revenue_value_days", "revenue_values", "transaction_jws", "transactions"]

    func testTheReceiptsTablesHaveNoForeignKeyToProjectsAndEveryOtherTenantTableKeepsIt() throws {
        let s = try TestStores.make(label: "projectfks")
        defer { s.close() }
        let keyed = try s.rows("""
            SELECT con.conrelid::regclass::text AS tbl FROM pg_constraint con
            WHERE con.contype = 'f' AND con.confrelid = 'projects'::regclass
            """).map { try $0.decode("tbl", as: String.self) }.sorted()
        for table in Self.unkeyed { XCTAssertFalse(keyed.contains(table), table) }
        // The other tables with a project_id keep theirs, or reach projects through a key that does (subscriptions
        // through purchases, …): the list is exact, so a new tenant table without a key fails here first.
        XCTAssertEqual(keyed, [
            "app_store_credentials", "app_transactions", "grants", "mass_renewal_extensions", "notifications",
            "ownership_events", "pending_renewals", "products", "project_keys", "reconcile_cursors",
            "reconcile_refund_revisions", "reconcile_runs", "renewal_extensions", "retention_decisions",
            "retention_rules", "revenue_settings", "webhook_endpoints", "webhook_entitlement_states", "webhook_events",
            "webhook_purchase_states",
        ])
    }

    /// Every table with a `project_id` column holds none of a deleted project's rows (its log, its receipts'
    /// evidence and its rollups included), and the other project's rows are untouched.
    func testADeletedProjectLeavesNoRowBehind() throws {
        let s = try TestStores.make(label: "projectgone")
        defer { s.close() }
        let doomed = try s.makeProject(1)
        let kept = try s.makeProject(2)
        let webhooks = PostgresWebhookStore(pool: s.pool)
        for project in [doomed, kept] {
            _ = try s.projects.setProduct(
                projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
            // Priced: revenue is a priced transaction or a free trial.
            var first = Fixtures.monthly("2000", start: 0, price: 9990)
            first.signedJWS = "aGVhZGVy.cGF5bG9hZA.c2ln"
            _ = try s.purchases.recordTransaction(first, userId: "alice", deviceId: nil, project: project, now: Fixtures.at(0))
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly("2001", start: 30), userId: "alice", deviceId: nil, project: project, now: Fixtures.at(30))
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly("3000", original: "3000", start: 1, revokedAt: 2), userId: "bob", deviceId: nil,
                project: project, now: Fixtures.at(2))
            _ = try webhooks.deriveChanges(projectId: project.id, limit: 100)
            // One change left in the log.
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly("2002", start: 60), userId: "alice", deviceId: nil, project: project, now: Fixtures.at(60))
        }
        let tables = try s.rows("""
            SELECT c.table_name::text AS tbl FROM information_schema.columns c
            JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
            WHERE c.table_schema = 'public' AND c.column_name = 'project_id' AND t.table_type = 'BASE TABLE'
            ORDER BY 1
            """).map { try $0.decode("tbl", as: String.self) }
        func counts(_ project: Project) throws -> [String: Int] {
            var counts: [String: Int] = [:]
            for table in tables {
                counts[table] = try s.count(Query(unsafeSQL: "SELECT count(*) FROM \(table) WHERE project_id = '\(project.id)'"))
            }
            return counts
        }
        let before = try counts(doomed)
        for table in ["transactions", "transaction_jws", "purchases", "subscriptions", "purchase_changes",
                      "overview_days", "revenue_transactions"] {
            XCTAssertGreaterThan(before[table] ?? 0, 0, "\(table): the test writes rows there")
        }
        let keptBefore = try counts(kept)

        XCTAssertTrue(try s.projects.deleteProject(id: doomed.id))

        XCTAssertEqual(try counts(doomed).filter { $0.value != 0 }, [:])
        XCTAssertEqual(try counts(kept), keptBefore)
        XCTAssertEqual(try s.count("SELECT count(*) FROM projects WHERE id = \(kept.id)"), 1)
    }

    /// A receipt in flight holds no lock on the project's row (concurrent receipts made a MultiXact of it), and the
    /// project's deletion waits for its commit, then deletes what it wrote.
    func testAReceiptInFlightLocksNoProjectRowAndTheDeletionWaitsForIt() throws {
        let s = try TestStores.make(label: "projectinflight", poolSize: 4)
        defer { s.close() }
        let p = try s.makeProject()
        let recorded = DispatchSemaphore(value: 0)
        let checked = DispatchSemaphore(value: 0)
        let committed = Atomic<Bool>(false)
        let pool = s.pool
        let outcomes = onThreads(2) { i -> String? in
            do {
                if i == 0 {
                    try pool.transaction { c in
                        _ = try c.query("""
                            SELECT 1 FROM bouncer_record_transaction(\(p.id), '2000', '1000', 'pro.monthly',
                                'Auto-Renewable Subscription', 'Production', 'com.example.app1', \(Fixtures.at(0)),
                                \(Fixtures.at(0)), \(Fixtures.at(30)), NULL::timestamptz, NULL::int, NULL::uuid,
                                'PURCHASED', \(Fixtures.at(0)), '{}'::jsonb, 'alice', NULL::text, 'transfer',
                                \(Fixtures.at(0)))
                            """)
                        recorded.signal()
                        checked.wait()
                        usleep(300_000)  // the deletion is waiting by now
                        committed.store(true, ordering: .releasing)
                    }
                    return nil
                }
                recorded.wait()
                // While the receipt's transaction is open, its project's row is not locked.
                let free = try pool.transaction { c in
                    try c.query("SELECT 1 FROM projects WHERE id = \(p.id) FOR UPDATE NOWAIT").count
                }
                checked.signal()
                guard free == 1 else { return "project row not found" }
                guard try s.projects.deleteProject(id: p.id) else { return "not deleted" }
                return committed.load(ordering: .acquiring) ? nil : "the deletion did not wait for the receipt"
            } catch {
                return String(reflecting: error)
            }
        }
        XCTAssertEqual(outcomes.compactMap { $0 ?? nil }, [])
        for table in Self.unkeyed + ["subscriptions", "purchase_changes"] {
            XCTAssertEqual(try s.count(Query(unsafeSQL: "SELECT count(*) FROM \(table)")), 0, table)
        }
    }

    /// A receipt that comes while the project is being deleted waits, then finds no project: `.projectNotFound`,
    /// nothing written.
    func testAReceiptDuringTheDeletionIsProjectNotFoundAndWritesNothing() throws {
        let s = try TestStores.make(label: "projectdeleting", poolSize: 4)
        defer { s.close() }
        let p = try s.makeProject()
        let deleting = DispatchSemaphore(value: 0)
        let pool = s.pool
        let purchases = s.purchases
        let outcomes = onThreads(2) { i -> String? in
            if i == 0 {
                do {
                    try pool.transaction { c in
                        // deleteProject's two statements, with the receipt let in between them and the commit.
                        _ = try c.execute("SELECT bouncer_project_purge(\(p.id))")
                        _ = try c.execute("DELETE FROM projects WHERE id = \(p.id)")
                        deleting.signal()
                        usleep(300_000)  // the receipt is waiting by now
                    }
                    return nil
                } catch {
                    return String(reflecting: error)
                }
            }
            deleting.wait()
            do {
                _ = try purchases.recordTransaction(
                    Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: nil, project: p, now: Fixtures.t0)
                return "recorded for a deleted project"
            } catch let error as DomainError where error.code == .projectNotFound {
                return nil
            } catch {
                return String(reflecting: error)
            }
        }
        XCTAssertEqual(outcomes.compactMap { $0 ?? nil }, [])
        for table in Self.unkeyed + ["subscriptions", "purchase_changes"] {
            XCTAssertEqual(try s.count(Query(unsafeSQL: "SELECT count(*) FROM \(table)")), 0, table)
        }
    }
}
