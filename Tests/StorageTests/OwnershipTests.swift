import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// Transfer policies as rows: who holds a purchase, and the recorded moves.
final class OwnershipTests: XCTestCase {
    /// (user_id, revoked_at) of every binding of purchase 1000, by user.
    private func bindings(_ s: TestStores, _ p: Project) throws -> [String: Date?] {
        var result: [String: Date?] = [:]
        for row in try s.rows("""
            SELECT user_id, revoked_at FROM subscriptions
            WHERE project_id = \(p.id) AND original_transaction_id = '1000'
            """) {
            result[try row.decode("user_id", as: String.self)] = .some(try row.decode("revoked_at", as: Date?.self))
        }
        return result
    }

    /// (from, to, policy, at) of every ownership event, oldest first.
    private func events(_ s: TestStores, _ p: Project) throws -> [[String]] {
        try s.rows("""
            SELECT from_user_id, to_user_id, policy, original_transaction_id, at FROM ownership_events
            WHERE project_id = \(p.id) ORDER BY id
            """).map {
            [try $0.decode("from_user_id", as: String.self), try $0.decode("to_user_id", as: String.self),
             try $0.decode("policy", as: String.self), try $0.decode("original_transaction_id", as: String.self),
             "\(try $0.decode("at", as: Date.self).timeIntervalSince1970)"]
        }
    }

    func testTransferMovesThePurchaseAndRecordsTheMove() throws {
        let s = try TestStores.make(label: "transfer")
        defer { s.close() }
        let p = try s.makeProject(policy: .transfer)
        let t = Fixtures.monthly("2000", start: 0)
        XCTAssertEqual(try s.purchases.recordTransaction(t, userId: "alice", deviceId: "a1", project: p, now: Fixtures.at(1)).ownership, .bind)
        XCTAssertEqual(
            try s.purchases.recordTransaction(t, userId: "bob", deviceId: "b1", project: p, now: Fixtures.at(2)).ownership,
            .transfer(from: ["alice"]))

        XCTAssertEqual(try bindings(s, p), ["alice": Fixtures.at(2), "bob": nil])
        let at2 = "\(Fixtures.at(2).timeIntervalSince1970)"
        XCTAssertEqual(try events(s, p), [["alice", "bob", "transfer", "1000", at2]])
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p), [])
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "bob", project: p).count, 1)

        // And back: alice's old row is re-activated with a new bound_at, bob's revoked.
        XCTAssertEqual(
            try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(3)).ownership,
            .transfer(from: ["bob"]))
        XCTAssertEqual(try bindings(s, p), ["alice": nil, "bob": Fixtures.at(3)])
        let alice = try XCTUnwrap(try s.rows("SELECT bound_at, device_id FROM subscriptions WHERE user_id = 'alice'").first)
        XCTAssertEqual(try alice.decode("bound_at", as: Date.self), Fixtures.at(3))
        XCTAssertEqual(try alice.decode("device_id", as: String?.self), "a1", "no device given: the known one is kept")
        XCTAssertEqual(try events(s, p).map { $0[0] + "→" + $0[1] }, ["alice→bob", "bob→alice"])
        XCTAssertEqual(try s.count("SELECT count(*) FROM subscriptions"), 2)
    }

    func testShareKeepsEveryOwnerAndRecordsNoMove() throws {
        let s = try TestStores.make(label: "share")
        defer { s.close() }
        let p = try s.makeProject(policy: .share)
        let t = Fixtures.monthly("2000", start: 0)
        XCTAssertEqual(try s.purchases.recordTransaction(t, userId: "alice", deviceId: nil, project: p, now: Fixtures.at(1)).ownership, .bind)
        XCTAssertEqual(try s.purchases.recordTransaction(t, userId: "bob", deviceId: nil, project: p, now: Fixtures.at(2)).ownership, .share)
        XCTAssertEqual(try s.purchases.recordTransaction(t, userId: "bob", deviceId: nil, project: p, now: Fixtures.at(3)).ownership, .alreadyOwned)
        XCTAssertEqual(try bindings(s, p), ["alice": nil, "bob": nil])
        XCTAssertEqual(try events(s, p), [])
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p).count, 1)
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "bob", project: p).count, 1)

        // The project switches to `transfer`: a sharer posting again takes it over alone.
        var changes = ProjectChanges()
        changes.transferPolicy = .transfer
        let transferring = try XCTUnwrap(try s.projects.updateProject(id: p.id, changes, now: Fixtures.at(4)))
        XCTAssertEqual(
            try s.purchases.recordTransaction(t, userId: "bob", deviceId: nil, project: transferring, now: Fixtures.at(5)).ownership,
            .transfer(from: ["alice"]))
        XCTAssertEqual(try bindings(s, p), ["alice": Fixtures.at(5), "bob": nil])
        XCTAssertEqual(try events(s, p).map { $0[0] + "→" + $0[1] }, ["alice→bob"])
    }

    func testBlockRefusesAndRollsBackEverything() throws {
        let s = try TestStores.make(label: "block")
        defer { s.close() }
        let p = try s.makeProject(policy: .block)
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("2000", start: 0), userId: "alice", deviceId: nil, project: p, now: Fixtures.at(1))

        // Bob posts the *next* renewal: refused, and the renewal is not stored either (one transaction).
        let error = assertDomainError(.purchaseOwnedByAnotherUser) {
            try s.purchases.recordTransaction(
                Fixtures.monthly("2001", start: 30), userId: "bob", deviceId: nil, project: p, now: Fixtures.at(31))
        }
        XCTAssertFalse(error?.message.contains("alice") ?? true, "the owner's id is not disclosed")

        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 1)
        let purchase = try XCTUnwrap(try s.rows("SELECT latest_transaction_id, updated_at FROM purchases").first)
        XCTAssertEqual(try purchase.decode("latest_transaction_id", as: String.self), "2000")
        XCTAssertEqual(try purchase.decode("updated_at", as: Date.self), Fixtures.at(1))
        XCTAssertEqual(try bindings(s, p), ["alice": nil])
        XCTAssertEqual(try events(s, p), [])

        // The owner posting it is fine, and without a user the facts are recorded.
        XCTAssertEqual(
            try s.purchases.recordTransaction(
                Fixtures.monthly("2001", start: 30), userId: "alice", deviceId: nil, project: p, now: Fixtures.at(31)).ownership,
            .alreadyOwned)
        XCTAssertEqual(try s.count("SELECT count(*) FROM transactions"), 2)
        // The pool is healthy after the rollback.
        XCTAssertEqual(try s.purchases.ownedPurchases(userId: "alice", project: p).first?.purchase.latestTransactionId, "2001")
    }
}
