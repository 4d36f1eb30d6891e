import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// The Xcode forgery attack (issue 11): anyone can sign `Xcode` data with a self-made certificate, so Xcode (and
/// LocalTesting) rows must never replace, revoke, extend or re-own Sandbox or Production rows, and the reverse.
final class EnvironmentIdentityTests: XCTestCase {
    /// Every column of every row of the purchase `original` in `environment`, as jsonb text: transactions,
    /// purchases, their bindings and ownership events. Equal snapshots mean byte-for-byte unchanged rows.
    private func snapshot(
        _ s: TestStores, _ p: Project, environment: String, original: String = "1000"
    ) throws -> [String] {
        var out: [String] = []
        for table in ["transactions", "purchases", "subscriptions", "ownership_events"] {
            let rows = try s.rows("""
                SELECT to_jsonb(x)::text AS j FROM \(unsafeSQL: table) x
                WHERE x.project_id = \(p.id) AND x.environment = \(environment)
                  AND x.original_transaction_id = \(original)
                ORDER BY 1
                """)
            out += try rows.map { "\(table): " + (try $0.decode("j", as: String.self)) }
        }
        return out
    }

    /// The real customer's view: purchases bound to `user`, as (environment, original, latest, revoked?).
    private func owned(_ s: TestStores, _ p: Project, _ user: String) throws -> [String] {
        try s.purchases.ownedPurchases(userId: user, project: p).map {
            "\($0.purchase.environment.rawValue) \($0.purchase.originalTransactionId) "
                + "\($0.purchase.latestTransactionId) revoked=\($0.purchase.revocationDate != nil)"
        }
    }

    func testXcodeTransactionReusingAProductionIdNeverTouchesTheProductionPurchase() throws {
        let s = try TestStores.make(label: "xcodeforgery")
        defer { s.close() }
        let p = try s.makeProject(policy: .transfer)
        let real = Fixtures.monthly("2000", start: 0)
        _ = try s.purchases.recordTransaction(real, userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(0.5))
        let before = try snapshot(s, p, environment: "Production")
        XCTAssertEqual(before.count, 3, "transaction, purchase, binding: \(before)")

        // The forger: same transaction and original ids, signed later, revoked, posted for another user.
        let forged = Fixtures.monthly("2000", start: 0, signed: 1, revokedAt: 1, environment: .xcode)
        let result = try s.purchases.recordTransaction(
            forged, userId: "mallory", deviceId: "m1", project: p, now: Fixtures.at(1.5))

        XCTAssertEqual(try snapshot(s, p, environment: "Production"), before)
        XCTAssertEqual(try owned(s, p, "alice"), ["Production 1000 2000 revoked=false"])
        XCTAssertEqual(try owned(s, p, "mallory"), ["Xcode 1000 2000 revoked=true"])
        XCTAssertEqual(result.purchase.environment, .xcode)
        XCTAssertEqual(result.ownership, .bind, "the Xcode purchase is a separate purchase with no owner yet")
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 2)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 2)
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events"), 0, "nobody lost anything")
    }

    func testProductionTransactionAfterAnXcodeForgeryIsStoredAsIfTheForgeryNeverHappened() throws {
        let s = try TestStores.make(label: "xcodefirst")
        defer { s.close() }
        let p = try s.makeProject(policy: .transfer)
        // The forger moves first, with a later signedDate and a revocation, hoping the real data loses to it.
        let forged = Fixtures.monthly("2000", start: 0, signed: 5, revokedAt: 5, environment: .xcode)
        _ = try s.purchases.recordTransaction(forged, userId: "mallory", deviceId: nil, project: p, now: Fixtures.at(0.2))
        let xcodeBefore = try snapshot(s, p, environment: "Xcode")
        XCTAssertEqual(xcodeBefore.count, 3, "\(xcodeBefore)")

        let real = Fixtures.monthly("2000", start: 0)
        let result = try s.purchases.recordTransaction(real, userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(0.5))

        XCTAssertEqual(result.purchase, PurchaseState(first: real))
        XCTAssertEqual(result.ownership, .bind)
        XCTAssertEqual(try snapshot(s, p, environment: "Xcode"), xcodeBefore)
        XCTAssertEqual(try owned(s, p, "alice"), ["Production 1000 2000 revoked=false"])
        XCTAssertEqual(try owned(s, p, "mallory"), ["Xcode 1000 2000 revoked=true"])
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events"), 0)
    }

    func testXcodeRefundNotificationAboutARealPurchaseChangesNothingReal() throws {
        let s = try TestStores.make(label: "xcoderefund")
        defer { s.close() }
        let notifications = PostgresNotificationStore(pool: s.pool)
        let p = try s.makeProject(policy: .transfer)
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(0.5))
        let before = try snapshot(s, p, environment: "Production")

        let refund = NotificationFacts(
            notificationUUID: UUID(uuidString: "00000000-0000-4000-8000-000000000001") ?? UUID(), type: "REFUND",
            signedDate: Fixtures.at(2), environment: .xcode,
            transaction: Fixtures.monthly("2000", start: 0, signed: 2, revokedAt: 2, environment: .xcode),
            payloadJSON: #"{"notificationType": "REFUND"}"#)
        XCTAssertEqual(try notifications.recordNotification(refund, project: p, now: Fixtures.at(2)), .processed)

        XCTAssertEqual(try snapshot(s, p, environment: "Production"), before)
        XCTAssertEqual(try owned(s, p, "alice"), ["Production 1000 2000 revoked=false"])
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases WHERE environment = 'Xcode'"), 1)
    }
}
