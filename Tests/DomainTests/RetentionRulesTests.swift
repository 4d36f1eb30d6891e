import Foundation
import XCTest

@testable import Domain

/// Retention rules as tables: facts and `now` → the first matching rule, freshness at the window's edges, bounds,
/// and the timeline's sentence for a decision.
final class RetentionRulesTests: XCTestCase {
    /// 2026-11-24T10:00:00Z.
    let now = Date(timeIntervalSince1970: 1_795_514_400)
    func at(_ days: Double) -> Date { now.addingTimeInterval(days * 86_400) }
    let m = UUID(uuidString: "11111111-1111-4111-8111-111111111111") ?? UUID()

    func facts(product: String = "pro.monthly", locale: String = "en-US", known: Bool = true, first: Double? = -10,
               renewals: Int? = 0, refunded: Bool = false, retry: Bool = false, offers: Int = 0) -> RetentionFacts {
        RetentionFacts(productId: product, locale: locale, purchaseKnown: known, userId: known ? "u1" : nil,
                       firstPurchaseDate: first.map(at), renewals: renewals, refunded: refunded, inBillingRetry: retry,
                       offersUsed: offers)
    }

    func testEachConditionMatchesExactlyItsFacts() {
        let cases: [(String, RetentionCondition, RetentionFacts, Bool)] = [
            ("no condition", RetentionCondition(), facts(known: false, first: nil, renewals: nil), true),
            ("product in", RetentionCondition(productIds: ["pro.monthly"]), facts(), true),
            ("product out", RetentionCondition(productIds: ["pro.yearly"]), facts(), false),
            ("locale prefix, any case", RetentionCondition(localePrefixes: ["FR"]), facts(locale: "fr-CA"), true),
            ("locale other", RetentionCondition(localePrefixes: ["fr"]), facts(locale: "en-FR"), false),
            ("tenure ≥ 10 at day 10", RetentionCondition(minTenureDays: 10), facts(first: -10), true),
            ("tenure ≥ 10 at 9.99 days", RetentionCondition(minTenureDays: 10), facts(first: -9.99), false),
            ("tenure ≤ 9 at day 10", RetentionCondition(maxTenureDays: 9), facts(first: -10), false),
            ("tenure unknown", RetentionCondition(maxTenureDays: 1000), facts(known: false, first: nil), false),
            ("future first purchase is day 0", RetentionCondition(maxTenureDays: 0), facts(first: 2), true),
            ("renewals ≥ 3 with 3", RetentionCondition(minRenewals: 3), facts(renewals: 3), true),
            ("renewals ≥ 3 with 2", RetentionCondition(minRenewals: 3), facts(renewals: 2), false),
            ("renewals ≤ 1 with 2", RetentionCondition(maxRenewals: 1), facts(renewals: 2), false),
            ("renewals unknown", RetentionCondition(minRenewals: 0), facts(renewals: nil), false),
            ("refunded wanted", RetentionCondition(refunded: true), facts(refunded: true), true),
            ("no refund wanted", RetentionCondition(refunded: false), facts(refunded: true), false),
            ("billing retry", RetentionCondition(inBillingRetry: true), facts(retry: true), true),
            ("not in billing retry", RetentionCondition(inBillingRetry: false), facts(retry: true), false),
            ("offers used ≤ 0 with 1", RetentionCondition(maxOffersUsed: 0), facts(offers: 1), false),
            ("offers used ≤ 1 with 1", RetentionCondition(maxOffersUsed: 1), facts(offers: 1), true),
            ("all together", RetentionCondition(productIds: ["pro.monthly"], localePrefixes: ["en"], minTenureDays: 5,
                                                maxRenewals: 2, refunded: false, inBillingRetry: false, maxOffersUsed: 0),
             facts(), true),
        ]
        for (label, condition, facts, expected) in cases {
            XCTAssertEqual(RetentionRules.matches(condition, facts, at: now), expected, label)
        }
    }

