import Domain
import Foundation
import Postgres
@testable import Storage
import XCTest

/// Issue 24, item 5: an admin change's audit entry is written in the change's own transaction (`AuditRows.write`),
/// so it commits or rolls back with it; a retried transaction writes it once; outside a request nothing is written.
final class AuditRowsTests: XCTestCase {
    struct Failure: Error {}

    func context(_ requestId: String) -> AuditContext {
        AuditContext(actor: AuditActor(type: "operator", id: nil, label: "operator"), action: "account.set_quotas",
                     accountId: Account.defaultId, projectId: nil, target: "account", requestId: requestId,
                     clientAddress: "192.0.2.1", now: { Fixtures.t0 })
    }

    func entries(_ s: TestStores, _ requestId: String) throws -> [String] {
        try s.rows("SELECT changes::text AS c FROM audit_log WHERE request_id = \(requestId)")
            .map { try $0.decode("c", as: String.self) }
    }

    func testAChangeThatFailsAfterWritingLeavesNoEntryAndARetryWritesOne() throws {
        let s = try TestStores.make(label: "auditrows")
        defer { s.close() }
        let request = context("req-fails")
        try AuditContext.$current.withValue(request) {
            // The change and its entry, then a failure before COMMIT: both roll back.
            XCTAssertThrowsError(try s.pool.transaction { connection in
                _ = try connection.execute("UPDATE accounts SET name = 'Changed' WHERE id = \(Account.defaultId)")
                try AuditRows.write(connection, changes: [AuditChange("name", .string("Default"), .string("Changed"))])
                throw Failure()
            }) { XCTAssertTrue($0 is Failure) }
            XCTAssertEqual(try entries(s, "req-fails"), [])
            XCTAssertEqual(try s.count("SELECT count(*) FROM accounts WHERE name = 'Changed'"), 0)

            // The retry (same request) writes the entry; a later write of the same request adds none.
            try s.pool.transaction { connection in
                try AuditRows.write(connection, changes: [AuditChange("name", .string("Default"), .string("Again"))])
            }
            try s.pool.transaction { connection in
                try AuditRows.write(connection, changes: [AuditChange("name", .string("x"), .string("y"))])
            }
        }
        XCTAssertEqual(try entries(s, "req-fails"), [#"{"name": ["Default", "Again"]}"#])
        XCTAssertTrue(request.isClaimed)
    }

    func testAStoreChangeCarriesItsEntryAndNothingOutsideARequest() throws {
        let s = try TestStores.make(label: "auditstore")
        defer { s.close() }
        let usage = PostgresUsageStore(pool: s.pool)
        let quotas = AccountQuotas(receiptsPerMonth: 1000, requestsPerSecond: nil)
        _ = try usage.setQuotas(accountId: Account.defaultId, quotas, now: Fixtures.t0)
        XCTAssertEqual(try s.count("SELECT count(*) FROM audit_log"), 0, "outside a request: no entry")
        try AuditContext.$current.withValue(context("req-quotas")) {
            _ = try usage.setQuotas(accountId: Account.defaultId,
                                    AccountQuotas(receiptsPerMonth: 5, requestsPerSecond: 2), now: Fixtures.t0)
        }
        XCTAssertEqual(try entries(s, "req-quotas"),
                       [#"{"receipts_per_month": [1000, 5], "requests_per_second": [null, 2]}"#])
        // An unknown account fails before any change: no entry.
        try AuditContext.$current.withValue(context("req-unknown")) {
            XCTAssertThrowsError(try usage.setQuotas(accountId: UUID(), quotas, now: Fixtures.t0))
        }
        XCTAssertEqual(try entries(s, "req-unknown"), [])
    }
}
