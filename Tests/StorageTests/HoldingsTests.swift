import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// `PostgresPurchaseStore.holdings`, the statement behind an uncached `GET /v1/subscriptions`: each set in the order
/// and with the values the API shows, in one round trip.
final class HoldingsTests: XCTestCase {
    private var s: TestStores!
    private var project: Project!

    override func setUpWithError() throws {
        s = try TestStores.make(label: "holdings", poolSize: 1)
        project = try s.makeProject()
        _ = try s.projects.setProduct(
            projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
    }

    override func tearDown() {
        s?.close()
    }

    /// Purchases, app transactions and grants each sorted as before (byte order of ids, then environment; grants by
    /// creation then id), instants rounded or floored to the millisecond as before, an empty version read as none,
    /// revoked, expired and other users' grants left out.
    func testEachSetInItsOrderWithItsValues() throws {
        for (id, environment) in [("b2", StoreEnvironment.production), ("a1", .sandbox), ("a1", .production),
                                  ("Z9", .production)] {
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly(id + environment.rawValue, original: id, start: 0, environment: environment),
                userId: "u", deviceId: nil, project: project, now: Fixtures.t0)
        }
        _ = try s.rows("""
            INSERT INTO app_transactions (project_id, environment, app_transaction_id, bundle_id,
                original_application_version, original_purchase_date, receipt_creation_date, user_id,
                consent_rescinded_at, payload, first_seen_at, last_seen_at)
            VALUES (\(project.id), 'Sandbox', 'a1', 'b', '2.0', '2023-11-14 22:13:20.1236+00', now(), 'u', NULL, '{}', now(), now()),
                   (\(project.id), 'Production', 'a1', 'b', '', NULL, now(), 'u', '2023-11-15 00:00:00.0004+00', '{}', now(), now()),
                   (\(project.id), 'Production', 'Z1', 'b', NULL, NULL, now(), 'u', NULL, '{}', now(), now()),
                   (\(project.id), 'Production', 'other', 'b', '1.0', NULL, now(), 'v', NULL, '{}', now(), now())
            """)
        _ = try s.rows("""
            INSERT INTO grants (project_id, id, user_id, entitlement, expires_at, reason, created_at, revoked_at)
            VALUES (\(project.id), '00000000-0000-4000-8000-000000000002', 'u', 'late', '2100-01-01 00:00:00.0019+00', 'r',
                    '2023-11-14 22:13:21+00', NULL),
                   (\(project.id), '00000000-0000-4000-8000-000000000003', 'u', 'tie-b', NULL, 'r', '2023-11-14 22:13:20.123999+00', NULL),
                   (\(project.id), '00000000-0000-4000-8000-000000000001', 'u', 'tie-a', NULL, 'r', '2023-11-14 22:13:20.123999+00', NULL),
                   (\(project.id), '00000000-0000-4000-8000-000000000004', 'u', 'revoked', NULL, 'r', '2023-11-14 22:13:20+00', now()),
                   (\(project.id), '00000000-0000-4000-8000-000000000005', 'u', 'expired', '2000-01-01 00:00:00+00', 'r',
                    '2023-11-14 22:13:20+00', NULL),
                   (\(project.id), '00000000-0000-4000-8000-000000000006', 'v', 'other user', NULL, 'r', '2023-11-14 22:13:20+00', NULL)
            """)
        _ = try s.purchases.holdings(userId: "u", project: project)  // warm: the statement's PQprepare
        let before = try s.pool.withConnection { $0.roundTrips }
        let holdings = try s.purchases.holdings(userId: "u", project: project)
        XCTAssertEqual(try s.pool.withConnection { $0.roundTrips } - before, 1)

        XCTAssertEqual(holdings.purchases.map { "\($0.purchase.originalTransactionId) \($0.purchase.environment.rawValue)" },
                       ["Z9 Production", "a1 Production", "a1 Sandbox", "b2 Production"])
        XCTAssertEqual(holdings.purchases.map(\.entitlements), Array(repeating: ["pro"], count: 4))
        XCTAssertEqual(holdings.purchases.map(\.purchase.latestTransactionId),
                       ["Z9Production", "a1Production", "a1Sandbox", "b2Production"])

        func ms(_ value: Int64) -> Date { Date(timeIntervalSince1970: Double(value) / 1000) }
        XCTAssertEqual(holdings.appTransactions, [
            StoredAppTransaction(appTransactionId: "Z1", environment: .production, originalApplicationVersion: nil,
                                 originalPurchaseDate: nil, consentRescindedAt: nil),
            StoredAppTransaction(appTransactionId: "a1", environment: .production, originalApplicationVersion: nil,
                                 originalPurchaseDate: nil, consentRescindedAt: ms(1_700_006_400_000)),
            StoredAppTransaction(appTransactionId: "a1", environment: .sandbox, originalApplicationVersion: "2.0",
                                 originalPurchaseDate: ms(1_700_000_000_124), consentRescindedAt: nil),
        ])
        XCTAssertEqual(holdings.grants.map(\.entitlement), ["tie-a", "tie-b", "late"])
        XCTAssertEqual(holdings.grants.map { $0.id.uuidString.lowercased() }, [
            "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000003",
            "00000000-0000-4000-8000-000000000002",
        ])
        XCTAssertEqual(holdings.grants.map(\.createdAt), [ms(1_700_000_000_123), ms(1_700_000_000_123), ms(1_700_000_001_000)])
        XCTAssertEqual(holdings.grants.map(\.expiresAt), [nil, nil, ms(4_102_444_800_001)])
        XCTAssertEqual(holdings.grants.map(\.userId), ["u", "u", "u"])
        XCTAssertEqual(holdings.grants.map(\.reason), ["", "", ""])
    }

    /// A user with nothing: no rows at all, empty sets.
    func testNothingHeld() throws {
        let holdings = try s.purchases.holdings(userId: "nobody", project: project)
        XCTAssertEqual(holdings.purchases.count, 0)
        XCTAssertEqual(holdings.appTransactions, [])
        XCTAssertEqual(holdings.grants, [])
    }
}
