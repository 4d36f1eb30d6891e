import Domain
import Foundation
import Postgres
import Storage
import Synchronization
import TestSupport
import XCTest

/// `PostgresNotificationStore` against a throwaway database: exact rows after each delivery.
final class NotificationStoreTests: XCTestCase {
    var pool: ConnectionPool!
    var store: PostgresNotificationStore!
    var purchases: PostgresPurchaseStore!
    var project: Project!

    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)  // 2026-05-28T20:26:40Z
    static let day: TimeInterval = 86_400
    static let otid = "2000000111111111"

    override func setUpWithError() throws {
        let settings = try TestDatabase.create(label: name)
        pool = ConnectionPool(settings: settings, configuration: .init(size: 2))
        try Migrator(pool: pool).migrate()
        store = PostgresNotificationStore(pool: pool)
        purchases = PostgresPurchaseStore(pool: pool)
        let projects = PostgresProjectStore(pool: pool)
        project = try projects.createProject(
            NewProject(ProjectSettings(name: "Notify", bundleId: "com.example.notify")),
            publicKey: "pk_" + String(repeating: "1", count: 32), secretKeyHash: [1, 2, 3], now: Self.t0)
        _ = try projects.setProduct(
            projectId: project.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Self.t0)
    }

    override func tearDown() {
        pool?.shutdown()
    }

    // MARK: - Fixtures

    static func uuid(_ n: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n)) ?? UUID()
    }

    static func transaction(
        _ id: String, start: Date, days: Double = 30, signed: Date? = nil, revoked: Date? = nil
    ) -> TransactionFacts {
        TransactionFacts(
            transactionId: id, originalTransactionId: otid, productId: "pro.monthly", type: .autoRenewable,
            environment: .sandbox, purchaseDate: start, originalPurchaseDate: t0,
            expiresDate: start.addingTimeInterval(days * day), revocationDate: revoked,
            revocationReason: revoked == nil ? nil : 0, ownershipType: .purchased, signedDate: signed ?? start,
            payloadJSON: #"{"transactionId":"\#(id)"}"#)
    }

    static func renewal(signed: Date, autoRenew: Int = 1, grace: Date? = nil, retry: Bool? = nil) -> RenewalFacts {
        RenewalFacts(
            originalTransactionId: otid, productId: "pro.monthly", autoRenewProductId: "pro.monthly",
            autoRenewStatus: autoRenew, gracePeriodExpiresDate: grace, isInBillingRetryPeriod: retry,
            environment: .sandbox, signedDate: signed, payloadJSON: #"{"autoRenewStatus":\#(autoRenew)}"#)
    }

    static func notification(
        _ n: Int, _ type: String, _ subtype: String? = nil, signed: Date, transaction: TransactionFacts? = nil,
        renewal: RenewalFacts? = nil
    ) -> NotificationFacts {
        NotificationFacts(
            notificationUUID: uuid(n), type: type, subtype: subtype, signedDate: signed, environment: .sandbox,
            transaction: transaction, renewal: renewal,
            payloadJSON: #"{"notificationType":"\#(type)","notificationUUID":"\#(uuid(n).uuidString.lowercased())"}"#)
    }

    // MARK: - Row readers

    struct NotificationRow: Equatable {
        var type: String
        var subtype: String?
        var originalTransactionId: String?
        var environment: String?
        var signedDate: Date?
        var payloadType: String?
        var receivedAt: Date
        var processedAt: Date?
    }

    func notificationRows() throws -> [UUID: NotificationRow] {
        try pool.withConnection { c in
            var out: [UUID: NotificationRow] = [:]
            for row in try c.query("""
                SELECT notification_uuid, notification_type, subtype, original_transaction_id, environment, signed_date,
                    payload->>'notificationType' AS payload_type, received_at, processed_at
                FROM notifications WHERE project_id = \(project.id)
                """) {
                out[try row.decode("notification_uuid", as: UUID.self)] = NotificationRow(
                    type: try row.decode("notification_type", as: String.self),
                    subtype: try row.decode("subtype", as: String?.self),
                    originalTransactionId: try row.decode("original_transaction_id", as: String?.self),
                    environment: try row.decode("environment", as: String?.self),
                    signedDate: try row.decode("signed_date", as: Date?.self),
                    payloadType: try row.decode("payload_type", as: String?.self),
                    receivedAt: try row.decode("received_at", as: Date.self),
                    processedAt: try row.decode("processed_at", as: Date?.self))
            }
            return out
        }
    }

    /// (latest_transaction_id, revocation_date, expires_date, auto_renew_status, grace, renewal_signed_date)
    func purchaseRow() throws -> [String] {
        try pool.withConnection { c in
            try c.execute("SET TIME ZONE 'UTC'")
            return try c.query("""
                SELECT latest_transaction_id, revocation_date::text AS revoked, expires_date::text AS expires,
                    auto_renew_status::text AS auto_renew, grace_period_expires_date::text AS grace,
                    renewal_signed_date::text AS renewal_signed, updated_at::text AS updated
                FROM purchases WHERE project_id = \(project.id) AND original_transaction_id = \(Self.otid)
                """).first.map { row in
                try ["latest_transaction_id", "revoked", "expires", "auto_renew", "grace", "renewal_signed", "updated"]
                    .map { try row.decode($0, as: String?.self) ?? "null" }
            } ?? []
        }
    }

    func count(_ sql: String) throws -> Int {
        try pool.withConnection { c in
            try c.query("SELECT count(*)::int8 AS n FROM \(unsafeSQL: sql)").first?.decode("n", as: Int.self) ?? -1
        }
    }

    // MARK: - Tests

    func testFirstDeliveryIsStoredAndAppliedRedeliveryChangesNothing() throws {
        let received = Self.t0.addingTimeInterval(60)
        let subscribed = Self.notification(
            1, "SUBSCRIBED", "INITIAL_BUY", signed: Self.t0, transaction: Self.transaction("t1", start: Self.t0),
            renewal: Self.renewal(signed: Self.t0))
        XCTAssertEqual(try store.recordNotification(subscribed, project: project, now: received), .processed)

        let expected = NotificationRow(
            type: "SUBSCRIBED", subtype: "INITIAL_BUY", originalTransactionId: Self.otid, environment: "Sandbox",
            signedDate: Self.t0, payloadType: "SUBSCRIBED", receivedAt: received, processedAt: received)
        XCTAssertEqual(try notificationRows(), [Self.uuid(1): expected])
        XCTAssertEqual(try purchaseRow(), [
            "t1", "null", "2026-06-27 20:26:40+00", "1", "null", "2026-05-28 20:26:40+00", "2026-05-28 20:27:40+00",
        ])
        XCTAssertEqual(try count("transactions"), 1)
        XCTAssertEqual(try count("subscriptions"), 0, "a notification binds no user")

        // Apple redelivers the same UUID (even if, absurdly, with other facts): acknowledged, nothing changes.
        var redelivery = subscribed
        redelivery.transaction = Self.transaction("t1", start: Self.t0, signed: Self.t0.addingTimeInterval(5),
                                                  revoked: Self.t0.addingTimeInterval(5))
        let later = Self.t0.addingTimeInterval(3600)
        XCTAssertEqual(try store.recordNotification(redelivery, project: project, now: later), .duplicate)
        XCTAssertEqual(try notificationRows(), [Self.uuid(1): expected])
        XCTAssertEqual(try purchaseRow(), [
            "t1", "null", "2026-06-27 20:26:40+00", "1", "null", "2026-05-28 20:26:40+00", "2026-05-28 20:27:40+00",
        ])
    }

    func testOlderFactAfterNewerChangesNothingButIsRecorded() throws {
        let renewed = Self.t0.addingTimeInterval(30 * Self.day)
        let didRenew = Self.notification(
            2, "DID_RENEW", signed: renewed, transaction: Self.transaction("t2", start: renewed),
            renewal: Self.renewal(signed: renewed))
        let subscribed = Self.notification(
            1, "SUBSCRIBED", "INITIAL_BUY", signed: Self.t0, transaction: Self.transaction("t1", start: Self.t0),
            renewal: Self.renewal(signed: Self.t0, autoRenew: 0))
        let received = renewed.addingTimeInterval(10)
        XCTAssertEqual(try store.recordNotification(didRenew, project: project, now: received), .processed)
        let after = try purchaseRow()
        XCTAssertEqual(after, [
            "t2", "null", "2026-07-27 20:26:40+00", "1", "null", "2026-06-27 20:26:40+00", "2026-06-27 20:26:50+00",
        ])
        XCTAssertEqual(try store.recordNotification(subscribed, project: project, now: received.addingTimeInterval(5)),
                       .processed)
        XCTAssertEqual(try purchaseRow(), after, "the older transaction and renewal info must not win")
        XCTAssertEqual(try count("transactions"), 2, "the older transaction is still kept as a row")
        XCTAssertEqual(try notificationRows().count, 2)
        XCTAssertEqual(try notificationRows()[Self.uuid(1)]?.processedAt, received.addingTimeInterval(5))
    }

    func testRenewalInfoBeforeAnyTransactionWaitsThenIsAdopted() throws {
        let graceEnd = Self.t0.addingTimeInterval(46 * Self.day)
        let failed = Self.notification(
            3, "DID_FAIL_TO_RENEW", "GRACE_PERIOD", signed: Self.t0.addingTimeInterval(30 * Self.day),
            renewal: Self.renewal(signed: Self.t0.addingTimeInterval(30 * Self.day), grace: graceEnd, retry: true))
        XCTAssertEqual(try store.recordNotification(failed, project: project, now: Self.t0), .processed)
        XCTAssertEqual(try count("pending_renewals"), 1)
        XCTAssertEqual(try count("purchases"), 0)
        XCTAssertEqual(try notificationRows()[Self.uuid(3)]?.originalTransactionId, Self.otid)

        let subscribed = Self.notification(
            1, "SUBSCRIBED", "INITIAL_BUY", signed: Self.t0, transaction: Self.transaction("t1", start: Self.t0),
            renewal: Self.renewal(signed: Self.t0))
        XCTAssertEqual(try store.recordNotification(subscribed, project: project, now: Self.t0), .processed)
        XCTAssertEqual(try count("pending_renewals"), 0)
        // The pending (newer) renewal info was adopted; the notification's own (older) renewal info lost to it.
        XCTAssertEqual(try purchaseRow(), [
            "t1", "null", "2026-06-27 20:26:40+00", "1", "2026-07-13 20:26:40+00", "2026-06-27 20:26:40+00",
            "2026-05-28 20:26:40+00",
        ])
        let state = try XCTUnwrap(try ownedAfterBinding("u1").first)
        let evaluation = StatusRules.evaluate(state.purchase, at: Self.t0.addingTimeInterval(31 * Self.day))
        XCTAssertEqual(evaluation.status, .active)
        XCTAssertTrue(evaluation.inGracePeriod)
        XCTAssertTrue(evaluation.inBillingRetry)
    }

    func testNotificationBeforeReceiptThenReceiptBindsUserToTheNotifiedFacts() throws {
        let refundedAt = Self.t0.addingTimeInterval(3 * Self.day)
        let refund = Self.notification(
            4, "REFUND", signed: refundedAt,
            transaction: Self.transaction("t1", start: Self.t0, signed: refundedAt, revoked: refundedAt))
        XCTAssertEqual(try store.recordNotification(refund, project: project, now: refundedAt), .processed)
        XCTAssertEqual(try count("subscriptions"), 0)

        // The app posts the original (older-signed, unrevoked) transaction later: it binds, the refund stands.
        let recorded = try purchases.recordTransaction(
            Self.transaction("t1", start: Self.t0), userId: "u1", deviceId: nil, project: project,
            now: refundedAt.addingTimeInterval(60))
        XCTAssertEqual(recorded.purchase.revocationDate, refundedAt)
        let owned = try purchases.ownedPurchases(userId: "u1", project: project)
        XCTAssertEqual(owned.count, 1)
        XCTAssertEqual(owned.first?.entitlements, ["pro"])
        XCTAssertEqual(owned.first.map { StatusRules.evaluate($0.purchase, at: refundedAt).status }, .revoked)
        XCTAssertEqual(try count("subscriptions"), 1)
    }

    func testNotificationForBoundPurchaseUpdatesEveryBoundUser() throws {
        var changes = ProjectChanges()
        changes.transferPolicy = .share
        let sharing = try PostgresProjectStore(pool: pool).updateProject(id: project.id, changes, now: Self.t0)
        project = try XCTUnwrap(sharing)
        for user in ["u1", "u2"] {
            _ = try purchases.recordTransaction(
                Self.transaction("t1", start: Self.t0), userId: user, deviceId: nil, project: project, now: Self.t0)
        }
        let revokedAt = Self.t0.addingTimeInterval(Self.day)
        let revoke = Self.notification(
            5, "REVOKE", signed: revokedAt,
            transaction: Self.transaction("t1", start: Self.t0, signed: revokedAt, revoked: revokedAt))
        XCTAssertEqual(try store.recordNotification(revoke, project: project, now: revokedAt), .processed)
        for user in ["u1", "u2"] {
            let owned = try purchases.ownedPurchases(userId: user, project: project)
            XCTAssertEqual(owned.map { StatusRules.evaluate($0.purchase, at: revokedAt).status }, [.revoked], user)
        }
    }

    func testRecordOnlyNotificationsAreStoredWithoutPurchaseFacts() throws {
        var test = Self.notification(6, "TEST", signed: Self.t0)
        test.environment = .sandbox
        XCTAssertEqual(try store.recordNotification(test, project: project, now: Self.t0), .processed)
        let future = Self.notification(7, "SOMETHING_APPLE_ADDS_IN_2030", "NEW_SUBTYPE", signed: Self.t0)
        XCTAssertEqual(try store.recordNotification(future, project: project, now: Self.t0), .processed)
        let rows = try notificationRows()
        XCTAssertEqual(rows[Self.uuid(6)]?.originalTransactionId, nil)
        XCTAssertEqual(rows[Self.uuid(7)]?.type, "SOMETHING_APPLE_ADDS_IN_2030")
        XCTAssertEqual(rows[Self.uuid(7)]?.processedAt, Self.t0)
        XCTAssertEqual(try count("purchases"), 0)
        XCTAssertEqual(try count("transactions"), 0)
    }

    func testListIsNewestFirstFilteredAndBounded() throws {
        let plan: [(Int, String, TransactionFacts?)] = [
            (1, "SUBSCRIBED", Self.transaction("t1", start: Self.t0)),
            (2, "TEST", nil),
            (3, "DID_RENEW", Self.transaction("t2", start: Self.t0.addingTimeInterval(30 * Self.day))),
        ]
        for (n, type, transaction) in plan {
            let at = Self.t0.addingTimeInterval(Double(n) * 60)
            _ = try store.recordNotification(
                Self.notification(n, type, signed: at, transaction: transaction), project: project, now: at)
        }
        let all = try store.notifications(projectId: project.id, originalTransactionId: nil, limit: 100)
        XCTAssertEqual(all.map(\.notificationUUID), [Self.uuid(3), Self.uuid(2), Self.uuid(1)])
        XCTAssertEqual(all.first, StoredNotification(
            notificationUUID: Self.uuid(3), type: "DID_RENEW", originalTransactionId: Self.otid,
            environment: .sandbox, signedDate: Self.t0.addingTimeInterval(180),
            receivedAt: Self.t0.addingTimeInterval(180), processedAt: Self.t0.addingTimeInterval(180)))
        let forPurchase = try store.notifications(projectId: project.id, originalTransactionId: Self.otid, limit: 100)
        XCTAssertEqual(forPurchase.map(\.notificationUUID), [Self.uuid(3), Self.uuid(1)])
        let bounded = try store.notifications(projectId: project.id, originalTransactionId: nil, limit: 1)
        XCTAssertEqual(bounded.map(\.notificationUUID), [Self.uuid(3)])
        XCTAssertEqual(try store.notifications(projectId: UUID(), originalTransactionId: nil, limit: 100), [])
    }

    func testUnknownProjectIsProjectNotFoundAndStoresNothing() throws {
        var ghost = try XCTUnwrap(project)
        ghost.id = UUID()
        let n = Self.notification(8, "SUBSCRIBED", signed: Self.t0, transaction: Self.transaction("t1", start: Self.t0))
        XCTAssertThrowsError(try store.recordNotification(n, project: ghost, now: Self.t0)) { error in
            XCTAssertEqual((error as? DomainError)?.code, .projectNotFound)
        }
        XCTAssertEqual(try count("notifications"), 0)
        XCTAssertEqual(try count("transactions"), 0)
    }

    func testUnreachableDatabaseIsServiceUnavailable() throws {
        pool.shutdown()
        let n = Self.notification(9, "TEST", signed: Self.t0)
        XCTAssertThrowsError(try store.recordNotification(n, project: project, now: Self.t0)) { error in
            XCTAssertEqual((error as? DomainError)?.code, .serviceUnavailable)
        }
    }

    func testConcurrentRedeliveriesApplyExactlyOnce() throws {
        pool.shutdown()
        pool = ConnectionPool(settings: try TestDatabase.create(label: "notifyrace"), configuration: .init(size: 8))
        try Migrator(pool: pool).migrate()
        store = PostgresNotificationStore(pool: pool)
        let projects = PostgresProjectStore(pool: pool)
        project = try projects.createProject(
            NewProject(ProjectSettings(name: "Race", bundleId: "com.example.race")),
            publicKey: "pk_" + String(repeating: "2", count: 32), secretKeyHash: [1], now: Self.t0)

        // Eight copies of one notification plus eight distinct ones for the same purchase, all at once.
        let refundedAt = Self.t0.addingTimeInterval(Self.day)
        let refund = Self.notification(
            10, "REFUND", signed: refundedAt,
            transaction: Self.transaction("t1", start: Self.t0, signed: refundedAt, revoked: refundedAt))
        let store = try XCTUnwrap(self.store), project = try XCTUnwrap(self.project)
        let outcomes = Mutex<[String]>([])
        let start = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        for i in 0..<16 {
            group.enter()
            Thread {
                start.wait()
                let n = i < 8 ? refund : Self.notification(
                    100 + i, "DID_CHANGE_RENEWAL_STATUS", signed: Self.t0.addingTimeInterval(Double(i)),
                    transaction: Self.transaction("t1", start: Self.t0),
                    renewal: Self.renewal(signed: Self.t0.addingTimeInterval(Double(i)), autoRenew: i % 2))
                let outcome: String
                do { outcome = try store.recordNotification(n, project: project, now: Self.t0).rawValue } catch {
                    outcome = String(reflecting: error)
                }
                outcomes.withLock { $0.append(i < 8 ? "same:" + outcome : "other:" + outcome) }
                group.leave()
            }.start()
        }
        for _ in 0..<16 { start.signal() }
        group.wait()
        let counted = Dictionary(outcomes.withLock { $0 }.map { ($0, 1) }, uniquingKeysWith: +)
        XCTAssertEqual(counted, ["same:processed": 1, "same:duplicate": 7, "other:processed": 8])
        XCTAssertEqual(try count("notifications"), 9)
        // The refund (newest transaction statement) and the newest renewal info (i = 15: auto-renew 1) won.
        XCTAssertEqual(try purchaseRow().prefix(4), ["t1", "2026-05-29 20:26:40+00", "2026-06-27 20:26:40+00", "1"])
    }

    private func ownedAfterBinding(_ user: String) throws -> [OwnedPurchase] {
        _ = try purchases.recordTransaction(
            Self.transaction("t1", start: Self.t0), userId: user, deviceId: nil, project: project, now: Self.t0)
        return try purchases.ownedPurchases(userId: user, project: project)
    }

    /// The refund defense's "was it received?" reads the notification by its primary key: its environment (or "" when
    /// it named none) and its uuid; the same uuid in another environment is another notification.
    func testReceivedAtIsReadInTheNotificationsOwnEnvironment() throws {
        let operations = PostgresAppStoreActionStore(pool: pool)
        let sandbox = Self.notification(41, "TEST", signed: Self.t0)
        var unnamed = Self.notification(42, "TEST", signed: Self.t0)
        unnamed.environment = nil
        XCTAssertEqual(try store.recordNotification(sandbox, project: project, now: Self.t0 + 5), .processed)
        XCTAssertEqual(try store.recordNotification(unnamed, project: project, now: Self.t0 + 7), .processed)

        XCTAssertEqual(try operations.notificationReceivedAt(projectId: project.id, environment: .sandbox,
                                                             notificationUUID: Self.uuid(41)), Self.t0 + 5)
        XCTAssertNil(try operations.notificationReceivedAt(projectId: project.id, environment: .production,
                                                           notificationUUID: Self.uuid(41)))
        XCTAssertEqual(try operations.notificationReceivedAt(projectId: project.id, environment: nil,
                                                             notificationUUID: Self.uuid(42)), Self.t0 + 7)
        XCTAssertNil(try operations.notificationReceivedAt(projectId: project.id, environment: .sandbox,
                                                           notificationUUID: Self.uuid(42)))
        XCTAssertNil(try operations.notificationReceivedAt(projectId: UUID(), environment: .sandbox,
                                                           notificationUUID: Self.uuid(41)))
    }
}
