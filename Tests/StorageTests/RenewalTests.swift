import Domain
import Foundation
import Postgres
import Specification
import Storage
import XCTest

/// Renewal info (from notifications) applied under the purchase's lock, or kept until its first transaction.
final class RenewalTests: XCTestCase {
    func testRenewalIsAppliedToAKnownPurchaseAndOlderInfoIsIgnored() throws {
        let s = try TestStores.make(label: "renewal")
        defer { s.close() }
        let p = try s.makeProject()
        let t = Fixtures.monthly("2000", start: 0)
        _ = try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: p, now: Fixtures.t0)

        let off = Fixtures.renewal(signed: 10, autoRenew: 0, grace: 36, retry: true)
        var expected = PurchaseState(first: t)
        expected.renewal = off
        XCTAssertEqual(try s.purchases.recordRenewal(off, project: p, now: Fixtures.at(10)), .applied(expected))
        XCTAssertEqual(try s.purchases.recordRenewal(Fixtures.renewal(signed: 5), project: p, now: Fixtures.at(11)), .unchanged(expected))
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p).map(\.purchase), [expected])

        let row = try XCTUnwrap(try s.rows("""
            SELECT auto_renew_status, auto_renew_product_id, expiration_intent, grace_period_expires_date,
                   is_in_billing_retry, offer_type, offer_identifier, renewal_signed_date, renewal_payload, updated_at
            FROM purchases WHERE project_id = \(p.id)
            """).first)
        XCTAssertEqual(try row.decode("auto_renew_status", as: Int?.self), 0)
        XCTAssertEqual(try row.decode("auto_renew_product_id", as: String?.self), "pro.yearly")
        XCTAssertEqual(try row.decode("expiration_intent", as: Int?.self), 1)
        XCTAssertEqual(try row.decode("grace_period_expires_date", as: Date?.self), Fixtures.at(36))
        XCTAssertEqual(try row.decode("is_in_billing_retry", as: Bool?.self), true)
        XCTAssertEqual(try row.decode("offer_identifier", as: String?.self), "spring")
        XCTAssertEqual(try row.decode("renewal_signed_date", as: Date?.self), Fixtures.at(10))
        XCTAssertEqual(try row.decode("renewal_payload", as: String?.self), "{\"signedDate\": 10}")
        XCTAssertEqual(try row.decode("updated_at", as: Date.self), Fixtures.at(10))

        // A later transaction keeps the renewal info (PurchaseState.applying carries it over).
        let next = try s.purchases.recordTransaction(
            Fixtures.monthly("2001", start: 30), userId: nil, deviceId: nil, project: p, now: Fixtures.at(30))
        XCTAssertEqual(next.purchase.renewal, off)
        XCTAssertEqual(StatusRules.evaluate(next.purchase, at: Fixtures.at(31)).autoRenewEnabled, false)
    }

    func testRenewalBeforeAnyTransactionIsKeptThenAdopted() throws {
        let s = try TestStores.make(label: "pending")
        defer { s.close() }
        let p = try s.makeProject()
        let newer = Fixtures.renewal(signed: 3, autoRenew: 0)
        XCTAssertEqual(try s.purchases.recordRenewal(Fixtures.renewal(signed: 2), project: p, now: Fixtures.at(2)), .pending)
        XCTAssertEqual(try s.purchases.recordRenewal(newer, project: p, now: Fixtures.at(3)), .pending)
        XCTAssertEqual(try s.purchases.recordRenewal(Fixtures.renewal(signed: 1), project: p, now: Fixtures.at(4)), .pending)
        XCTAssertEqual(try s.count("SELECT count(*) FROM purchases"), 0, "no purchase without a transaction")
        let pending = try XCTUnwrap(try s.rows("SELECT signed_date, auto_renew_status, received_at FROM pending_renewals").first)
        XCTAssertEqual(try pending.decode("signed_date", as: Date.self), Fixtures.at(3), "the newest signature wins")
        XCTAssertEqual(try pending.decode("auto_renew_status", as: Int?.self), 0)
        XCTAssertEqual(try pending.decode("received_at", as: Date.self), Fixtures.at(3))

        let t = Fixtures.monthly("2000", start: 0)
        let recorded = try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(5))
        var expected = PurchaseState(first: t)
        expected.renewal = newer
        XCTAssertEqual(recorded.purchase, expected)
        XCTAssertEqual(try s.count("SELECT count(*) FROM pending_renewals"), 0)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p).map(\.purchase), [expected])
        // Pending facts of other purchases or projects are not adopted.
        XCTAssertEqual(try s.purchases.recordRenewal(Fixtures.renewal(original: "other", signed: 1), project: p, now: Fixtures.t0), .pending)
        _ = try s.purchases.recordTransaction(Fixtures.lifetime("L"), userId: nil, deviceId: nil, project: p, now: Fixtures.t0)
        XCTAssertEqual(try s.count("SELECT count(*) FROM pending_renewals"), 1)
    }

    func testPendingRenewalIsScopedToItsProject() throws {
        let s = try TestStores.make(label: "pendscope")
        defer { s.close() }
        let a = try s.makeProject(1)
        let b = try s.makeProject(2)
        XCTAssertEqual(try s.purchases.recordRenewal(Fixtures.renewal(signed: 1), project: a, now: Fixtures.t0), .pending)
        let inB = try s.purchases.recordTransaction(Fixtures.monthly("2000", start: 0), userId: nil, deviceId: nil, project: b, now: Fixtures.t0)
        XCTAssertNil(inB.purchase.renewal)
        XCTAssertEqual(try s.count("SELECT count(*) FROM pending_renewals WHERE project_id = \(a.id)"), 1)
    }
}
