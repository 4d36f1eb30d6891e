import Specification
import XCTest

@testable import Domain

final class PurchaseStateTests: XCTestCase {
    func testRenewalMovesThePeriodForward() throws {
        let first = Fixture.purchase(Fixture.transaction("1", purchase: 0, expires: 100))
        let renewed = try XCTUnwrap(first.applying(Fixture.transaction("2", purchase: 100, expires: 200)))
        XCTAssertEqual(renewed.latestTransactionId, "2")
        XCTAssertEqual(renewed.expiresDate, Fixture.at(200))
    }

    func testOlderRenewalNeverMovesThePeriodBackwards() {
        let current = Fixture.purchase(Fixture.transaction("2", purchase: 100, expires: 200))
        XCTAssertNil(current.applying(Fixture.transaction("1", purchase: 0, expires: 100)))
    }

    func testSameTransactionSignedLaterReplacesIt() throws {
        let current = Fixture.purchase(Fixture.transaction("2", purchase: 100, expires: 200, signed: 100))
        let refunded = try XCTUnwrap(
            current.applying(Fixture.transaction("2", purchase: 100, expires: 200, revoked: 150, signed: 150)))
        XCTAssertEqual(refunded.revocationDate, Fixture.at(150))
        // The refund reversed: a later statement without a revocation date clears it.
        let reversed = try XCTUnwrap(
            refunded.applying(Fixture.transaction("2", purchase: 100, expires: 200, signed: 160)))
        XCTAssertNil(reversed.revocationDate)
        // A stale copy of the refunded statement changes nothing.
        XCTAssertNil(reversed.applying(Fixture.transaction("2", purchase: 100, expires: 200, revoked: 150, signed: 150)))
    }

    func testDuplicateFactChangesNothing() {
        let t = Fixture.transaction("2", purchase: 100, expires: 200)
        XCTAssertNil(Fixture.purchase(t).applying(t))
    }

    func testTieOnPurchaseDateIsBrokenDeterministically() throws {
        let a = Fixture.transaction("5", purchase: 100, expires: 200, signed: 100)
        let b = Fixture.transaction("6", purchase: 100, expires: 200, signed: 100)
        XCTAssertEqual(try XCTUnwrap(Fixture.purchase(a).applying(b)).latestTransactionId, "6")
        XCTAssertNil(Fixture.purchase(b).applying(a))
    }

    func testFactsForAnotherPurchaseAreIgnored() {
        let p = Fixture.purchase(Fixture.transaction("1"))
        XCTAssertNil(p.applying(Fixture.transaction("9", original: "other", purchase: 500)))
        XCTAssertNil(p.applying(Fixture.renewal(original: "other", signed: 5)))
    }

    func testNewerRenewalInfoWinsAndSurvivesNewTransactions() throws {
        let p = Fixture.purchase(Fixture.transaction("1"))
        let r1 = try XCTUnwrap(p.applying(Fixture.renewal(signed: 10, autoRenew: 1)))
        let r2 = try XCTUnwrap(r1.applying(Fixture.renewal(signed: 20, autoRenew: 0)))
        XCTAssertNil(r2.applying(Fixture.renewal(signed: 15, autoRenew: 1)))
        XCTAssertEqual(r2.renewal?.autoRenewStatus, 0)
        let renewed = try XCTUnwrap(r2.applying(Fixture.transaction("2", purchase: 3600, expires: 7200)))
        XCTAssertEqual(renewed.renewal?.autoRenewStatus, 0)
    }

    /// Every order of the same facts ends in the same state.
    func testAnyDeliveryOrderConvergesToTheSameState() {
        enum Fact { case t(TransactionFacts), r(RenewalFacts) }
        let facts: [Fact] = [
            .t(Fixture.transaction("1", purchase: 0, expires: 100)),
            .t(Fixture.transaction("2", purchase: 100, expires: 200)),
            .r(Fixture.renewal(signed: 150, autoRenew: 1)),
            .r(Fixture.renewal(signed: 200, autoRenew: 1, grace: 300, retry: true)),
            .t(Fixture.transaction("3", purchase: 250, expires: 350)),
            .t(Fixture.transaction("3", purchase: 250, expires: 350, revoked: 260, signed: 260)),
        ]
        func apply(_ order: [Fact]) -> PurchaseState? {
            var state: PurchaseState?
            var pendingRenewals: [RenewalFacts] = []
            for f in order {
                switch f {
                case .t(let t):
                    if let s = state { state = s.applying(t) ?? s } else { state = PurchaseState(first: t) }
                    for r in pendingRenewals { state = state.map { $0.applying(r) ?? $0 } }
                    pendingRenewals = []
                case .r(let r):
                    if let s = state { state = s.applying(r) ?? s } else { pendingRenewals.append(r) }
                }
            }
            return state
        }
        let reference = apply(facts)
        XCTAssertEqual(reference?.latestTransactionId, "3")
        XCTAssertEqual(reference?.revocationDate, Fixture.at(260))
        XCTAssertEqual(reference?.renewal?.signedDate, Fixture.at(200))
        var permutations = 0
        func permute(_ prefix: [Fact], _ rest: [Fact]) {
            if rest.isEmpty {
                permutations += 1
                XCTAssertEqual(apply(prefix), reference)
                return
            }
            for i in rest.indices {
                var remaining = rest
                let next = remaining.remove(at: i)
                permute(prefix + [next], remaining)
            }
        }
        permute([], facts)
        XCTAssertEqual(permutations, 720)
    }
}
