import Foundation
import XCTest

@testable import Domain

/// The customer timeline's explanations and events as tables of facts → exact sentences, and the grant rules.
final class TimelineRulesTests: XCTestCase {
    /// 2026-11-24T10:00:00Z.
    let now = Date(timeIntervalSince1970: 1_795_514_400)
    func at(_ days: Double) -> Date { now.addingTimeInterval(days * 86_400) }

    func purchase(_ latest: String = "2000000123", original: String = "2000000100",
                  product: String = "com.example.pro.monthly", type: ProductType = .autoRenewable,
                  purchased: Double = -10, expires: Double? = 20, revoked: Double? = nil,
                  revocationType: RevocationType? = nil, revocationReason: Int? = 0,
                  renewal: RenewalFacts? = nil) -> PurchaseState {
        var state = PurchaseState(
            originalTransactionId: original, latestTransactionId: latest, productId: product, type: type,
            environment: .sandbox, purchaseDate: at(purchased), expiresDate: expires.map(at), revocationDate: revoked.map(at),
            latestSignedDate: at(purchased), renewal: renewal)
        state.revocationType = revocationType
        // A revocation is a refund (reason 0, "other") unless a case says otherwise, as Apple's refunds carry one.
        state.revocationReason = revoked == nil ? nil : revocationReason
        return state
    }

    func facts(_ held: [HeldPurchase] = [], grants: [Grant] = [], moves: [OwnershipEventRecord] = []) -> CustomerFacts {
        var f = CustomerFacts(userId: "u1")
        f.purchases = held
        f.grants = grants
        f.ownershipEvents = moves
        return f
    }

    func held(_ p: PurchaseState, _ entitlements: [String] = ["pro"], lost: Double? = nil) -> HeldPurchase {
        HeldPurchase(purchase: p, entitlements: entitlements, deviceId: nil, boundAt: p.purchaseDate, revokedAt: lost.map(at))
    }

    func grant(_ entitlement: String = "pro", expires: Double? = 30, removed: Double? = nil,
               reason: String = "support ticket 42") -> Grant {
        Grant(id: UUID(), userId: "u1", entitlement: entitlement, expiresAt: expires.map(at), reason: reason,
              createdAt: at(-1), revokedAt: removed.map(at))
    }

