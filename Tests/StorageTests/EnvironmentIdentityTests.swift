import Domain
import Foundation
import Postgres
import Specification
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

    func testXcodePostForAnAttackerNeverRevokesOrBlocksTheRealBinding() throws {
        for policy in TransferPolicy.allCases {
            let s = try TestStores.make(label: "xcodebind")
            defer { s.close() }
            let p = try s.makeProject(policy: policy)
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(0.5))
            let before = try snapshot(s, p, environment: "Production")
            // An Xcode transaction naming the real original id, posted for the attacker.
            let forged = Fixtures.monthly("6666", start: 1, signed: 1, environment: .xcode)
            let result = try s.purchases.recordTransaction(
                forged, userId: "attacker", deviceId: nil, project: p, now: Fixtures.at(1))
            XCTAssertEqual(result.ownership, .bind, "\(policy): the Xcode purchase has no owner to block or transfer from")
            XCTAssertEqual(try snapshot(s, p, environment: "Production"), before, "\(policy)")
            XCTAssertEqual(try owned(s, p, "alice"), ["Production 1000 2000 revoked=false"], "\(policy)")
            XCTAssertEqual(try owned(s, p, "attacker"), ["Xcode 1000 6666 revoked=false"], "\(policy)")
        }
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

    // MARK: - TRANSACTION_CONFLICT

    /// Every row of every purchase table of the project, as jsonb text.
    private func allRows(_ s: TestStores, _ p: Project) throws -> [String] {
        var out: [String] = []
        for table in ["transactions", "purchases", "subscriptions", "ownership_events", "pending_renewals",
                      "notifications"] {
            out += try s.rows("""
                SELECT to_jsonb(x)::text AS j FROM \(unsafeSQL: table) x WHERE x.project_id = \(p.id) ORDER BY 1
                """).map { "\(table): " + (try $0.decode("j", as: String.self)) }
        }
        return out
    }

    func testSignedDataDisagreeingWithTheStoredIdentityIsRefusedAndWritesNothing() throws {
        let s = try TestStores.make(label: "txconflict")
        defer { s.close() }
        let p = try s.makeProject(policy: .transfer)
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(0.5))
        let before = try allRows(s, p)
        XCTAssertEqual(try s.rows("SELECT bundle_id FROM transactions").first?.decode("bundle_id", as: String.self),
                       "com.example.app1", "a transaction without a signed bundle id records the project's")

        var otherOriginal = Fixtures.monthly("2000", original: "1001", start: 0, signed: 1)
        var otherProduct = Fixtures.monthly("2000", product: "pro.yearly", start: 0, signed: 1)
        var otherBundle = Fixtures.monthly("2000", start: 0, signed: 1)
        otherBundle.bundleId = "com.example.other"
        otherOriginal.revocationDate = Fixtures.at(1)
        otherProduct.revocationDate = Fixtures.at(1)
        for (forged, differing) in [(otherOriginal, "original_transaction_id"), (otherProduct, "product_id"),
                                    (otherBundle, "bundle_id")] {
            let error = assertDomainError(.transactionConflict) {
                try s.purchases.recordTransaction(forged, userId: "mallory", deviceId: nil, project: p, now: Fixtures.at(2))
            }
            XCTAssertEqual(error?.message,
                           "This transaction id is already recorded with a different identity; nothing was written.")
            XCTAssertEqual(error?.underlying, "transaction conflict: project \(p.id), environment Production, "
                + "transaction 2000, differing fields: \(differing)")
            XCTAssertEqual(try allRows(s, p), before, "nothing written for a conflicting \(differing)")
        }
        // The same identity with a later signature is no conflict: the refund lands.
        var refund = Fixtures.monthly("2000", start: 0, signed: 3, revokedAt: 3)
        refund.bundleId = "com.example.app1"
        let result = try s.purchases.recordTransaction(refund, userId: nil, deviceId: nil, project: p, now: Fixtures.at(3))
        XCTAssertEqual(result.purchase.revocationDate, Fixtures.at(3))
    }

    func testNotificationWithAConflictingTransactionIsRefusedAndNotStored() throws {
        let s = try TestStores.make(label: "notifconflict")
        defer { s.close() }
        let notifications = PostgresNotificationStore(pool: s.pool)
        let p = try s.makeProject(policy: .transfer)
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(0.5))
        let before = try allRows(s, p)
        let refund = NotificationFacts(
            notificationUUID: UUID(uuidString: "00000000-0000-4000-8000-000000000002") ?? UUID(), type: "REFUND",
            signedDate: Fixtures.at(2), environment: .production,
            transaction: Fixtures.monthly("2000", original: "1001", start: 0, signed: 2, revokedAt: 2),
            payloadJSON: #"{"notificationType": "REFUND"}"#)
        assertDomainError(.transactionConflict) {
            try notifications.recordNotification(refund, project: p, now: Fixtures.at(2))
        }
        XCTAssertEqual(try allRows(s, p), before, "not even the notification row is kept")
    }

    // MARK: - Bounded Xcode notifications

    func testXcodeNotificationsAreCappedPerProjectAndRealOnesAreNot() throws {
        let s = try TestStores.make(label: "xcodecap")
        defer { s.close() }
        let notifications = PostgresNotificationStore(pool: s.pool, localTestingNotificationLimit: 3)
        let p = try s.makeProject(1)
        let q = try s.makeProject(2)
        func notification(_ n: Int, _ environment: StoreEnvironment) -> NotificationFacts {
            NotificationFacts(
                notificationUUID: UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n)) ?? UUID(),
                type: "TEST", signedDate: Fixtures.at(Double(n)), environment: environment,
                payloadJSON: #"{"notificationType": "TEST"}"#)
        }
        for n in 1...5 {
            XCTAssertEqual(try notifications.recordNotification(notification(n, .xcode), project: p, now: Fixtures.at(Double(n))),
                           .processed)
            XCTAssertEqual(try notifications.recordNotification(notification(n, .production), project: p,
                                                                now: Fixtures.at(Double(n))), .processed)
        }
        XCTAssertEqual(try notifications.recordNotification(notification(6, .localTesting), project: p, now: Fixtures.at(6)),
                       .processed)
        XCTAssertEqual(try notifications.recordNotification(notification(1, .xcode), project: q, now: Fixtures.at(7)),
                       .processed)
        let kept = try s.rows("""
            SELECT environment, right(notification_uuid::text, 1) AS n FROM notifications WHERE project_id = \(p.id)
            ORDER BY environment, received_at
            """).map { "\(try $0.decode("environment", as: String.self)) \(try $0.decode("n", as: String.self))" }
        XCTAssertEqual(kept, ["LocalTesting 6", "Production 1", "Production 2", "Production 3", "Production 4",
                              "Production 5", "Xcode 4", "Xcode 5"])
        XCTAssertEqual(try s.count("SELECT count(*) FROM notifications WHERE project_id = \(q.id)"), 1,
                       "the cap is per project")
        // The same UUID in another environment is another notification, not a redelivery.
        XCTAssertEqual(try notifications.recordNotification(notification(5, .sandbox), project: p, now: Fixtures.at(8)),
                       .processed)
        XCTAssertEqual(try notifications.recordNotification(notification(5, .production), project: p, now: Fixtures.at(8)),
                       .duplicate)
    }
}