    func testTheFirstMatchWinsAndTimeIsAParameter() {
        let rules = [
            RetentionRule(name: "young", when: RetentionCondition(maxTenureDays: 7), action: .message(messageId: m)),
            RetentionRule(name: "switch", when: RetentionCondition(productIds: ["pro.monthly"]),
                          action: .alternateProduct(productId: "pro.yearly", messageId: m)),
            RetentionRule(name: "offer", action: .promotionalOffer(offerId: "WB", messageId: m)),
        ]
        let f = facts(first: -5)
        XCTAssertEqual(RetentionRules.decide(rules, facts: f, at: now), RetentionDecision(
            ruleIndex: 0, ruleName: "young", action: .message(messageId: m),
            reason: "Rule 1 \"young\" matched: tenure ≤ 7 days."))
        // Three days later the same facts are eight days old: the next rule.
        XCTAssertEqual(RetentionRules.decide(rules, facts: f, at: at(3)), RetentionDecision(
            ruleIndex: 1, ruleName: "switch", action: .alternateProduct(productId: "pro.yearly", messageId: m),
            reason: "Rule 2 \"switch\" matched: product in [pro.monthly]."))
        XCTAssertEqual(RetentionRules.decide(rules, facts: facts(product: "pro.weekly", first: -30), at: now).ruleName,
                       "offer")
        XCTAssertEqual(RetentionRules.decide(Array(rules.prefix(2)), facts: facts(product: "x", first: -30), at: now),
                       RetentionDecision(ruleIndex: nil, ruleName: nil, action: nil,
                                         reason: "None of the 2 retention rules matched: Apple shows the default message."))
        XCTAssertEqual(RetentionRules.decide([], facts: f, at: now).reason,
                       "The project has no retention rules: Apple shows the default message.")
    }

    func testFreshnessWindowEdges() {
        let cases: [(Double, Bool)] = [(0, true), (-300, true), (-300.001, false), (60, true), (60.001, false),
                                        (-86_400, false)]
        for (offset, fresh) in cases {
            XCTAssertEqual(RetentionRules.isFresh(signedDate: now.addingTimeInterval(offset), at: now), fresh,
                           "signed \(offset) s from now")
        }
    }

    func testBoundsAreNamedByPath() {
        let long = String(repeating: "x", count: 101)
        let rules = [
            RetentionRule(name: long, when: RetentionCondition(productIds: [], localePrefixes: ["en\u{0}"],
                                                               minTenureDays: -1, maxOffersUsed: 100_001),
                          action: .promotionalOffer(offerId: "", messageId: m)),
            RetentionRule(name: "ok", action: .alternateProduct(productId: "p", messageId: m)),
        ]
        XCTAssertEqual(RetentionRules.problems(rules).map(\.path), [
            ["rules", "0", "name"], ["rules", "0", "when", "product_ids"], ["rules", "0", "when", "locale_prefixes", "0"],
            ["rules", "0", "when", "min_tenure_days"], ["rules", "0", "when", "max_offers_used"],
            ["rules", "0", "action", "promotional_offer_id"],
        ])
        XCTAssertEqual(RetentionRules.problems(Array(repeating: rules[1], count: 101)).first?.path, ["rules"])
    }

    func testADecisionIsATimelineEventWithItsReason() {
        var f = CustomerFacts(userId: "u1")
        f.retentionDecisions = [
            RetentionDecisionRecord(originalTransactionId: "2000000100", productId: "pro.monthly",
                                    action: "promotional_offer", reason: "Rule 1 \"x\" matched: any subscriber.", at: now),
            RetentionDecisionRecord(originalTransactionId: "2000000100", productId: "pro.monthly", action: "default",
                                    reason: "None of the 1 retention rules matched: Apple shows the default message.",
                                    at: at(1)),
        ]
        XCTAssertFalse(f.isEmpty)
        XCTAssertEqual(TimelineRules.events(f, setting: nil, at: at(2)), [
            TimelineEvent(at: now, source: "retention", type: "retention_decision", transactionId: "2000000100",
                          summary: "The App Store asked what to show before a possible cancellation of pro.monthly: "
                            + "promotional offer. Rule 1 \"x\" matched: any subscriber.", effect: "None."),
            TimelineEvent(at: at(1), source: "retention", type: "retention_decision", transactionId: "2000000100",
                          summary: "The App Store asked what to show before a possible cancellation of pro.monthly: "
                            + "the default message. None of the 1 retention rules matched: Apple shows the default "
                            + "message.", effect: "None."),
        ])
    }
}
