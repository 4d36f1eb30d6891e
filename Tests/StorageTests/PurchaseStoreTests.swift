import Domain
import Foundation
import Postgres
import Specification
import Storage
import XCTest

final class PurchaseStoreTests: XCTestCase {
    func testFirstRecordWritesExactRows() throws {
        let s = try TestStores.make(label: "recordfirst")
        defer { s.close() }
        let p = try s.makeProject()
        _ = try s.projects.setProduct(
            projectId: p.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro", "sync"]), now: Fixtures.t0)
        let t = Fixtures.monthly("2000", start: 0)

        let result = try s.purchases.recordTransaction(t, userId: "alice", deviceId: "iphone", project: p, now: Fixtures.at(0.5))

        XCTAssertEqual(result.transaction, t)
        XCTAssertEqual(result.purchase, PurchaseState(first: t))
        XCTAssertEqual(result.entitlements, ["pro", "sync"])
        XCTAssertEqual(result.ownership, .bind)
        XCTAssertTrue(result.isLatest)

        let tx = try s.rows("""
            SELECT transaction_id, original_transaction_id, product_id, type, environment, purchase_date,
                   original_purchase_date, expires_date, revocation_date, revocation_reason, app_account_token,
                   ownership_type, signed_date, payload, first_seen_at, last_seen_at
            FROM transactions WHERE project_id = \(p.id)
            """)
        XCTAssertEqual(tx.count, 1)
        let row = try XCTUnwrap(tx.first)
        XCTAssertEqual(try row.decode("transaction_id", as: String.self), "2000")
        XCTAssertEqual(try row.decode("original_transaction_id", as: String.self), "1000")
        XCTAssertEqual(try row.decode("type", as: String.self), "Auto-Renewable Subscription")
        XCTAssertEqual(try row.decode("environment", as: String.self), "Production")
        XCTAssertEqual(try row.decode("purchase_date", as: Date.self), Fixtures.at(0))
        XCTAssertEqual(try row.decode("expires_date", as: Date?.self), Fixtures.at(30))
        XCTAssertNil(try row.decode("revocation_date", as: Date?.self))
        XCTAssertNil(try row.decode("revocation_reason", as: Int?.self))
        XCTAssertEqual(try row.decode("app_account_token", as: UUID?.self), t.appAccountToken)
        XCTAssertEqual(try row.decode("ownership_type", as: String?.self), "PURCHASED")
        XCTAssertEqual(try row.decode("payload", as: String.self), "{\"transactionId\": \"2000\"}")
        XCTAssertEqual(try row.decode("first_seen_at", as: Date.self), Fixtures.at(0.5))
        XCTAssertEqual(try row.decode("last_seen_at", as: Date.self), Fixtures.at(0.5))

        let purchase = try XCTUnwrap(try s.rows("""
            SELECT latest_transaction_id, product_id, expires_date, latest_signed_date, renewal_signed_date, created_at
            FROM purchases WHERE project_id = \(p.id) AND original_transaction_id = '1000'
            """).first)
        XCTAssertEqual(try purchase.decode("latest_transaction_id", as: String.self), "2000")
        XCTAssertEqual(try purchase.decode("expires_date", as: Date?.self), Fixtures.at(30))
        XCTAssertNil(try purchase.decode("renewal_signed_date", as: Date?.self))
        XCTAssertEqual(try purchase.decode("created_at", as: Date.self), Fixtures.at(0.5))

        let subs = try s.rows("""
            SELECT user_id, original_transaction_id, device_id, bound_at, revoked_at FROM subscriptions
            WHERE project_id = \(p.id)
            """)
        XCTAssertEqual(subs.count, 1)
        let sub = try XCTUnwrap(subs.first)
        XCTAssertEqual(try sub.decode("user_id", as: String.self), "alice")
        XCTAssertEqual(try sub.decode("original_transaction_id", as: String.self), "1000")
        XCTAssertEqual(try sub.decode("device_id", as: String?.self), "iphone")
        XCTAssertEqual(try sub.decode("bound_at", as: Date.self), Fixtures.at(0.5))
        XCTAssertNil(try sub.decode("revoked_at", as: Date?.self))
        XCTAssertEqual(try s.count("SELECT count(*) FROM ownership_events"), 0)
    }

    func testRecordWithoutUserStoresFactsButBindsNobody() throws {
        let s = try TestStores.make(label: "nouser")
        defer { s.close() }
        let p = try s.makeProject()
        let result = try s.purchases.recordTransaction(
            Fixtures.lifetime("9"), userId: nil, deviceId: nil, project: p, now: Fixtures.t0)
        XCTAssertNil(result.ownership)
        XCTAssertEqual(result.entitlements, [], "an unmapped product grants nothing")
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions"), 0)
    }

    func testDoubleRecordIsIdempotent() throws {
        let s = try TestStores.make(label: "idempotent")
        defer { s.close() }
        let p = try s.makeProject()
        let t = Fixtures.monthly("2000", start: 0)
        let first = try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(1))
        let second = try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(2))

