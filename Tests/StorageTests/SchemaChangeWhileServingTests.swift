import Domain
import Foundation
import Postgres
import Storage
import TestSupport
import XCTest

/// A migration applied while `bouncer serve` runs (a rolling deploy, `bouncer migrate` beside live servers) adds
/// columns under sessions that have already prepared the write path's statements, and re-creates the functions they
/// call. A statement reading the returned purchase as `(r.purchase).*` then changes its result, which PostgreSQL
/// refuses for a prepared statement (SQLSTATE 0A000, "cached plan must not change result type"): before issue 25 every
/// cached write failed so until the session ended (0055 added `eligible_win_back_offer_ids` to `purchases`). The
/// session now prepares such a statement anew and runs it: the next receipt and renewal are recorded as before.
final class SchemaChangeWhileServingTests: XCTestCase {
    func testWritesPreparedBeforeAColumnIsAddedToPurchasesStillRun() throws {
        let s = try TestStores.make(label: "schemachange", poolSize: 1)
        defer { s.close() }
        let project = try s.makeProject()
        _ = try s.purchases.recordTransaction(Fixtures.monthly("1000", start: 0), userId: "u1", deviceId: nil,
                                              project: project, now: Fixtures.t0)
        _ = try s.purchases.recordTransactions([Fixtures.monthly("2000", original: "2000", start: 0), Fixtures.monthly("3000", original: "3000", start: 0)],
                                               source: .receipt, userId: "u1", deviceId: nil, project: project,
                                               now: Fixtures.t0)
        _ = try s.purchases.recordRenewal(Fixtures.renewal(signed: 1), project: project, now: Fixtures.t0)
        let prepared = try s.pool.withConnection { $0.preparedStatementCount }
        // What a later migration does, on the serving session itself (the pool has one): a column added, and the
        // write functions created again (the migrator re-applies a function whose file changed), which invalidates
        // the plans of the statements calling them.
        try s.pool.withConnection {
            try $0.executeScript(unsafeSQL: """
                ALTER TABLE purchases ADD COLUMN later_fact text;
                DO $$ BEGIN
                    EXECUTE pg_get_functiondef('bouncer_record_transaction'::regproc);
                    EXECUTE pg_get_functiondef('bouncer_record_renewal'::regproc);
                END $$;
                """)
        }

        let again = try s.purchases.recordTransaction(Fixtures.monthly("1001", original: "1000", start: 30),
                                                      userId: "u1", deviceId: nil, project: project, now: Fixtures.t0)
        XCTAssertEqual(again.purchase.latestTransactionId, "1001")
        let batch = try s.purchases.recordTransactions(
            [Fixtures.monthly("2001", original: "2000", start: 30), Fixtures.monthly("3001", original: "3000", start: 30)],
            source: .receipt, userId: "u1", deviceId: nil, project: project, now: Fixtures.t0)
        XCTAssertEqual(batch.map(\.purchase.latestTransactionId), ["2001", "3001"])
        _ = try s.purchases.recordRenewal(Fixtures.renewal(signed: 2, autoRenew: 0), project: project, now: Fixtures.t0)
        // Each stale statement was replaced by its new preparation: the session caches as many as before.
        XCTAssertEqual(try s.pool.withConnection { $0.preparedStatementCount }, prepared)
        XCTAssertEqual(try s.count("""
            SELECT count(*) FROM purchases WHERE project_id = \(project.id) AND auto_renew_status = 0
              AND original_transaction_id = '1000' AND latest_transaction_id = '1001'
            """), 1)
    }
}
