@testable import Domain
import Postgres
@testable import Storage
import XCTest

/// `CachedProjectStore` over a real database: answers from memory once live, compares key expiry at lookup time,
/// reloads on invalidation, finds keys it does not know in the database, and goes to the database while offline.
final class CachedProjectStoreTests: XCTestCase {
    func testServesFromMemoryUntilInvalidatedAndFindsUnknownKeysInTheDatabase() throws {
        let s = try TestStores.make(label: "cachedprojects")
        defer { s.close() }
        let cache = CachedProjectStore(inner: s.projects)
        let first = try s.makeProject(1)
        try cache.refreshAll()
        cache.goLive()
        XCTAssertEqual(try cache.project(publicKey: Fixtures.publicKey(1), at: Fixtures.t0), first)

        // Another instance deletes it (straight through the database store): this cache still answers from memory...
        XCTAssertTrue(try s.projects.deleteProject(id: first.id))
        XCTAssertEqual(try cache.project(publicKey: Fixtures.publicKey(1), at: Fixtures.t0), first)
        XCTAssertEqual(try cache.liveSecretKeyHashes(projectId: first.id, at: Fixtures.t0), [Fixtures.hash(1)])
        // ...until the announcement arrives.
        cache.invalidate(first.id)
        XCTAssertNil(try cache.project(publicKey: Fixtures.publicKey(1), at: Fixtures.t0))
        XCTAssertEqual(try cache.keys(projectId: first.id), [])

        // A project created elsewhere: its unknown key is looked up in the database, then cached.
        let second = try s.makeProject(2)
        XCTAssertEqual(try cache.project(publicKey: Fixtures.publicKey(2), at: Fixtures.t0), second)
        _ = try s.rows("DELETE FROM projects WHERE id = \(second.id)")
        XCTAssertEqual(try cache.project(publicKey: Fixtures.publicKey(2), at: Fixtures.t0), second, "now in memory")

        // Offline (channel down): every lookup goes to the database.
        cache.goOffline()
        XCTAssertNil(try cache.project(publicKey: Fixtures.publicKey(2), at: Fixtures.t0))
        try cache.refreshAll()
        cache.goLive()
        XCTAssertNil(try cache.project(publicKey: Fixtures.publicKey(2), at: Fixtures.t0), "the refresh dropped it")
    }

    func testARetiringKeyStopsAtItsExpiryFromMemoryAndTheWriterReadsItsOwnRotation() throws {
        let s = try TestStores.make(label: "cachedrotation")
        defer { s.close() }
        let cache = CachedProjectStore(inner: s.projects)
        try cache.refreshAll()
        cache.goLive()
        let project = try cache.createProject(
            NewProject(ProjectSettings(name: "App", bundleId: "com.example.app")), publicKey: Fixtures.publicKey(3),
            secretKeyHash: Fixtures.hash(3), now: Fixtures.t0)
        let newKey = StoredProjectKey.current(publicKey: Fixtures.publicKey(4), at: Fixtures.at(1))
        let rotated = try XCTUnwrap(try cache.rotateKeys(
            id: project.id, [KeyReplacement(newKey: newKey, graceSeconds: 60)], now: Fixtures.at(1)))
        XCTAssertEqual(rotated.publicKey, Fixtures.publicKey(4))

        // Both keys from memory (the database row is gone: only the cache can answer).
        _ = try s.rows("DELETE FROM projects WHERE id = \(project.id)")
        let expiry = Fixtures.at(1).addingTimeInterval(60)
        XCTAssertEqual(try cache.project(publicKey: Fixtures.publicKey(4), at: expiry)?.id, project.id)
        XCTAssertEqual(try cache.project(publicKey: Fixtures.publicKey(3), at: expiry.addingTimeInterval(-0.001))?.id,
                       project.id)
        XCTAssertNil(try cache.project(publicKey: Fixtures.publicKey(3), at: expiry), "retired at its instant")
    }
}
