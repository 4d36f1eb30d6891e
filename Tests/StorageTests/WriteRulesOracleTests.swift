import Domain
import Foundation
import Postgres
import Specification
import Storage
import XCTest

/// The write rules have one live author, the PL/pgSQL record functions; the Swift rules (`PurchaseState.applying`,
/// `OwnershipRules.decide`, in Tests/Specification) are their executable specification (`RuleTableTests` names the
/// boundaries). This applies random sequences of facts (transactions with tied and out-of-order dates, renewal info
/// before and after the purchase exists, posts by several users under every transfer policy) through the database and
/// through the Swift rules, and asserts the same answers and rows.
final class WriteRulesOracleTests: XCTestCase {
    /// What the Swift rules say the rows of one purchase are.
    private struct Model {
        var purchase: PurchaseState?
        var pending: RenewalFacts?
        /// Active holders with their `bound_at`.
        var owners: [(user: String, boundAt: Date)] = []
        /// (from, to) of every transfer, in insertion order.
        var events: [(from: String, to: String)] = []

        /// `OwnershipRules.decide`'s `currentOwners`: by `bound_at`, then user id bytewise.
        var ownersInBindingOrder: [String] {
            owners.sorted { a, b in
                if a.boundAt != b.boundAt { return a.boundAt < b.boundAt }
                return Array(a.user.utf8).lexicographicallyPrecedes(Array(b.user.utf8))
            }.map(\.user)
        }
    }

    func testRandomFactSequencesGiveTheRowsTheSwiftRulesGive() throws {
        let s = try TestStores.make(label: "oracle", poolSize: 2)
        defer { s.close() }
        let base = try s.makeProject(policy: .transfer)
        _ = try s.projects.setProduct(
            projectId: base.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
        let policies: [TransferPolicy] = [.transfer, .share, .block]
        let users: [String?] = [nil, "u1", "u2", "u3"]

        for sequence in 0..<40 {
            let seed = UInt64(sequence) &* 7919 &+ 17
            // A small world so that collisions are frequent: 4 transaction ids of one purchase, 3 purchase dates,
            // 3 signing instants, 3 users and "no user", every policy.
            var random = SplitMix64(state: seed)
            let original = "o\(sequence)"
            var model = Model()
            for step in 0..<25 {
                let now = Fixtures.t0.addingTimeInterval(Double(sequence * 100 + step))
                let context = "seed \(seed), step \(step)"
                var project = base
                project.transferPolicy = policies[random.next(policies.count)]
                if random.next(4) == 0 {
                    let renewal = Fixtures.renewal(
                        original: original, signed: Double(random.next(5)), autoRenew: random.next(2))
                    let outcome = try s.purchases.recordRenewal(renewal, project: project, now: now)
                    let expected: RenewalOutcome
                    if let purchase = model.purchase {
                        if let next = purchase.applying(renewal) {
                            model.purchase = next
                            expected = .applied(next)
                        } else {
                            expected = .unchanged(purchase)
                        }
                    } else {
                        if model.pending.map({ renewal.signedDate > $0.signedDate }) ?? true { model.pending = renewal }
                        expected = .pending
                    }
                    XCTAssertEqual(outcome, expected, context)
                    continue
                }
                let id = "\(original)-t\(random.next(4))"
                let start = Double([0, 30, 30][random.next(3)])
                let transaction = Fixtures.monthly(
                    id, original: original, start: start, signed: start + Double(random.next(3)),
                    revokedAt: random.next(5) == 0 ? start + 3 : nil)
                let user = users[random.next(users.count)]

                // The Swift rules.
                var next = model
                if let purchase = next.purchase {
                    next.purchase = purchase.applying(transaction) ?? purchase
                } else {
                    var created = PurchaseState(first: transaction)
                    if let pending = next.pending { created = created.applying(pending) ?? created }
                    next.purchase = created
                    next.pending = nil
                }
                var decision: OwnershipDecision?
                if let user {
                    let d = OwnershipRules.decide(
                        currentOwners: next.ownersInBindingOrder, user: user, policy: project.transferPolicy)
                    decision = d
                    switch d {
                    case .block:
                        break
                    case .transfer(let previous):
                        next.owners.removeAll { previous.contains($0.user) }
                        for from in previous.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
                            next.events.append((from, user))
                        }
                        if !next.owners.contains(where: { $0.user == user }) { next.owners.append((user, now)) }
                    case .bind, .share:
                        next.owners.append((user, now))
                    case .alreadyOwned:
                        break
                    }
                }

                // The database.
                if case .block = decision {
                    assertDomainError(.purchaseOwnedByAnotherUser) {
                        try s.purchases.recordTransaction(
                            transaction, userId: user, deviceId: nil, project: project, now: now)
                    }
                    // Nothing written: the model stays as it was.
                } else {
                    let recorded = try s.purchases.recordTransaction(
                        transaction, userId: user, deviceId: nil, project: project, now: now)
                    XCTAssertEqual(recorded.purchase, next.purchase, context)
                    XCTAssertEqual(recorded.ownership, decision, context)
                    XCTAssertEqual(recorded.entitlements, ["pro"], context)
                    model = next
                }
                try assertRows(s, project: base, original: original, model: model, context)
            }
        }
    }

    private func assertRows(
        _ s: TestStores, project: Project, original: String, model: Model, _ context: String,
        line: UInt = #line
    ) throws {
        let owners = try s.rows("""
            SELECT user_id, bound_at FROM subscriptions
            WHERE project_id = \(project.id) AND original_transaction_id = \(original) AND revoked_at IS NULL
            ORDER BY bound_at, user_id COLLATE "C"
            """).map { try $0.decode("user_id", as: String.self) }
        XCTAssertEqual(owners, model.ownersInBindingOrder, context, line: line)
        let events = try s.rows("""
            SELECT from_user_id, to_user_id FROM ownership_events
            WHERE project_id = \(project.id) AND original_transaction_id = \(original) ORDER BY id
            """).map { "\(try $0.decode("from_user_id", as: String.self))→\(try $0.decode("to_user_id", as: String.self))" }
        XCTAssertEqual(events, model.events.map { "\($0.from)→\($0.to)" }, context, line: line)
        let pending = try s.rows("""
            SELECT signed_date FROM pending_renewals
            WHERE project_id = \(project.id) AND original_transaction_id = \(original)
            """).map { try $0.decode("signed_date", as: Date.self) }
        XCTAssertEqual(pending, model.pending.map { [$0.signedDate] } ?? [], context, line: line)
        let purchases = try s.rows("""
            SELECT latest_transaction_id, latest_signed_date, purchase_date, revocation_date, renewal_signed_date,
                auto_renew_status
            FROM purchases WHERE project_id = \(project.id) AND original_transaction_id = \(original)
            """).map { row in
            "\(try row.decode("latest_transaction_id", as: String.self)) "
                + "\(try row.decode("latest_signed_date", as: Date.self)) \(try row.decode("purchase_date", as: Date.self)) "
                + "\(String(describing: try row.decode("revocation_date", as: Date?.self))) "
                + "\(String(describing: try row.decode("renewal_signed_date", as: Date?.self))) "
                + "\(String(describing: try row.decode("auto_renew_status", as: Int?.self)))"
        }
        let expected = model.purchase.map { p in
            "\(p.latestTransactionId) \(p.latestSignedDate) \(p.purchaseDate) \(String(describing: p.revocationDate)) "
                + "\(String(describing: p.renewal?.signedDate)) \(String(describing: p.renewal?.autoRenewStatus))"
        }
        XCTAssertEqual(purchases, expected.map { [$0] } ?? [], context, line: line)
    }
}
