import Foundation
import Specification
import XCTest

@testable import Domain

/// Builders shared by the Domain tests: times are offsets in seconds from a fixed instant.
enum Fixture {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    static func transaction(
        _ id: String, original: String = "1000", product: String = "pro.monthly", type: ProductType = .autoRenewable,
        purchase: Double = 0, expires: Double? = 3600, revoked: Double? = nil, signed: Double? = nil
    ) -> TransactionFacts {
        TransactionFacts(
            transactionId: id, originalTransactionId: original, productId: product, type: type,
            environment: .sandbox, purchaseDate: at(purchase), expiresDate: expires.map(at),
            revocationDate: revoked.map(at), signedDate: at(signed ?? purchase), payloadJSON: "{}")
    }

    static func renewal(
        original: String = "1000", signed: Double, autoRenew: Int? = 1, grace: Double? = nil, retry: Bool? = nil
    ) -> RenewalFacts {
        RenewalFacts(
            originalTransactionId: original, autoRenewStatus: autoRenew, gracePeriodExpiresDate: grace.map(at),
            isInBillingRetryPeriod: retry, environment: .sandbox, signedDate: at(signed), payloadJSON: "{}")
    }

    static func purchase(_ t: TransactionFacts, renewal: RenewalFacts? = nil) -> PurchaseState {
        var p = PurchaseState(first: t)
        p.renewal = renewal
        return p
    }
}

final class StatusRulesTests: XCTestCase {
    func testSingleTransactionStatusTable() {
        let cases: [(TransactionFacts, Double, EntitlementStatus, UInt)] = [
            (Fixture.transaction("1", expires: 3600), 10, .active, #line),
            (Fixture.transaction("1", expires: 3600), 3600, .expired, #line),  // the end instant is no longer active
            (Fixture.transaction("1", expires: 3600), 3601, .expired, #line),
            (Fixture.transaction("1", type: .nonConsumable, expires: nil), 1e9, .active, #line),
            (Fixture.transaction("1", type: .consumable, expires: nil), 1e9, .active, #line),
            (Fixture.transaction("1", expires: 3600, revoked: 60), 10, .revoked, #line),
            (Fixture.transaction("1", type: .nonConsumable, expires: nil, revoked: 60), 10, .revoked, #line),
        ]
        for (t, now, expected, line) in cases {
            XCTAssertEqual(StatusRules.evaluate(t, at: Fixture.at(now)), expected, line: line)
        }
    }

    /// `purchase` on a monthly plan with a 12-month commitment that ends long after the period.
    func committed(_ purchase: PurchaseState) -> PurchaseState {
        var purchase = purchase
        purchase.billingPlan = "MONTHLY"
        purchase.commitment = CommitmentPlan(billingPeriod: 3, totalBillingPeriods: 12,
                                             expiresDate: Fixture.at(9 * 3600), willRenew: true)
        return purchase
    }

    func testPurchaseStatusTable() {
        let sub = Fixture.transaction("1", expires: 3600)
        typealias Row = (PurchaseState, Double, PurchaseEvaluation, UInt)
        let rows: [Row] = [
            // Period running; auto-renew assumed on without renewal info.
            (Fixture.purchase(sub), 10,
             PurchaseEvaluation(status: .active, autoRenewEnabled: true, accessEndsAt: Fixture.at(3600)), #line),
            // Renewal info turned auto-renew off: still active until the end.
            (Fixture.purchase(sub, renewal: Fixture.renewal(signed: 5, autoRenew: 0)), 10,
             PurchaseEvaluation(status: .active, autoRenewEnabled: false, accessEndsAt: Fixture.at(3600)), #line),
            // Expired, nothing else known.
            (Fixture.purchase(sub), 4000,
             PurchaseEvaluation(status: .expired, autoRenewEnabled: true, accessEndsAt: Fixture.at(3600)), #line),
            // Billing grace period running: active until the grace end.
            (Fixture.purchase(sub, renewal: Fixture.renewal(signed: 3601, grace: 7200, retry: true)), 4000,
             PurchaseEvaluation(status: .active, inGracePeriod: true, inBillingRetry: true, autoRenewEnabled: true,
                                accessEndsAt: Fixture.at(7200)), #line),
            // Grace announced while the period still runs: access ends at the grace end, as webhooks announce it.
            (Fixture.purchase(sub, renewal: Fixture.renewal(signed: 3000, grace: 7200, retry: true)), 3000,
             PurchaseEvaluation(status: .active, autoRenewEnabled: true, accessEndsAt: Fixture.at(7200)), #line),
            // Grace period over, still retrying: expired.
            (Fixture.purchase(sub, renewal: Fixture.renewal(signed: 3601, grace: 7200, retry: true)), 7200,
             PurchaseEvaluation(status: .expired, inBillingRetry: true, autoRenewEnabled: true,
                                accessEndsAt: Fixture.at(7200)), #line),
            // Billing retry without grace: expired at once.
            (Fixture.purchase(sub, renewal: Fixture.renewal(signed: 3601, retry: true)), 3700,
             PurchaseEvaluation(status: .expired, inBillingRetry: true, autoRenewEnabled: true,
                                accessEndsAt: Fixture.at(3600)), #line),
            // A monthly plan with a 12-month commitment in billing retry, Apple naming no grace period: no grace is
            // granted (the commitment keeps no access of its own), expired at once.
            (committed(Fixture.purchase(sub, renewal: Fixture.renewal(signed: 3601, retry: true))), 3700,
             PurchaseEvaluation(status: .expired, inBillingRetry: true, autoRenewEnabled: true,
                                accessEndsAt: Fixture.at(3600)), #line),
            // The same plan with Apple's grace period: active until its end, as any plan.
            (committed(Fixture.purchase(sub, renewal: Fixture.renewal(signed: 3601, grace: 7200, retry: true))), 4000,
             PurchaseEvaluation(status: .active, inGracePeriod: true, inBillingRetry: true, autoRenewEnabled: true,
                                accessEndsAt: Fixture.at(7200)), #line),
            // Revoked wins over a running period and a grace period.
            (Fixture.purchase(Fixture.transaction("1", expires: 3600, revoked: 100),
                              renewal: Fixture.renewal(signed: 100, grace: 7200)), 200,
             PurchaseEvaluation(status: .revoked, autoRenewEnabled: false, accessEndsAt: Fixture.at(100)), #line),
            // Lifetime purchase: active, never auto-renews.
            (Fixture.purchase(Fixture.transaction("1", type: .nonConsumable, expires: nil)), 1e9,
             PurchaseEvaluation(status: .active, autoRenewEnabled: false, accessEndsAt: nil), #line),
            // Non-renewing subscription: expires like any period, never auto-renews, grace ignored.
            (Fixture.purchase(Fixture.transaction("1", type: .nonRenewing, expires: 3600),
                              renewal: Fixture.renewal(signed: 1, grace: 7200)), 4000,
             PurchaseEvaluation(status: .expired, autoRenewEnabled: false, accessEndsAt: Fixture.at(3600)), #line),
        ]
        for (purchase, now, expected, line) in rows {
            XCTAssertEqual(StatusRules.evaluate(purchase, at: Fixture.at(now)), expected, line: line)
        }
    }

    func testStatusChangesAtReadTimeWithoutNewFacts() {
        let p = Fixture.purchase(Fixture.transaction("1", expires: 60))
        XCTAssertEqual(StatusRules.evaluate(p, at: Fixture.at(59.999)).status, .active)
        XCTAssertEqual(StatusRules.evaluate(p, at: Fixture.at(60.001)).status, .expired)
    }
}
