import Domain
import Postgres
import Storage
import XCTest

/// Support's search by transaction id as rows: the current holders, sorted, scoped by project, Production first.
final class TransactionHoldersTests: XCTestCase {
    func testHoldersAreTheCurrentBindingsOfTheProjectsTransaction() throws {
        let s = try TestStores.make(label: "holders")
        defer { s.close() }
        let customers = PostgresCustomerStore(pool: s.pool)
        let shared = try s.makeProject(1, policy: .share)
        let other = try s.makeProject(2, policy: .transfer)

        let lifetime = Fixtures.lifetime("5000")
        for user in ["carol", "alice"] {
            _ = try s.purchases.recordTransaction(lifetime, userId: user, deviceId: nil, project: shared, now: Fixtures.at(1))
        }
        XCTAssertEqual(try customers.transactionHolders(projectId: shared.id, transactionId: "5000"), TransactionHolders(
            transactionId: "5000", originalTransactionId: "5000", productId: "lifetime", environment: .production,
            source: "transaction", userIds: ["alice", "carol"]))
        XCTAssertNil(try customers.transactionHolders(projectId: other.id, transactionId: "5000"), "scoped by project")
        XCTAssertNil(try customers.transactionHolders(projectId: shared.id, transactionId: "5001"))

        // A renewal finds its purchase's holders; the same id in Sandbox does not hide Production's.
        _ = try s.purchases.recordTransaction(Fixtures.monthly("7000", original: "7000", start: 0), userId: "dave",
                                              deviceId: nil, project: other, now: Fixtures.at(1))
        _ = try s.purchases.recordTransaction(Fixtures.monthly("7001", original: "7000", start: 30), userId: nil,
                                              deviceId: nil, project: other, now: Fixtures.at(31))
        _ = try s.purchases.recordTransaction(
            Fixtures.monthly("7001", original: "9000", product: "sandbox.monthly", start: 0, environment: .sandbox),
            userId: "erin", deviceId: nil, project: other, now: Fixtures.at(1))
        let renewal = try XCTUnwrap(try customers.transactionHolders(projectId: other.id, transactionId: "7001"))
        XCTAssertEqual(renewal.originalTransactionId, "7000")
        XCTAssertEqual(renewal.environment, .production)
        XCTAssertEqual(renewal.userIds, ["dave"])

        // Transfer: the user moved away is not a holder.
        _ = try s.purchases.recordTransaction(Fixtures.monthly("7001", original: "7000", start: 30), userId: "frank",
                                              deviceId: nil, project: other, now: Fixtures.at(32))
        XCTAssertEqual(try customers.transactionHolders(projectId: other.id, transactionId: "7000")?.userIds, ["frank"])
    }
}
