import API
import Domain
import HTTPCore
@testable import Storage
import XCTest

/// `GET /v1/subscriptions` through the read cache: a hit costs no store read, status is still computed at the
/// request's instant, and every write that can change the answer drops the entries it touches.
final class ReadCacheTests: XCTestCase {
    let path = "/v1/subscriptions/\(Harness.publicKey)/user_123"

    private func cachedHarness(policy: TransferPolicy = .transfer) -> (Harness, PurchaseReadCache) {
        let cache = PurchaseReadCache(capacity: 100, maxAge: .seconds(3600))
        cache.setEnabled(true)
        let harness = Harness(policy: policy, readThrough: { inner in
            CachedPurchaseStore(inner: inner, cache: cache, announce: { cache.invalidate($0) })
        })
        return (harness, cache)
    }

    func testACachedActiveSubscriptionTurnsExpiredExactlyAtItsExpiresDate() {
        let (h, cache) = cachedHarness()
        let expires = Harness.now.addingTimeInterval(100)
        h.register("a.b.c", facts(expiresDate: expires))
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "user_123").status, 201)

        XCTAssertEqual(h.send(.get, path).json?["status"]?.stringValue, "active")
        XCTAssertEqual(h.purchases.readCount, 1)
        h.clock.advance(99.999)
        let before = h.send(.get, path).json
        XCTAssertEqual(before?["status"]?.stringValue, "active")
        XCTAssertEqual(before?["entitlements"], ["pro"])
        h.clock.advance(0.001)  // now == expires_date
        let at = h.send(.get, path).json
        XCTAssertEqual(at?["status"]?.stringValue, "expired")
        XCTAssertEqual(at?["entitlements"], .array([]))
        XCTAssertEqual(at?["subscriptions"]?[0]?["entitlements"], .array([]))
        XCTAssertEqual(h.purchases.readCount, 1, "both later answers came from the cached entry")
        XCTAssertEqual(cache.counts.hits, 2)
    }

    func testAReceiptForTheUserDropsTheirEntry() {
        let (h, _) = cachedHarness()
        h.register("one.b.c", facts(transactionId: "1", originalTransactionId: "1"))
        h.register("two.b.c", facts(transactionId: "2", originalTransactionId: "2"))
        XCTAssertEqual(h.postReceipt("one.b.c", userId: "user_123").status, 201)
        XCTAssertEqual(h.send(.get, path).json?["subscriptions"]?.arrayValue?.count, 1)
        XCTAssertEqual(h.postReceipt("two.b.c", userId: "user_123").status, 201)
        XCTAssertEqual(h.send(.get, path).json?["subscriptions"]?.arrayValue?.count, 2)
        XCTAssertEqual(h.purchases.readCount, 2)
    }

    func testATransferDropsThePreviousHoldersEntryThroughThePurchase() {
        let (h, _) = cachedHarness(policy: .transfer)
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "user_123").status, 201)
        XCTAssertEqual(h.send(.get, path).json?["status"]?.stringValue, "active")
        // The same purchase restored on another account: only the purchase names user_123's entry.
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "someone_else").status, 201)
        XCTAssertEqual(h.send(.get, path).json?["status"]?.stringValue, "none")
        XCTAssertEqual(h.purchases.readCount, 2)
    }

    func testAReceiptWithoutUserDropsEveryHolderOfThePurchase() {
        let (h, _) = cachedHarness()
        h.register("a.b.c", facts(signedDate: Harness.now))
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "user_123").status, 201)
        XCTAssertEqual(h.send(.get, path).json?["status"]?.stringValue, "active")
        h.register("refund.b.c", facts(revocationDate: Harness.now, signedDate: Harness.now.addingTimeInterval(1)))
        XCTAssertEqual(h.postReceipt("refund.b.c").status, 201)
        XCTAssertEqual(h.send(.get, path).json?["status"]?.stringValue, "revoked")
    }
}
