@testable import Domain
import Foundation
import XCTest

/// One introductory offer per subscription group per person: the rule on a table of facts, and the input rules.
final class IntroductoryOfferRulesTests: XCTestCase {
    func use(_ id: String, _ product: String, _ group: String?, _ via: IntroductoryOfferIdentity = .userId)
        -> IntroductoryOfferUse
    {
        IntroductoryOfferUse(transactionId: id, productId: product, subscriptionGroup: group, matchedBy: via)
    }

    func testDecisionTable() {
        let monthly = "com.app.pro.monthly"
        typealias Row = (IntroductoryOfferFacts, IntroductoryOfferDecision, UInt)
        let sameProduct = use("1", monthly, "G1", .appAccountToken)
        let sameGroup = use("2", "com.app.pro.yearly", "G1", .appTransactionId)
        let otherGroup = use("3", "com.app.photos.monthly", "G2")
        let rows: [Row] = [
            // Nothing known: eligible.
            (IntroductoryOfferFacts(productGroup: nil, uses: []),
             IntroductoryOfferDecision(eligible: true, reason: .noIntroductoryOfferUsed), #line),
            (IntroductoryOfferFacts(productGroup: "G1", uses: []),
             IntroductoryOfferDecision(eligible: true, reason: .noIntroductoryOfferUsed), #line),
            // This product's offer taken (by any linked Apple account): not eligible, even with the group unknown.
            (IntroductoryOfferFacts(productGroup: nil, uses: [sameProduct]),
             IntroductoryOfferDecision(eligible: false, reason: .usedForProduct, use: sameProduct), #line),
            // Another product of the same group: not eligible.
            (IntroductoryOfferFacts(productGroup: "G1", uses: [otherGroup, sameGroup]),
             IntroductoryOfferDecision(eligible: false, reason: .usedInGroup, use: sameGroup), #line),
            // The product first, whatever the order.
            (IntroductoryOfferFacts(productGroup: "G1", uses: [sameGroup, sameProduct]),
             IntroductoryOfferDecision(eligible: false, reason: .usedForProduct, use: sameProduct), #line),
            // Another group only: eligible.
            (IntroductoryOfferFacts(productGroup: "G1", uses: [otherGroup]),
             IntroductoryOfferDecision(eligible: true, reason: .noIntroductoryOfferUsed), #line),
            // The product's group unknown: another product's offer cannot be placed in it: eligible.
            (IntroductoryOfferFacts(productGroup: nil, uses: [sameGroup]),
             IntroductoryOfferDecision(eligible: true, reason: .noIntroductoryOfferUsed), #line),
            // A redemption without a group never matches a group.
            (IntroductoryOfferFacts(productGroup: "G1", uses: [use("4", "x", nil)]),
             IntroductoryOfferDecision(eligible: true, reason: .noIntroductoryOfferUsed), #line),
        ]
        for (facts, expected, line) in rows {
            XCTAssertEqual(IntroductoryOfferRules.decide(productId: monthly, facts: facts), expected, line: line)
        }
    }

    func testInputRules() {
        XCTAssertEqual(IntroductoryOfferRules.problems(productId: "p", userId: "u", transactionId: nil), [])
        XCTAssertEqual(IntroductoryOfferRules.problems(productId: "p", userId: "u", transactionId: "2000000123"), [])
        XCTAssertEqual(IntroductoryOfferRules.problems(productId: "", userId: "", transactionId: "12a"), [
            FieldProblem(path: ["product_id"], message: "String must contain at least 1 character(s)"),
            FieldProblem(path: ["transaction_id"],
                         message: "Must be 1 to 32 decimal digits (a transaction id or appTransactionId)"),
            FieldProblem(path: ["user_id"], message: "String must contain at least 1 character(s)"),
        ])
        XCTAssertEqual(IntroductoryOfferRules.problems(productId: "p", userId: String(repeating: "u", count: 257),
                                                       transactionId: nil),
                       [FieldProblem(path: ["user_id"], message: "String must contain at most 256 character(s)")])
    }
}
