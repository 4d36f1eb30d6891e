import Domain
import Foundation
import Postgres
import Storage
import XCTest

/// A database that cannot be reached is a retryable 503, never a verdict and never server text.
final class UnavailableDatabaseTests: XCTestCase {
    func testEveryPortReportsServiceUnavailable() throws {
        // A socket directory with no server in it: libpq fails to connect at once.
        let settings = ConnectionSettings(parameters: [
            ("host", NSTemporaryDirectory() + "bouncer-no-server-\(UInt32.random(in: 0...UInt32.max))"),
            ("port", "5432"), ("dbname", "bouncer"), ("user", "bouncer"),
        ])
        let pool = ConnectionPool(settings: settings, configuration: .init(size: 1, acquireTimeout: .seconds(2)))
        defer { pool.shutdown() }
        let projects = PostgresProjectStore(pool: pool)
        let purchases = PostgresPurchaseStore(pool: pool)
        let project = Project(id: UUID(), name: "x", bundleId: "x", publicKey: Fixtures.publicKey(1),
                              createdAt: Fixtures.t0, updatedAt: Fixtures.t0)

        let error = assertDomainError(.serviceUnavailable) { try projects.project(publicKey: Fixtures.publicKey(1), at: Fixtures.t0) }
        XCTAssertEqual(error?.message, "The database is unavailable; retry later.")
        XCTAssertTrue(error?.underlying?.contains("connectionFailed") ?? false, error?.underlying ?? "nil")
        assertDomainError(.serviceUnavailable) { try projects.allProjects() }
        assertDomainError(.serviceUnavailable) {
            try projects.createProject(NewProject(ProjectSettings(name: "x", bundleId: "x")), publicKey: "pk", secretKeyHash: [], now: Fixtures.t0)
        }
        assertDomainError(.serviceUnavailable) {
            try projects.setProduct(projectId: project.id, ProductMapping(productId: "p", entitlements: []), now: Fixtures.t0)
        }
        assertDomainError(.serviceUnavailable) {
            try purchases.recordTransaction(Fixtures.monthly("1", start: 0), userId: "u", deviceId: nil, project: project, now: Fixtures.t0)
        }
        assertDomainError(.serviceUnavailable) { try purchases.ownedPurchases(userId: "u", project: project) }
        assertDomainError(.serviceUnavailable) {
            try purchases.recordRenewal(Fixtures.renewal(signed: 1), project: project, now: Fixtures.t0)
        }
    }

    func testAStoppedServerMidSessionIsServiceUnavailableAndTheStoreRecovers() throws {
        // Needs its own cluster: stopping the shared test cluster would break other tests.
        let directory = NSTemporaryDirectory() + "bouncer-storage-stop-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let cluster = try LocalCluster.startOrReuse(directory: directory, durable: false) { _ in }
        defer {
            try? cluster.stop(immediate: true)
            try? FileManager.default.removeItem(atPath: directory)
        }
        try cluster.createDatabase("bouncer")
        let pool = ConnectionPool(settings: cluster.settings.database("bouncer"),
                                  configuration: .init(size: 2, acquireTimeout: .seconds(2)))
        defer { pool.shutdown() }
        try Migrator(pool: pool).migrate()
        let projects = PostgresProjectStore(pool: pool)
        let purchases = PostgresPurchaseStore(pool: pool)
        let project = try projects.createProject(
            NewProject(ProjectSettings(name: "x", bundleId: "x")), publicKey: Fixtures.publicKey(1), secretKeyHash: [1], now: Fixtures.t0)
        _ = try purchases.recordTransaction(Fixtures.monthly("1", start: 0), userId: "u", deviceId: nil, project: project, now: Fixtures.t0)

        // A fast (clean) stop: this test cluster runs with synchronous_commit off, so an immediate stop
        // could drop the last commits, which is not what this test is about.
        try cluster.stop()
        assertDomainError(.serviceUnavailable) { try purchases.ownedPurchases(userId: "u", project: project) }
        assertDomainError(.serviceUnavailable) {
            try purchases.recordTransaction(Fixtures.monthly("1", start: 0), userId: "u", deviceId: nil, project: project, now: Fixtures.t0)
        }

        _ = try LocalCluster.startOrReuse(directory: directory, durable: false) { _ in }
        XCTAssertEqual(try purchases.ownedPurchases(userId: "u", project: project).count, 1)
    }
}
