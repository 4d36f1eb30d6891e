import Foundation
import XCTest

@testable import Domain

/// Sandbox access: the one rule on a table, and what each reader that grants makes of it (the subscriptions
/// summary, an entitlement token's entitlements, the customer timeline, a receipt's answer).
final class SandboxAccessRulesTests: XCTestCase {
    let allowlist = SandboxAccessPolicy(access: .allowlist, allowedUserIds: ["tester", "reviewer"])

    func testWithholdsTable() {
        typealias Row = (StoreEnvironment, String, SandboxAccessPolicy, Bool, UInt)
        let rows: [Row] = [
            (.sandbox, "stranger", .all, false, #line),                  // the default: everyone
            (.sandbox, "stranger", allowlist, true, #line),              // not on the list: withheld
            (.sandbox, "tester", allowlist, false, #line),               // on the list
            (.sandbox, "Tester", allowlist, true, #line),                // ids are exact
            (.production, "stranger", allowlist, false, #line),         // only Sandbox is ever withheld
            (.xcode, "stranger", allowlist, false, #line),               // Xcode data has allow_xcode
            (.localTesting, "stranger", allowlist, false, #line),
            (.sandbox, "tester", SandboxAccessPolicy(access: .all, allowedUserIds: []), false, #line),
            (.sandbox, "", allowlist, true, #line),                      // no user: on no list
        ]
        for (environment, user, policy, expected, line) in rows {
            XCTAssertEqual(SandboxAccessRules.withholds(environment, userId: user, policy: policy), expected, line: line)
        }
        XCTAssertEqual(SandboxAccessPolicy(access: .allowlist, allowedUserIds: ["b", "a", "b"]).allowedUserIds, ["a", "b"])
    }

    func testInputRules() {
        XCTAssertEqual(SandboxAccessRules.problems(allowedUserIds: ["a", String(repeating: "u", count: 256)]), [])
        XCTAssertEqual(SandboxAccessRules.problems(allowedUserIds: ["", String(repeating: "u", count: 257)]), [
            FieldProblem(path: ["sandbox_allowed_user_ids", "0"], message: "String must contain at least 1 character(s)"),
            FieldProblem(path: ["sandbox_allowed_user_ids", "1"], message: "String must contain at most 256 character(s)"),
        ])
        XCTAssertEqual(SandboxAccessRules.problems(allowedUserIds: (0...1000).map(String.init)),
                       [FieldProblem(path: ["sandbox_allowed_user_ids"], message: "Array must contain at most 1000 element(s)")])
    }

    func project(_ policy: SandboxAccessPolicy) -> Project {
        var p = Project(id: UUID(), name: "p", bundleId: "b", publicKey: "pk", createdAt: Fixture.t0, updatedAt: Fixture.t0)
        p.sandbox = policy
        return p
    }

    func testSummaryListsAWithheldPurchaseButCountsItForNothing() {
        var production = Fixture.transaction("2", original: "prod", expires: 100)
        production.environment = .production
        let sandbox = OwnedPurchase(purchase: Fixture.purchase(Fixture.transaction("1", original: "sbx", expires: 100)),
                                    entitlements: ["pro"])
        let live = OwnedPurchase(purchase: Fixture.purchase(production), entitlements: ["basic"])
        let holdings = UserHoldings(purchases: [sandbox], appTransactions: [])

        // Only a withheld purchase: status none, nothing granted, the purchase listed with its reason.
        let withheld = UserEntitlementSummary.summarize(holdings, for: project(allowlist), userId: "stranger",
                                                        at: Fixture.at(10))
        XCTAssertEqual(withheld.status, .none)
        XCTAssertEqual(withheld.entitlements, [])
        XCTAssertEqual(withheld.purchases.map(\.withheldReason), ["sandbox_user_not_allowed"])
        XCTAssertEqual(withheld.purchases.map(\.evaluation.status), [.active], "the facts' status is kept")
        XCTAssertEqual(EntitlementTokenRules.tokenEntitlements(withheld), [])
        // The same user allowlisted, and the default: granted.
        for (policy, user) in [(allowlist, "tester"), (SandboxAccessPolicy.all, "stranger")] {
            let granted = UserEntitlementSummary.summarize(holdings, for: project(policy), userId: user, at: Fixture.at(10))
            XCTAssertEqual(granted.status, .active)
            XCTAssertEqual(granted.entitlements, ["pro"])
            XCTAssertEqual(granted.purchases.map(\.withheldReason), [nil])
        }
        // A Production purchase beside it still grants.
        let mixed = UserEntitlementSummary.summarize(UserHoldings(purchases: [sandbox, live], appTransactions: []),
                                                     for: project(allowlist), userId: "stranger", at: Fixture.at(10))
        XCTAssertEqual(mixed.status, .active)
        XCTAssertEqual(mixed.entitlements, ["basic"])
        // Expired production, withheld sandbox active: the status is the production purchase's.
        let ended = UserEntitlementSummary.summarize(UserHoldings(purchases: [sandbox, live], appTransactions: []),
                                                     for: project(allowlist), userId: "stranger", at: Fixture.at(200))
        XCTAssertEqual(ended.status, .expired)
    }

    func testTimelineSaysWhy() {
        let purchase = Fixture.purchase(Fixture.transaction("1", original: "sbx", expires: 100))
        var facts = CustomerFacts(userId: "stranger")
        facts.purchases = [HeldPurchase(purchase: purchase, entitlements: ["pro"], deviceId: nil, boundAt: Fixture.t0,
                                        revokedAt: nil)]
        XCTAssertEqual(TimelineRules.explanations(facts, setting: nil, sandbox: allowlist, at: Fixture.at(10)), [
            EntitlementExplanation(id: "pro", active: false, reason: "Not granted: transaction 1 (pro.monthly) is a "
                + "Sandbox purchase, and this user is not in the project's sandbox_allowed_user_ids "
                + "(sandbox_access: allowlist)."),
        ])
        XCTAssertEqual(TimelineRules.explanations(facts, setting: nil, at: Fixture.at(10)).map(\.active), [true])
        let binding = TimelineRules.events(facts, setting: nil, sandbox: allowlist, at: Fixture.at(10))
            .first { $0.type == "binding" }
        XCTAssertEqual(binding?.effect, "No entitlement: a Sandbox purchase, and this user is not in the project's "
            + "sandbox_allowed_user_ids (sandbox_access: allowlist).")
    }
}
