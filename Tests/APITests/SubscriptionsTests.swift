import API
import Domain
import Foundation
import HTTPCore
import Specification
import XCTest

final class SubscriptionsTests: XCTestCase {
    let path = "/v1/subscriptions/\(Harness.publicKey)/user_123"

    func testIssueExampleWithExtras() {
        let h = Harness()
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "user_123").status, 201)
        let response = h.send(.get, path)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["Content-Type"], "application/json")
        XCTAssertEqual(response.text, #"{"user_id":"user_123","status":"active","entitlements":["pro"],"#
            + #""subscriptions":[{"product_id":"com.myapp.pro.yearly","status":"active","#
            + #""current_period_end":"2027-03-20T00:00:00.000Z","auto_renew_enabled":true,"#
            + #""original_transaction_id":"1000000123456000","environment":"Production","entitlements":["pro"],"#
            + #""in_grace_period":false,"in_billing_retry":false,"grace_period_expires_date":null,"#
            + #""expiration_intent":null,"auto_renew_product_id":null,"eligible_win_back_offer_ids":[],"#
            + #""ownership_type":"PURCHASED","#
            + #""revocation_date":null}]}"#)
    }

    func testUnknownUserIsNoneWithEmptyLists() {
        let h = Harness()
        let response = h.send(.get, path)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, #"{"user_id":"user_123","status":"none","entitlements":[],"subscriptions":[]}"#)
    }

    func testUserIdIsPercentDecodedAndEscapedInTheBody() {
        let h = Harness()
        let response = h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/a%22b%5Cc%20d")
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, #"{"user_id":"a\"b\\c d","status":"none","entitlements":[],"subscriptions":[]}"#)
    }

    func testExpiredAndActiveMixUnionOfActiveEntitlementsOnly() {
        let h = Harness()
        h.register("old.b.c", facts(transactionId: "1", originalTransactionId: "1", productId: "com.myapp.lifetime",
                                    type: .nonRenewing, expiresDate: Date(timeIntervalSince1970: 1_777_593_600)))
        h.register("new.b.c", facts())
        XCTAssertEqual(h.postReceipt("old.b.c", userId: "user_123").status, 201)
        XCTAssertEqual(h.postReceipt("new.b.c", userId: "user_123").status, 201)
        let json = h.send(.get, path).json
        XCTAssertEqual(json?["status"]?.stringValue, "active")
        XCTAssertEqual(json?["entitlements"], ["pro"])
        XCTAssertEqual(json?["subscriptions"]?.arrayValue?.count, 2)
        XCTAssertEqual(json?["subscriptions"]?[1]?["status"]?.stringValue, "expired")
        XCTAssertEqual(json?["subscriptions"]?[1]?["entitlements"], .array([]))
        XCTAssertEqual(json?["subscriptions"]?[1]?["auto_renew_enabled"], false)
    }

    func testOnlyRevokedIsRevoked() {
        let h = Harness()
        h.register("r.e.v", facts(revocationDate: Date(timeIntervalSince1970: 1_777_593_600)))
        XCTAssertEqual(h.postReceipt("r.e.v", userId: "user_123").status, 201)
        let json = h.send(.get, path).json
        XCTAssertEqual(json?["status"]?.stringValue, "revoked")
        XCTAssertEqual(json?["entitlements"], .array([]))
        XCTAssertEqual(json?["subscriptions"]?[0]?["revocation_date"]?.stringValue, "2026-05-01T00:00:00.000Z")
        XCTAssertEqual(json?["subscriptions"]?[0]?["auto_renew_enabled"], false)
    }

    func testGraceAndRenewalInfoAreRendered() {
        let h = Harness()
        var state = PurchaseState(first: facts(expiresDate: Date(timeIntervalSince1970: 1_780_000_000)))
        state.renewal = RenewalFacts(
            originalTransactionId: "1000000123456000", autoRenewProductId: "com.myapp.pro.monthly", autoRenewStatus: 0,
            expirationIntent: 2, gracePeriodExpiresDate: Date(timeIntervalSince1970: 1_780_500_000),
            isInBillingRetryPeriod: true, environment: .production, signedDate: Date(timeIntervalSince1970: 1_780_000_000),
            payloadJSON: "{}")
        h.purchases.seed(state, owner: "user_123", project: h.project)
        let sub = h.send(.get, path).json?["subscriptions"]?[0]
        XCTAssertEqual(sub?["status"]?.stringValue, "active")
        XCTAssertEqual(sub?["in_grace_period"], true)
        XCTAssertEqual(sub?["in_billing_retry"], true)
        XCTAssertEqual(sub?["auto_renew_enabled"], false)
        XCTAssertEqual(sub?["grace_period_expires_date"]?.stringValue, "2026-06-03T15:20:00.000Z")
        XCTAssertEqual(sub?["current_period_end"]?.stringValue, "2026-05-28T20:26:40.000Z")
        XCTAssertEqual(sub?["expiration_intent"], 2)
        XCTAssertEqual(sub?["auto_renew_product_id"]?.stringValue, "com.myapp.pro.monthly")
        XCTAssertEqual(sub?["entitlements"], ["pro"])
    }

    func testOtherProjectsKeyNeverReadsThisProjectsRows() {
        let h = Harness()
        h.projects.seed(Project(id: FakeProjectStore.uuid(901), name: "Other", bundleId: "com.other",
                                publicKey: Harness.otherPublicKey, createdAt: Harness.now, updatedAt: Harness.now),
                        secretKey: "sk_" + String(repeating: "cd", count: 32))
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "user_123").status, 201)
        let other = h.send(.get, "/v1/subscriptions/\(Harness.otherPublicKey)/user_123")
        XCTAssertEqual(other.json?["status"]?.stringValue, "none")
    }

    // MARK: - Keys

    func testUnknownOrMalformedPublicKeyIs401() {
        let h = Harness()
        for key in ["nope", Harness.otherPublicKey] {
            assertError(h.send(.get, "/v1/subscriptions/\(key)/u"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY",
                        error: "Invalid public key.",
                        suggestion: "Use a valid public key (pk_...) in the URL path.")
        }
    }

    func testSecretKeyRulesWhenNotRequired() {
        let h = Harness()
        XCTAssertEqual(h.send(.get, path).status, 200)
        XCTAssertEqual(h.send(.get, path, headers: [("Authorization", "Bearer " + Harness.secretKey)]).status, 200)
        XCTAssertEqual(h.send(.get, path, headers: [("authorization", "bearer  " + Harness.secretKey)]).status, 200)
        for wrong in ["Bearer sk_" + String(repeating: "00", count: 32), "Bearer nope", "Basic abc", "Bearer",
                      "Bearer " + Harness.publicKey] {
            assertError(h.send(.get, path, headers: [("Authorization", wrong)]), status: 401,
                        code: "AUTH_INVALID_SECRET_KEY", error: "Invalid secret key.")
        }
    }

    func testSecretKeyRequiredForReads() {
        let h = Harness(requireSecret: true)
        assertError(h.send(.get, path), status: 401, code: "AUTH_SECRET_KEY_REQUIRED", error: "Secret key required.")
        assertError(h.send(.get, path, headers: [("Authorization", "Bearer sk_" + String(repeating: "00", count: 32))]),
                    status: 401, code: "AUTH_INVALID_SECRET_KEY")
        XCTAssertEqual(h.send(.get, path, headers: [("Authorization", "Bearer " + Harness.secretKey)]).status, 200)
    }

    func testEmptyOrLongUserIdIs400() {
        let h = Harness()
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/"), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["userId"], "message": "String must contain at least 1 character(s)"]])
        assertError(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/" + String(repeating: "u", count: 257)),
                    status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["userId"], "message": "String must contain at most 256 character(s)"]])
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/" + String(repeating: "u", count: 256)).status, 200)
    }

    func testStatusIsComputedAtReadTime() {
        // Same stored rows, a clock that moves: active until the period ends, expired from that instant.
        let projects = FakeProjectStore()
        let purchases = FakePurchaseStore(projects: projects)
        let project = projects.seed(
            Project(id: FakeProjectStore.uuid(1), name: "A", bundleId: "b", publicKey: Harness.publicKey,
                    createdAt: Harness.now, updatedAt: Harness.now),
            secretKey: Harness.secretKey, products: ["com.myapp.pro.yearly": ["pro"]])
        let ends = Harness.now.addingTimeInterval(5)
        purchases.seed(PurchaseState(first: facts(expiresDate: ends)), owner: "u", project: project)
        let clock = ClockBox(Harness.now)
        var router = Router()
        Routes.register(on: &router, APIDependencies(
            projects: projects, purchases: purchases, verifier: FakeVerifier(), hasher: FakeHasher(), adminToken: nil,
            now: { clock.value }, log: { _ in }))
        let h = Harness()
        h.router = router
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u").json?["status"]?.stringValue, "active")
        clock.value = ends
        let after = h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u").json
        XCTAssertEqual(after?["status"]?.stringValue, "expired")
        XCTAssertEqual(after?["entitlements"], .array([]))
    }
}

import Synchronization

final class ClockBox: Sendable {
    private let date: Mutex<Date>
    init(_ date: Date) { self.date = Mutex(date) }
    var value: Date {
        get { date.withLock { $0 } }
        set { date.withLock { $0 = newValue } }
    }
}