        XCTAssertEqual(second.purchase, first.purchase)
        XCTAssertEqual(second.entitlements, first.entitlements)
        XCTAssertEqual(second.ownership, .alreadyOwned)
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions"), 1)
        let row = try XCTUnwrap(try s.rows("SELECT first_seen_at, last_seen_at FROM transactions").first)
        XCTAssertEqual(try row.decode("first_seen_at", as: Date.self), Fixtures.at(1))
        XCTAssertEqual(try row.decode("last_seen_at", as: Date.self), Fixtures.at(2))
        // The binding did not change (the same user, no device id): it stays as it was written.
        let sub = try XCTUnwrap(try s.rows("SELECT bound_at, updated_at FROM subscriptions").first)
        XCTAssertEqual(try sub.decode("bound_at", as: Date.self), Fixtures.at(1))
        XCTAssertEqual(try sub.decode("updated_at", as: Date.self), Fixtures.at(1))
    }

    func testOutOfOrderRenewalDoesNotMoveThePeriodBackwards() throws {
        let s = try TestStores.make(label: "outoforder")
        defer { s.close() }
        let p = try s.makeProject()
        let march = Fixtures.monthly("2002", start: 60)
        let january = Fixtures.monthly("2000", start: 0)
        _ = try s.purchases.recordTransaction(march, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(61))
        let late = try s.purchases.recordTransaction(january, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(62))

        XCTAssertFalse(late.isLatest)
        XCTAssertEqual(late.purchase.latestTransactionId, "2002")
        XCTAssertEqual(late.purchase.expiresDate, Fixtures.at(90))
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 2)
        let purchase = try XCTUnwrap(try s.rows("SELECT latest_transaction_id, expires_date, updated_at FROM purchases").first)
        XCTAssertEqual(try purchase.decode("latest_transaction_id", as: String.self), "2002")
        XCTAssertEqual(try purchase.decode("expires_date", as: Date?.self), Fixtures.at(90))
        XCTAssertEqual(try purchase.decode("updated_at", as: Date.self), Fixtures.at(61), "an older fact writes nothing")

        // The next renewal moves it forward.
        let april = try s.purchases.recordTransaction(
            Fixtures.monthly("2003", start: 90), userId: nil, deviceId: nil, project: p, now: Fixtures.at(91))
        XCTAssertTrue(april.isLatest)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p).map(\.purchase.expiresDate), [Fixtures.at(120)])
    }

    func testRefundIsAppliedAndAnOlderStatementCannotUndoIt() throws {
        let s = try TestStores.make(label: "refund")
        defer { s.close() }
        let p = try s.makeProject()
        let bought = Fixtures.monthly("2000", start: 0)
        let refunded = Fixtures.monthly("2000", start: 0, signed: 5, revokedAt: 5)
        _ = try s.purchases.recordTransaction(bought, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(0))
        let afterRefund = try s.purchases.recordTransaction(refunded, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(5))
        XCTAssertEqual(afterRefund.purchase.revocationDate, Fixtures.at(5))
        XCTAssertEqual(afterRefund.purchase.latestSignedDate, Fixtures.at(5))
        XCTAssertEqual(StatusRules.evaluate(afterRefund.purchase, at: Fixtures.at(6)).status, .revoked)

        // The pre-refund statement delivered again (a retry from the app) changes nothing.
        let replay = try s.purchases.recordTransaction(bought, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(7))
        XCTAssertEqual(replay.purchase, afterRefund.purchase)

        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 1)
        let tx = try XCTUnwrap(try s.rows("SELECT revocation_date, revocation_reason, signed_date, last_seen_at FROM transactions").first)
        XCTAssertEqual(try tx.decode("revocation_date", as: Date?.self), Fixtures.at(5))
        XCTAssertEqual(try tx.decode("revocation_reason", as: Int?.self), 0)
        XCTAssertEqual(try tx.decode("signed_date", as: Date.self), Fixtures.at(5))
        XCTAssertEqual(try tx.decode("last_seen_at", as: Date.self), Fixtures.at(7))
        let purchase = try XCTUnwrap(try s.rows("SELECT revocation_date, latest_signed_date FROM purchases").first)
        XCTAssertEqual(try purchase.decode("revocation_date", as: Date?.self), Fixtures.at(5))
        XCTAssertEqual(try purchase.decode("latest_signed_date", as: Date.self), Fixtures.at(5))
        let owned = try s.purchases.ownedPurchases(userId: "alice", project: p)
        XCTAssertEqual(owned.map(\.purchase.revocationDate), [Fixtures.at(5)])
    }

    func testOwnedPurchasesJoinsTheCurrentProductsEntitlements() throws {
        let s = try TestStores.make(label: "owned")
        defer { s.close() }
        let p = try s.makeProject()
        _ = try s.projects.setProduct(projectId: p.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
        _ = try s.projects.setProduct(projectId: p.id, ProductMapping(productId: "pro.yearly", entitlements: ["pro", "extra"]), now: Fixtures.t0)
        _ = try s.purchases.recordTransaction(Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: nil, project: p, now: Fixtures.t0)
        _ = try s.purchases.recordTransaction(Fixtures.lifetime("L1", product: "unmapped"), userId: "alice", deviceId: nil, project: p, now: Fixtures.t0)
        _ = try s.purchases.recordTransaction(Fixtures.lifetime("L2"), userId: "bob", deviceId: nil, project: p, now: Fixtures.t0)

        let owned = try s.purchases.ownedPurchases(userId: "alice", project: p)
        XCTAssertEqual(owned.map(\.purchase.originalTransactionId), ["1000", "L1"])
        XCTAssertEqual(owned.map(\.entitlements), [["pro"], []])
        XCTAssertEqual(owned.first?.purchase, PurchaseState(first: Fixtures.monthly("2000", start: 0)))

        // An upgrade: the purchase's current product decides what it grants.
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("2001", product: "pro.yearly", start: 10), userId: nil, deviceId: nil, project: p, now: Fixtures.t0)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p).first?.entitlements, ["extra", "pro"])
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "nobody", project: p), [])
    }

    func testTenantIsolation() throws {
        let s = try TestStores.make(label: "tenants")
        defer { s.close() }
        let a = try s.makeProject(1)
        let b = try s.makeProject(2, policy: .block)
        _ = try s.projects.setProduct(projectId: a.id, ProductMapping(productId: "pro.monthly", entitlements: ["a-pro"]), now: Fixtures.t0)
        let t = Fixtures.monthly("2000", start: 0)

        let inA = try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: a, now: Fixtures.t0)
        // Same transaction, same user id, other project: its own rows, its own (absent) mapping, no block.
        let inB = try s.purchases.recordTransaction(t, userId: "mallory", deviceId: nil, project: b, now: Fixtures.t0)
        XCTAssertEqual(inA.entitlements, ["a-pro"])
        XCTAssertEqual(inB.entitlements, [])
        XCTAssertEqual(inB.ownership, .bind)

        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions WHERE transaction_id = '2000'"), 2)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases WHERE original_transaction_id = '1000'"), 2)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE project_id = \(a.id)"), 1)
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions WHERE project_id = \(b.id)"), 1)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: b), [])
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "mallory", project: a), [])
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: a).count, 1)

        // A refund recorded in B does not touch A's purchase.
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("2000", start: 0, signed: 3, revokedAt: 3), userId: nil, deviceId: nil, project: b, now: Fixtures.t0)
        XCTAssertNil(try s.purchases.ownedPurchases(userId: "alice", project: a).first?.purchase.revocationDate)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "mallory", project: b).first?.purchase.revocationDate, Fixtures.at(3))
        // A's key resolves to A only.
        XCTAssertEqual(try s.projects.project(publicKey: a.publicKey, at: Fixtures.t0)?.id, a.id)
    }

    func testRecordingForADeletedProjectIsProjectNotFoundAndWritesNothing() throws {
        let s = try TestStores.make(label: "deletedproject")
        defer { s.close() }
        let p = try s.makeProject()
        XCTAssertTrue(try s.projects.deleteProject(id: p.id))
        assertDomainError(.projectNotFound) {
            try s.purchases.recordTransaction(Fixtures.monthly("1", start: 0), userId: "u", deviceId: nil, project: p, now: Fixtures.t0)
        }
        assertDomainError(.projectNotFound) {
            try s.purchases.recordRenewal(Fixtures.renewal(signed: 1), project: p, now: Fixtures.t0)
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 0)
        XCTAssertEqual(try s.count("SELECT count(*) FROM pending_renewals"), 0)
    }
}
