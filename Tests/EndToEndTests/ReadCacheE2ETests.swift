import Foundation
import JSON
import TestSupport
import XCTest

/// `GET /v1/subscriptions` through the read cache of one `bouncer serve`: a hit reads nothing from the database
/// (`bouncer_read_cache_total`), the status is still computed at the request's instant, and every write that can
/// change the answer drops the entries it touches. (Across instances: `CacheE2ETests`.)
final class ReadCacheE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "readcache" }
    /// Only a write may explain a changed answer: no entry ages out within a test.
    override class var serverOverrides: [String: String?] { ["BOUNCER_READ_CACHE_MAX_AGE_SECONDS": "3600"] }

    /// The cache's hits and misses since the server started (the tests of this class run one at a time).
    private func reads() throws -> (hits: Int, misses: Int) {
        let text = String(decoding: try api.client.get("/metrics").body, as: UTF8.self)
        func value(_ series: String) -> Int {
            text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
                .flatMap { Double($0.dropFirst(series.count + 1)) }.map { Int($0) } ?? 0
        }
        return (value(#"bouncer_read_cache_total{result="hit"}"#), value(#"bouncer_read_cache_total{result="miss"}"#))
    }

    /// A project with the test product mapped to `pro`.
    private func tenant() throws -> Tenant {
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        return tenant
    }

    func testACachedActiveSubscriptionTurnsExpiredAtItsExpiresDate() throws {
        let tenant = try tenant()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.expiresDate = E2E.ms(3)
        let expires = Date(timeIntervalSince1970: Double(try XCTUnwrap(payload.expiresDate)) / 1000)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)

        let start = try reads()
        let first = try api.user(tenant.publicKey, "alice").json()
        XCTAssertEqual(first["status"], "active")
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "active")
        XCTAssertEqual(try reads().misses - start.misses, 1, "one read of the database, then the cached entry")
        XCTAssertEqual(try reads().hits - start.hits, 1)
        Thread.sleep(forTimeInterval: max(0, expires.timeIntervalSinceNow) + 0.05)
        let at = try api.user(tenant.publicKey, "alice").json()
        XCTAssertEqual(at["status"], "expired")
        XCTAssertEqual(at["entitlements"], .array([]))
        XCTAssertEqual(at["subscriptions"]?[0]?["entitlements"], .array([]))
        XCTAssertEqual(try reads().misses - start.misses, 1, "the later answer came from the cached entry")
        XCTAssertEqual(try reads().hits - start.hits, 2)
    }

    func testAReceiptForTheUserDropsTheirEntry() throws {
        let tenant = try tenant()
        let start = try reads()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(),
                                           user: "alice").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["subscriptions"]?.arrayValue?.count, 1)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(),
                                           user: "alice").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["subscriptions"]?.arrayValue?.count, 2)
        XCTAssertEqual(try reads().misses - start.misses, 2)
    }

    func testATransferDropsThePreviousHoldersEntryThroughThePurchase() throws {
        let tenant = try tenant()  // transfer policy: the default
        let jws = try TransactionPayload(bundleId: tenant.bundleId).mint()
        let start = try reads()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "alice").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "active")
        // The same purchase restored on another account: only the purchase names alice's entry.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "someone_else").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "none")
        XCTAssertEqual(try reads().misses - start.misses, 2)
    }

    func testAReceiptWithoutUserDropsEveryHolderOfThePurchase() throws {
        let tenant = try tenant()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "active")
        payload.revocationDate = E2E.ms(-1)
        payload.revocationReason = 0
        payload.signedDate = E2E.ms(0)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint()).status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "revoked")
    }
}
