import Domain
import Foundation
import Postgres
import Storage
import TestSupport
import XCTest

/// `PostgresReconciliationStore` (schema/0008) against a throwaway database: the lock, the candidates, the change
/// log, the cursor, and the source every write path records.
final class ReconciliationStoreTests: XCTestCase {
    var pool: ConnectionPool!
    var store: PostgresReconciliationStore!
    var purchases: PostgresPurchaseStore!
    var notifications: PostgresNotificationStore!
    var project: Project!

    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)
    static let day: TimeInterval = 86_400

    override func setUpWithError() throws {
        let settings = try TestDatabase.create(label: name)
        pool = ConnectionPool(settings: settings, configuration: .init(size: 4))
        try Migrator(pool: pool).migrate()
        store = PostgresReconciliationStore(pool: pool)
        purchases = PostgresPurchaseStore(pool: pool)
        notifications = PostgresNotificationStore(pool: pool)
        project = try PostgresProjectStore(pool: pool).createProject(
            NewProject(ProjectSettings(name: "Reconcile", bundleId: "com.example.reconcile")),
            publicKey: "pk_" + String(repeating: "2", count: 32), secretKeyHash: [1, 2, 3], now: Self.t0)
    }

    override func tearDown() { pool?.shutdown() }

    static func transaction(_ id: String, original: String? = nil, type: ProductType = .autoRenewable,
                            start: Date = t0, days: Double? = 30, signed: Date? = nil,
                            revoked: Date? = nil) -> TransactionFacts {
        TransactionFacts(
            transactionId: id, originalTransactionId: original ?? id, productId: "p", type: type,
            environment: .sandbox, purchaseDate: start, expiresDate: days.map { start.addingTimeInterval($0 * day) },
            revocationDate: revoked, revocationReason: revoked == nil ? nil : 0, signedDate: signed ?? start,
            payloadJSON: #"{"transactionId":"\#(id)"}"#)
    }

    func source(_ transactionId: String) throws -> String? {
        try pool.withConnection { c in
            try c.query("SELECT source FROM transactions WHERE transaction_id = \(transactionId)").first?
                .decode("source", as: String?.self)
        }
    }

    func testTheLockHasOneHolderAcrossConnections() throws {
        let otherPool = ConnectionPool(settings: pool.settings, configuration: .init(size: 2))
        defer { otherPool.shutdown() }
        let other = PostgresReconciliationStore(pool: otherPool)
        let inner = try store.withProjectLock(projectId: project.id) { () throws -> Int? in
            // Another instance (its own pool) cannot take it, and neither can a second call here.
            XCTAssertNil(try other.withProjectLock(projectId: project.id) { 1 })
            XCTAssertNil(try store.withProjectLock(projectId: project.id) { 1 })
            // Other projects are not held.
            XCTAssertEqual(try other.withProjectLock(projectId: UUID()) { 2 }, 2)
            return 3
        }
        XCTAssertEqual(inner, 3)
        // Released after the body, also when the body throws.
        XCTAssertEqual(try other.withProjectLock(projectId: project.id) { 4 }, 4)
        struct Boom: Error {}
        XCTAssertThrowsError(try store.withProjectLock(projectId: project.id) { () throws -> Int in throw Boom() })
        XCTAssertEqual(try other.withProjectLock(projectId: project.id) { 5 }, 5)
    }

    func testCandidatesAreLiveOnesCheckedLongestAgoFirst() throws {
        let now = Self.t0.addingTimeInterval(100 * Self.day)
        let expiredSince = now.addingTimeInterval(-60 * Self.day)
        // Active, recently expired, long expired, long revoked; a lifetime purchase and a revoked one.
        for t in [
            Self.transaction("active", start: now.addingTimeInterval(-Self.day)),
            Self.transaction("recent", start: now.addingTimeInterval(-40 * Self.day)),
            Self.transaction("old", start: Self.t0),
            Self.transaction("refunded", start: now.addingTimeInterval(-Self.day), revoked: Self.t0),
            Self.transaction("lifetime", type: .nonConsumable, days: nil),
            Self.transaction("lifetime-refunded", type: .nonConsumable, days: nil, revoked: Self.t0),
            Self.transaction("coins", type: .consumable, days: nil),
        ] {
            _ = try purchases.recordTransaction(t, userId: nil, deviceId: nil, project: project, now: Self.t0)
        }
        let subs = try store.subscriptionsToCheck(projectId: project.id, environments: [.production, .sandbox],
                                                  expiredSince: expiredSince, limit: 10)
        XCTAssertEqual(subs.candidates.map(\.originalTransactionId), ["active", "recent"])
        XCTAssertEqual(subs.total, 2)
        XCTAssertEqual(try store.subscriptionsToCheck(projectId: project.id, environments: [.production],
                                                      expiredSince: expiredSince, limit: 10).total, 0)
        let others = try store.purchasesToCheck(projectId: project.id, environments: [.sandbox], limit: 10)
        XCTAssertEqual(others.candidates.map(\.originalTransactionId), ["lifetime"])
        XCTAssertEqual(others.candidates.first?.latestTransactionId, "lifetime")

        // Checked ones go to the back; the limit keeps the total.
        try store.markChecked(projectId: project.id, environment: .sandbox, originalTransactionId: "active", at: now)
        let next = try store.subscriptionsToCheck(projectId: project.id, environments: [.sandbox],
                                                  expiredSince: expiredSince, limit: 1)
        XCTAssertEqual(next.candidates.map(\.originalTransactionId), ["recent"])
        XCTAssertEqual(next.total, 2)
    }

    func testAppliedFactsRecordTheirChangeAndSource() throws {
        let bought = Self.transaction("sub1")
        _ = try purchases.recordTransaction(bought, userId: "u", deviceId: nil, project: project, now: Self.t0)
        XCTAssertEqual(try source("sub1"), "transaction")   // a posted JWS (schema/0011)
        let runId = try store.startRun(projectId: project.id, trigger: .admin, instance: "test", at: Self.t0)
        let at = Self.t0.addingTimeInterval(Self.day)

        // The same facts again: nothing changed, nothing recorded.
        XCTAssertEqual(try store.applyChecked(transaction: bought, renewal: nil, via: .subscriptionStatus,
                                              project: project, runId: runId, now: at),
                       ReconcileApplied(change: nil, newRefund: false))
        // Apple's newer statement: refunded.
        let refunded = Self.transaction("sub1", signed: at, revoked: at)
        let applied = try store.applyChecked(transaction: refunded, renewal: nil, via: .subscriptionStatus,
                                             project: project, runId: runId, now: at)
        XCTAssertTrue(applied.newRefund)
        let change = try XCTUnwrap(applied.change)
        // The same refund again: not new.
        XCTAssertEqual(try store.applyChecked(transaction: refunded, renewal: nil, via: .refundHistory,
                                              project: project, runId: runId, now: at),
                       ReconcileApplied(change: nil, newRefund: false))
        XCTAssertEqual(change.beforeStatus, .active)
        XCTAssertEqual(change.afterStatus, .revoked)
        XCTAssertEqual(change.afterRevocationDate, at)
        XCTAssertEqual(try source("sub1"), "reconcile")

        // A recovered notification about a purchase nobody posted: it creates the purchase, once.
        let facts = NotificationFacts(
            notificationUUID: UUID(), type: "SUBSCRIBED", signedDate: at, environment: .sandbox,
            transaction: Self.transaction("sub2", start: at), payloadJSON: "{}")
        let first = try store.applyRecovered(facts, project: project, runId: runId, now: at)
        XCTAssertEqual(first.outcome, .processed)
        XCTAssertNil(first.change?.beforeStatus)
        XCTAssertEqual(first.change?.afterStatus, .active)
        XCTAssertEqual(first.change?.notificationUUID, facts.notificationUUID)
        let again = try store.applyRecovered(facts, project: project, runId: runId, now: at)
        XCTAssertEqual(again.outcome, .duplicate)
        XCTAssertNil(again.change)
        // The webhook delivering it later is a duplicate as well.
        XCTAssertEqual(try notifications.recordNotification(facts, project: project, now: at), .duplicate)
        XCTAssertEqual(try source("sub2"), "reconcile")
        let notificationSource = try pool.withConnection { c in
            try c.query("SELECT source FROM notifications WHERE notification_uuid = \(facts.notificationUUID)").first?
                .decode("source", as: String.self)
        }
        XCTAssertEqual(notificationSource, "reconcile")

        var report = ReconcileReport(runId: runId, projectId: project.id, trigger: .admin, startedAt: Self.t0,
                                     finishedAt: at, outcome: .partial)
        report.checked = 1
        report.changed = 2
        report.notificationsApplied = 1
        report.errors = [ReconcileProblem(stage: "transaction_info", environment: .sandbox, originalTransactionId: "x\"y",
                                          message: "notFound: \\ line\nbreak")]
        report.errorCount = 1
        try store.finishRun(report)
        let listed = try XCTUnwrap(try store.runs(projectId: project.id, limit: 5, changesPerRun: 10).first)
        XCTAssertEqual(listed.outcome, .partial)
        XCTAssertEqual(listed.errors, report.errors)
        XCTAssertEqual(listed.changes.map(\.originalTransactionId), ["sub1", "sub2"])
        XCTAssertEqual(listed.changes.map(\.via), [.subscriptionStatus, .notificationHistory])
    }

    func testTheCursorNeverMovesBack() throws {
        XCTAssertNil(try store.catchUpCursor(projectId: project.id, environment: .production))
        let later = Self.t0.addingTimeInterval(Self.day)
        try store.setCatchUpCursor(projectId: project.id, environment: .production, to: later, now: later)
        try store.setCatchUpCursor(projectId: project.id, environment: .production, to: Self.t0, now: later)
        XCTAssertEqual(try store.catchUpCursor(projectId: project.id, environment: .production), later)
        XCTAssertNil(try store.catchUpCursor(projectId: project.id, environment: .sandbox))
    }
}
