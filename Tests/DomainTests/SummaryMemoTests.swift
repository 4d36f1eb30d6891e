import Foundation
import XCTest

@testable import Domain

/// A kept answer is given back only while everything the summary reads is the same: the holdings, the user, the
/// project's Sandbox access and app-purchase setting, and what the clock decides (each purchase's evaluation, each
/// grant's activity). A copy of the holdings shares the memo; a new read starts empty.
final class SummaryMemoTests: XCTestCase {
    let answer: [UInt8] = Array(#"{"kept":true}"#.utf8)

    func project(_ sandbox: SandboxAccessPolicy = .all) -> Project {
        var p = Project(id: UUID(), name: "p", bundleId: "b", publicKey: "pk", createdAt: Fixture.t0, updatedAt: Fixture.t0)
        p.sandbox = sandbox
        return p
    }

    func holdings(grantEnds: Double? = nil) -> UserHoldings {
        let renewal = Fixture.renewal(signed: 10, grace: 7200, retry: true)
        let purchase = Fixture.purchase(Fixture.transaction("1", expires: 3600), renewal: renewal)
        let grants = grantEnds.map {
            [Grant(id: UUID(), userId: "u", entitlement: "extra", expiresAt: Fixture.at($0), reason: "r",
                   createdAt: Fixture.t0)]
        } ?? []
        return UserHoldings(purchases: [OwnedPurchase(purchase: purchase, entitlements: ["pro"])], appTransactions: [],
                            grants: grants)
    }

    func testKeptWhileNothingItReadsChanges() {
        let project = project()
        let read = holdings(grantEnds: 600)
        XCTAssertNil(read.memo.answer(read, for: project, userId: "u", at: Fixture.at(10)), "a new read keeps nothing")
        read.memo.keep(answer, read, for: project, userId: "u", at: Fixture.at(10))
        let hit = read  // a read cache hands out copies
        XCTAssertEqual(hit.memo.answer(hit, for: project, userId: "u", at: Fixture.at(500)), answer)
        XCTAssertEqual(hit, read)
    }

    func testTheClockEndsIt() {
        let project = project()
        let read = holdings(grantEnds: 600)
        read.memo.keep(answer, read, for: project, userId: "u", at: Fixture.at(10))
        XCTAssertNil(read.memo.answer(read, for: project, userId: "u", at: Fixture.at(600)), "the grant lapsed")
        let plain = holdings()
        plain.memo.keep(answer, plain, for: project, userId: "u", at: Fixture.at(10))
        XCTAssertEqual(plain.memo.answer(plain, for: project, userId: "u", at: Fixture.at(3599)), answer)
        XCTAssertNil(plain.memo.answer(plain, for: project, userId: "u", at: Fixture.at(3600)), "grace began")
        plain.memo.keep(answer, plain, for: project, userId: "u", at: Fixture.at(3600))
        XCTAssertEqual(plain.memo.answer(plain, for: project, userId: "u", at: Fixture.at(7199)), answer)
        XCTAssertNil(plain.memo.answer(plain, for: project, userId: "u", at: Fixture.at(7200)), "expired")
    }

    func testOtherInputsEndIt() {
        let read = holdings()
        let all = project()
        read.memo.keep(answer, read, for: all, userId: "u", at: Fixture.at(10))
        XCTAssertNil(read.memo.answer(read, for: all, userId: "v", at: Fixture.at(10)), "another user")
        let allowlist = project(SandboxAccessPolicy(access: .allowlist, allowedUserIds: ["u"]))
        XCTAssertNil(read.memo.answer(read, for: allowlist, userId: "u", at: Fixture.at(10)), "Sandbox access changed")
        var setting = all
        setting.appPurchaseEntitlements = AppPurchaseEntitlements(purchasedBeforeVersion: "2", entitlements: ["pro"])
        XCTAssertNil(read.memo.answer(read, for: setting, userId: "u", at: Fixture.at(10)), "the setting changed")
        var changed = read  // shares the memo, but no longer the facts it was kept for
        changed.purchases[0].entitlements = ["other"]
        XCTAssertNil(changed.memo.answer(changed, for: all, userId: "u", at: Fixture.at(10)))
        XCTAssertEqual(read.memo.answer(read, for: all, userId: "u", at: Fixture.at(10)), answer)
    }
}
