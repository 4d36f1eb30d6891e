import Foundation
import Specification
import XCTest

@testable import Domain

final class UserEntitlementSummaryTests: XCTestCase {
    private func owned(_ t: TransactionFacts, _ entitlements: [String]) -> OwnedPurchase {
        OwnedPurchase(purchase: Fixture.purchase(t), entitlements: entitlements)
    }

    func testNoPurchasesIsNone() {
        let s = UserEntitlementSummary.summarize([], at: Fixture.t0)
        XCTAssertEqual(s.status, .none)
        XCTAssertEqual(s.entitlements, [])
        XCTAssertEqual(s.purchases, [])
    }

    func testActiveUnionIsSortedAndDeduplicated() {
        let s = UserEntitlementSummary.summarize([
            owned(Fixture.transaction("1", original: "a", product: "pro", expires: 100), ["pro", "sync"]),
            owned(Fixture.transaction("2", original: "b", product: "max", expires: 100), ["ai", "pro"]),
            owned(Fixture.transaction("3", original: "c", product: "old", expires: 5), ["legacy"]),
        ], at: Fixture.at(10))
        XCTAssertEqual(s.status, .active)
        XCTAssertEqual(s.entitlements, ["ai", "pro", "sync"])
        XCTAssertEqual(s.purchases.map(\.owned.purchase.originalTransactionId), ["a", "b", "c"])
    }

    func testMostRecentlyEndedDecidesWhenNothingIsActive() {
        let expiredLater = owned(Fixture.transaction("1", original: "a", expires: 500), ["pro"])
        let revokedEarlier = owned(Fixture.transaction("2", original: "b", expires: 900, revoked: 200), ["pro"])
        XCTAssertEqual(UserEntitlementSummary.summarize([expiredLater, revokedEarlier], at: Fixture.at(1000)).status, .expired)
        let revokedLast = owned(Fixture.transaction("3", original: "c", expires: 900, revoked: 800), ["pro"])
        let s = UserEntitlementSummary.summarize([expiredLater, revokedLast], at: Fixture.at(1000))
        XCTAssertEqual(s.status, .revoked)
        XCTAssertEqual(s.entitlements, [])
    }
}

final class OwnershipRulesTests: XCTestCase {
    func testDecisionTable() {
        let rows: [([String], String, TransferPolicy, OwnershipDecision, UInt)] = [
            ([], "u1", .transfer, .bind, #line),
            ([], "u1", .block, .bind, #line),
            (["u1"], "u1", .transfer, .alreadyOwned, #line),
            (["u1"], "u1", .block, .alreadyOwned, #line),
            (["u1"], "u2", .transfer, .transfer(from: ["u1"]), #line),
            (["u1"], "u2", .share, .share, #line),
            (["u1"], "u2", .block, .block(owner: "u1"), #line),
            (["u1", "u2"], "u2", .share, .alreadyOwned, #line),
            (["u1", "u2"], "u2", .transfer, .transfer(from: ["u1"]), #line),
            (["u1", "u2"], "u3", .transfer, .transfer(from: ["u1", "u2"]), #line),
        ]
        for (owners, user, policy, expected, line) in rows {
            XCTAssertEqual(OwnershipRules.decide(currentOwners: owners, user: user, policy: policy), expected, line: line)
        }
    }

    /// A public-key lookup by transaction id moves nothing (`block`) unless the appAccountToken names the poster.
    func testEffectivePolicyTable() {
        for policy in [TransferPolicy.transfer, .share, .block] {
            for named in [false, true] {
                XCTAssertEqual(OwnershipRules.effectivePolicy(policy, proof: .signedData, tokenNamesUser: named), policy)
                XCTAssertEqual(OwnershipRules.effectivePolicy(policy, proof: .secretKey, tokenNamesUser: named), policy)
            }
            XCTAssertEqual(OwnershipRules.effectivePolicy(policy, proof: .transactionId, tokenNamesUser: false), .block)
            XCTAssertEqual(OwnershipRules.effectivePolicy(policy, proof: .transactionId, tokenNamesUser: true), policy)
        }
    }
}

final class ProjectTests: XCTestCase {
    func testEnvironmentAcceptance() {
        var p = Project(id: UUID(), name: "n", bundleId: "b", environments: [.production], publicKey: "pk_",
                        createdAt: Fixture.t0, updatedAt: Fixture.t0)
        XCTAssertTrue(p.accepts(.production))
        XCTAssertFalse(p.accepts(.sandbox))
        XCTAssertFalse(p.accepts(.xcode))
        p.allowXcode = true
        XCTAssertFalse(p.accepts(.xcode), "Xcode data never satisfies a Production-only project")
        XCTAssertFalse(p.accepts(.localTesting))
        p.environments = [.production, .sandbox]
        XCTAssertTrue(p.accepts(.xcode))
        XCTAssertTrue(p.accepts(.localTesting))
        p.allowXcode = false
        XCTAssertFalse(p.accepts(.xcode))
        XCTAssertFalse(p.accepts(.localTesting))
        XCTAssertFalse(p.accepts(StoreEnvironment(rawValue: "Mars")))
    }

    func testKeysHaveTheDocumentedShapeAndDiffer() {
        let a = ProjectKeys.generate()
        let b = ProjectKeys.generate()
        XCTAssertTrue(ProjectKeys.isPublicKeySyntax(a.publicKey), a.publicKey)
        XCTAssertTrue(ProjectKeys.isSecretKeySyntax(a.secretKey))
        XCTAssertNotEqual(a.publicKey, b.publicKey)
        XCTAssertNotEqual(a.secretKey, b.secretKey)
        XCTAssertFalse(ProjectKeys.isPublicKeySyntax("pk_XYZ"))
        XCTAssertFalse(ProjectKeys.isPublicKeySyntax(a.secretKey))
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(ProjectKeys.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ProjectKeys.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ProjectKeys.constantTimeEquals([1, 2, 3], [1, 2]))
    }

    func testProductMappingSortsAndDeduplicates() {
        XCTAssertEqual(ProductMapping(productId: "p", entitlements: ["b", "a", "b"]).entitlements, ["a", "b"])
    }
}