    func testDatesAreUTCWholeSeconds() {
        XCTAssertEqual(TimelineRules.text(Date(timeIntervalSince1970: 1_798_106_400.999)), "2026-12-24T10:00:00Z")
        XCTAssertEqual(TimelineRules.text(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00Z")
        XCTAssertEqual(TimelineRules.text(Date(timeIntervalSince1970: -1)), "1969-12-31T23:59:59Z")
        XCTAssertEqual(TimelineRules.text(Date(timeIntervalSince1970: 951_782_400)), "2000-02-29T00:00:00Z")
        XCTAssertEqual(TimelineRules.text(.distantFuture), "4001-01-01T00:00:00Z")
        XCTAssertEqual(TimelineRules.text(Date(timeIntervalSince1970: 1e300)), "9999-12-31T23:59:59Z")  // clamped, no trap
        XCTAssertEqual(TimelineRules.text(Date(timeIntervalSince1970: -1e300)), "0001-01-01T00:00:00Z")
    }

    func testOneSentencePerEntitlement() {
        let cases: [(String, CustomerFacts, [EntitlementExplanation], UInt)] = [
            ("active purchase", facts([held(purchase())]),
             [.init(id: "pro", active: true,
                    reason: "Granted by transaction 2000000123 (com.example.pro.monthly) until 2026-12-14T10:00:00Z.")],
             #line),
            ("lifetime", facts([held(purchase(product: "com.example.lifetime", type: .nonConsumable, expires: nil),
                                      ["lifetime"])]),
             [.init(id: "lifetime", active: true,
                    reason: "Granted by transaction 2000000123 (com.example.lifetime) with no expiry.")], #line),
            ("refunded", facts([held(purchase(revoked: -4))]),
             [.init(id: "pro", active: false,
                    reason: "Not active: transaction 2000000123 was refunded on 2026-11-20T10:00:00Z.")], #line),
            ("family revoke", facts([held(purchase(revoked: -4, revocationType: .familyRevoke))]),
             [.init(id: "pro", active: false,
                    reason: "Not active: Family Sharing access through transaction 2000000123 was revoked on "
                        + "2026-11-20T10:00:00Z.")], #line),
            ("expired", facts([held(purchase(purchased: -40, expires: -10))]),
             [.init(id: "pro", active: false,
                    reason: "Not active: transaction 2000000123 (com.example.pro.monthly) expired on 2026-11-14T10:00:00Z.")],
             #line),
            ("transferred", facts([held(purchase(), lost: -2)], moves: [
                OwnershipEventRecord(originalTransactionId: "2000000100", fromUserId: "u1", toUserId: "u2",
                                     policy: "transfer", at: at(-2))]),
             [.init(id: "pro", active: false,
                    reason: "Not active: the purchase moved to user u2 on 2026-11-22T10:00:00Z (transfer policy).")], #line),
            ("transferred to an erased user", facts([held(purchase(), lost: -2)], moves: [
                OwnershipEventRecord(originalTransactionId: "2000000100", fromUserId: "u1", toUserId: nil,
                                     policy: "transfer", at: at(-2))]),
             [.init(id: "pro", active: false,
                    reason: "Not active: the purchase moved to another user on 2026-11-22T10:00:00Z (transfer policy).")],
             #line),
            ("grant", facts(grants: [grant()]),
             [.init(id: "pro", active: true,
                    reason: "Granted manually by an admin until 2026-12-24T10:00:00Z (reason: support ticket 42).")], #line),
            ("grant without end", facts(grants: [grant(expires: nil)]),
             [.init(id: "pro", active: true,
                    reason: "Granted manually by an admin with no expiry (reason: support ticket 42).")], #line),
            ("grant removed", facts(grants: [grant(removed: -0.5)]),
             [.init(id: "pro", active: false,
                    reason: "Not active: the manual grant was removed on 2026-11-23T22:00:00Z (reason: support ticket 42).")],
             #line),
            ("grant expired", facts(grants: [grant(expires: -0.25)]),
             [.init(id: "pro", active: false,
                    reason: "Not active: the manual grant expired on 2026-11-24T04:00:00Z (reason: support ticket 42).")],
             #line),
            // Several sources: the active one that lasts longest explains; else the one that ended last.
            ("grant outlasts purchase", facts([held(purchase())], grants: [grant()]),
             [.init(id: "pro", active: true,
                    reason: "Granted manually by an admin until 2026-12-24T10:00:00Z (reason: support ticket 42).")], #line),
            ("purchase outlasts grant", facts([held(purchase(expires: 40))], grants: [grant()]),
             [.init(id: "pro", active: true,
                    reason: "Granted by transaction 2000000123 (com.example.pro.monthly) until 2027-01-03T10:00:00Z.")],
             #line),
            ("refund after removal", facts([held(purchase(revoked: -0.1))], grants: [grant(removed: -0.5)]),
             [.init(id: "pro", active: false,
                    reason: "Not active: transaction 2000000123 was refunded on 2026-11-24T07:36:00Z.")], #line),
            ("two entitlements, sorted", facts([held(purchase(), ["yearly", "pro"])], grants: [grant("extra", expires: nil)]),
             [.init(id: "extra", active: true,
                    reason: "Granted manually by an admin with no expiry (reason: support ticket 42)."),
              .init(id: "pro", active: true,
                    reason: "Granted by transaction 2000000123 (com.example.pro.monthly) until 2026-12-14T10:00:00Z."),
              .init(id: "yearly", active: true,
                    reason: "Granted by transaction 2000000123 (com.example.pro.monthly) until 2026-12-14T10:00:00Z.")],
             #line),
            ("nothing stored", facts(), [], #line),
        ]
        for (name, f, expected, line) in cases {
            XCTAssertEqual(TimelineRules.explanations(f, setting: nil, at: now), expected, name, line: line)
        }
    }

    func testGracePeriodAndBillingRetry() {
        let grace = RenewalFacts(originalTransactionId: "2000000100", gracePeriodExpiresDate: at(5),
                                 isInBillingRetryPeriod: true, environment: .sandbox, signedDate: at(-1), payloadJSON: "{}")
        XCTAssertEqual(TimelineRules.explanations(facts([held(purchase(expires: -1, renewal: grace))]), setting: nil, at: now),
                       [.init(id: "pro", active: true,
                              reason: "Granted by transaction 2000000123 (com.example.pro.monthly) in the billing grace "
                                + "period until 2026-11-29T10:00:00Z.")])
        var retry = grace
        retry.gracePeriodExpiresDate = nil
        XCTAssertEqual(TimelineRules.explanations(facts([held(purchase(expires: -1, renewal: retry))]), setting: nil, at: now),
                       [.init(id: "pro", active: false,
                              reason: "Not active: transaction 2000000123 (com.example.pro.monthly) expired on "
                                + "2026-11-23T10:00:00Z. Apple is retrying the payment (billing retry).")])
    }

    func testAppPurchaseExplains() {
        var f = facts()
        f.appTransactions = [AppTransactionRecord(
            appTransaction: StoredAppTransaction(appTransactionId: "705", environment: .sandbox,
                                                 originalApplicationVersion: "1.4", originalPurchaseDate: at(-400)),
            firstSeenAt: at(-3))]
        let setting = AppPurchaseEntitlements(purchasedBeforeVersion: "2.0", entitlements: ["legacy"])
        XCTAssertEqual(TimelineRules.explanations(f, setting: setting, at: now), [
            .init(id: "legacy", active: true,
                  reason: "Granted by app transaction 705 (first installed at version 1.4, before 2.0)."),
        ])
        XCTAssertEqual(TimelineRules.explanations(f, setting: nil, at: now), [])
        XCTAssertEqual(TimelineRules.events(f, setting: setting, at: now).map(\.summary),
                       ["App transaction 705 (first installed at version 1.4) bound to this user."])
    }

    func testEventsAreOldestFirstWithExactTexts() {
        var f = facts([held(purchase("2000000123", original: "2000000100", purchased: -40, expires: -10))],
                      grants: [grant(removed: -0.5)])
        f.productEntitlements = ["com.example.pro.monthly": ["pro"]]
        f.transactions = [
            TransactionRecord(transactionId: "2000000100", originalTransactionId: "2000000100", environment: .sandbox,
                              productId: "com.example.pro.monthly", purchaseDate: at(-70), expiresDate: at(-40),
                              revocationDate: nil, revocationType: nil, source: "receipt", firstSeenAt: at(-70),
                              payloadJSON: "{}"),
            TransactionRecord(transactionId: "2000000123", originalTransactionId: "2000000100", environment: .sandbox,
                              productId: "com.example.pro.monthly", purchaseDate: at(-40), expiresDate: at(-10),
                              revocationDate: at(-20), revocationType: .refundFull, source: "notification",
                              firstSeenAt: at(-40), payloadJSON: "{}"),
        ]
        f.notifications = [NotificationRecord(notificationUUID: UUID(), type: "REFUND", subtype: nil,
                                              originalTransactionId: "2000000100", receivedAt: at(-20), source: "notification")]
        let events = TimelineRules.events(f, setting: nil, at: now)
        XCTAssertEqual(events.map { "\($0.source) \($0.type) \($0.transactionId ?? "-"): \($0.summary) → \($0.effect)" }, [
            "receipt purchase 2000000100: Purchased com.example.pro.monthly (transaction 2000000100). → "
                + "Gives pro until 2026-10-15T10:00:00Z.",
            // Same instant as the renewal (the test binds at the latest purchase date): facts order, bindings first.
            "ownership binding 2000000100: Purchase 2000000100 bound to this user. → Gives pro while the purchase is active.",
            "notification renewal 2000000123: Renewed com.example.pro.monthly (transaction 2000000123). → "
                + "Gives pro until 2026-11-14T10:00:00Z.",
            "notification refund 2000000123: Transaction 2000000123 was refunded. → Ends pro.",
            "notification notification 2000000100: App Store notification REFUND about purchase 2000000100. → Ends access.",
            "admin grant -: An admin granted pro (reason: support ticket 42). → Gives pro until 2026-12-24T10:00:00Z.",
            "admin grant_removed -: An admin removed the grant of pro (reason: support ticket 42). → "
                + "Ends pro unless another source gives it.",
        ])
        XCTAssertEqual(events.map(\.at), events.map(\.at).sorted())
    }

    func testARevocationWithoutReasonOrTypeIsNotCalledARefund() {
        var p = purchase("2000000300", original: "2000000300", purchased: -40, expires: 20)
        p.revocationDate = at(-5)
        p.revocationReason = nil
        p.revocationType = nil
        var f = facts([held(p)], grants: [])
        f.productEntitlements = ["com.example.pro.monthly": ["pro"]]
        f.transactions = [
            TransactionRecord(transactionId: "2000000300", originalTransactionId: "2000000300", environment: .sandbox,
                              productId: "com.example.pro.monthly", purchaseDate: at(-40), expiresDate: at(20),
                              revocationDate: at(-5), revocationType: nil, source: "notification", firstSeenAt: at(-40),
                              payloadJSON: "{}", revocationReason: nil),
            TransactionRecord(transactionId: "2000000301", originalTransactionId: "2000000301", environment: .sandbox,
                              productId: "com.example.pro.monthly", purchaseDate: at(-40), expiresDate: at(20),
                              revocationDate: at(-4), revocationType: nil, source: "notification", firstSeenAt: at(-40),
                              payloadJSON: "{}", revocationReason: 0),
        ]
        let events = TimelineRules.events(f, setting: nil, at: now).filter { $0.type == "revocation" || $0.type == "refund" }
        XCTAssertEqual(events.map { "\($0.type) \($0.transactionId ?? "-"): \($0.summary) → \($0.effect)" }, [
            "revocation 2000000300: Apple revoked transaction 2000000300 without a refund (e.g. an upgrade to another "
                + "product). → Ends pro.",
            "refund 2000000301: Transaction 2000000301 was refunded. → Ends pro.",
        ])
    }

    func testGrantRules() {
        let ok = NewGrant(userId: "u1", entitlement: "pro", expiresAt: at(1), reason: "support ticket 42")
        XCTAssertEqual(GrantRules.problems(in: ok, at: now), [])
        var bad = ok
        bad.userId = ""
        bad.entitlement = String(repeating: "e", count: 129)
        bad.reason = ""
        bad.expiresAt = now
        XCTAssertEqual(GrantRules.problems(in: bad, at: now), [
            FieldProblem(path: ["userId"], message: "String must contain at least 1 character(s)"),
            FieldProblem(path: ["entitlement"], message: "String must contain at most 128 character(s)"),
            FieldProblem(path: ["reason"], message: "String must contain at least 1 character(s)"),
            FieldProblem(path: ["expires_at"], message: "Must be in the future"),
        ])
        XCTAssertEqual(GrantRules.problems(userId: "a\u{0}b"),  // the CLI's way in; the router refuses %00 itself
                       [FieldProblem(path: ["userId"], message: "String must not contain NUL characters")])
        XCTAssertTrue(grant().isActive(at: now))
        XCTAssertFalse(grant(expires: 0).isActive(at: now))  // ends exactly now: over
        XCTAssertFalse(grant(removed: -1).isActive(at: now))
    }

    func testGrantsJoinTheSummary() {
        let holdings = UserHoldings(purchases: [], appTransactions: [], grants: [grant(), grant("old", expires: -1)])
        let summary = UserEntitlementSummary.summarize(holdings, setting: nil, at: now)
        XCTAssertEqual(summary.status, .active)
        XCTAssertEqual(summary.entitlements, ["pro"])
        XCTAssertEqual(summary.grants.map { $0.active }, [true, false])
    }
}
