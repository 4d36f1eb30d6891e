@testable import Domain
import Foundation
import Postgres
import Storage
import XCTest

final class ProjectStoreTests: XCTestCase {
    func testCreateThenFindByPublicKeyAndIdRoundTripsEveryField() throws {
        let s = try TestStores.make(label: "projcreate")
        defer { s.close() }
        let new = NewProject(ProjectSettings(
            name: "Weather ☀︎", bundleId: "com.example.weather", appAppleId: 1_234_567_890,
            environments: [.sandbox], transferPolicy: .block, allowXcode: true, requireSecretKeyForReads: true,
            appAccountTokenPolicy: .requireMatch))
        let created = try s.projects.createProject(
            new, publicKey: Fixtures.publicKey(7), secretKeyHash: Fixtures.hash(7), now: Fixtures.t0)

        XCTAssertEqual(created.name, "Weather ☀︎")
        XCTAssertEqual(created.bundleId, "com.example.weather")
        XCTAssertEqual(created.appAppleId, 1_234_567_890)
        XCTAssertEqual(created.environments, [.sandbox])
        XCTAssertEqual(created.transferPolicy, .block)
        XCTAssertTrue(created.allowXcode)
        XCTAssertTrue(created.requireSecretKeyForReads)
        XCTAssertEqual(created.appAccountTokenPolicy, .requireMatch)
        XCTAssertEqual(created.publicKey, Fixtures.publicKey(7))
        XCTAssertEqual(created.createdAt, Fixtures.t0)
        XCTAssertEqual(created.updatedAt, Fixtures.t0)

        XCTAssertEqual(try s.projects.project(publicKey: Fixtures.publicKey(7), at: Fixtures.t0), created)
        XCTAssertEqual(try s.projects.project(id: created.id), created)
        XCTAssertEqual(try s.projects.liveSecretKeyHashes(projectId: created.id, at: Fixtures.t0), [Fixtures.hash(7)])
        XCTAssertNil(try s.projects.project(publicKey: Fixtures.publicKey(8), at: Fixtures.t0))
        XCTAssertNil(try s.projects.project(id: UUID()))
        XCTAssertEqual(try s.projects.keys(projectId: UUID()), [])
        // The secret is stored only as the given hash.
        let stored = try s.rows("SELECT secret_key_hash FROM project_keys WHERE project_id = \(created.id) AND kind = 'secret'")
        XCTAssertEqual(stored.count, 1)
        XCTAssertEqual(try XCTUnwrap(stored.first).decode("secret_key_hash", as: [UInt8].self), Fixtures.hash(7))
    }

    func testDefaultsAndOldestFirstListing() throws {
        let s = try TestStores.make(label: "projlist")
        defer { s.close() }
        let b = try s.projects.createProject(
            NewProject(ProjectSettings(name: "B", bundleId: "b")), publicKey: Fixtures.publicKey(2), secretKeyHash: [2],
            now: Fixtures.at(1))
        let a = try s.projects.createProject(
            NewProject(ProjectSettings(name: "A", bundleId: "a")), publicKey: Fixtures.publicKey(1), secretKeyHash: [1],
            now: Fixtures.at(0))
        XCTAssertEqual(a.environments, [.production, .sandbox])
        XCTAssertEqual(a.transferPolicy, .transfer)
        XCTAssertNil(a.appAppleId)
        XCTAssertFalse(a.allowXcode)
        XCTAssertEqual(try s.projects.allProjects().map(\.name), ["A", "B"])
        XCTAssertEqual(try s.projects.allProjects(), [a, b])
    }

    func testDuplicatePublicKeyIsConflictWithoutServerText() throws {
        let s = try TestStores.make(label: "projdup")
        defer { s.close() }
        _ = try s.makeProject(1)
        let error = assertDomainError(.conflict) { try s.makeProject(1) }
        XCTAssertFalse(error?.message.contains("projects") ?? true, "no table names in the client message")
        XCTAssertTrue(error?.underlying?.contains("23505") ?? false)
        XCTAssertEqual(try s.count("SELECT count(*) FROM projects"), 1)
    }

    func testUpdateAppliesOnlyGivenFieldsAndCanClearAppleId() throws {
        let s = try TestStores.make(label: "projupdate")
        defer { s.close() }
        var new = NewProject(ProjectSettings(name: "Old", bundleId: "com.old"))
        new.appAppleId = 42
        let p = try s.projects.createProject(new, publicKey: Fixtures.publicKey(1), secretKeyHash: [1], now: Fixtures.t0)

        var changes = ProjectChanges()
        changes.name = "New"
        changes.transferPolicy = .share
        changes.environments = [.production]
        changes.appAppleId = .some(nil)
        let updated = try XCTUnwrap(try s.projects.updateProject(id: p.id, changes, now: Fixtures.at(1)))
        XCTAssertEqual(updated.name, "New")
        XCTAssertEqual(updated.bundleId, "com.old")
        XCTAssertNil(updated.appAppleId)
        XCTAssertEqual(updated.transferPolicy, .share)
        XCTAssertEqual(updated.environments, [.production])
        XCTAssertEqual(updated.createdAt, Fixtures.t0)
        XCTAssertEqual(updated.updatedAt, Fixtures.at(1))
        XCTAssertEqual(try s.projects.project(id: p.id), updated)

        XCTAssertNil(try s.projects.updateProject(id: UUID(), changes, now: Fixtures.at(1)))
    }

    func testRotateKeysWithGraceKeepsTheOldKeyUntilItsExpiry() throws {
        let s = try TestStores.make(label: "projrotate")
        defer { s.close() }
        let p = try s.makeProject(1)
        let rotatedAt = Fixtures.at(2)
        let newPublic = StoredProjectKey.current(publicKey: Fixtures.publicKey(9), at: rotatedAt)
        let newSecret = StoredProjectKey(kind: .secret, secretKeyHash: [9, 9], last4: "9999", createdAt: rotatedAt)
        let rotated = try XCTUnwrap(try s.projects.rotateKeys(id: p.id, [
            KeyReplacement(newKey: newPublic, graceSeconds: 60), KeyReplacement(newKey: newSecret, graceSeconds: 0),
        ], now: rotatedAt))
        XCTAssertEqual(rotated.publicKey, Fixtures.publicKey(9))
        XCTAssertEqual(rotated.updatedAt, rotatedAt)
        // The old public key works until rotation + 60 s (exclusive); the new one from now on.
        let expiry = rotatedAt.addingTimeInterval(60)
        XCTAssertEqual(try s.projects.project(publicKey: Fixtures.publicKey(1), at: expiry.addingTimeInterval(-0.001))?.id, p.id)
        XCTAssertNil(try s.projects.project(publicKey: Fixtures.publicKey(1), at: expiry))
        XCTAssertEqual(try s.projects.project(publicKey: Fixtures.publicKey(9), at: expiry)?.id, p.id)
        // Grace 0: the old secret is gone at once (its row too); the new one is stored hashed.
        XCTAssertEqual(try s.projects.liveSecretKeyHashes(projectId: p.id, at: rotatedAt), [[9, 9]])
        let rows = try s.rows("""
            SELECT kind, public_key, secret_key_hash, last4, expires_at FROM project_keys WHERE project_id = \(p.id)
            ORDER BY kind, created_at
            """)
        XCTAssertEqual(rows.count, 3)
        XCTAssertEqual(try rows.map { try $0.decode("expires_at", as: Date?.self) }, [expiry, nil, nil])
        XCTAssertEqual(try rows.last?.decode("secret_key_hash", as: [UInt8]?.self), [9, 9])
        XCTAssertEqual(try rows.last?.decode("last4", as: String?.self), "9999")
        XCTAssertNil(try s.projects.rotateKeys(id: UUID(), [KeyReplacement(newKey: newPublic, graceSeconds: 0)], now: rotatedAt))

        // Rotating onto another project's public key is a conflict and changes nothing.
        let other = try s.makeProject(2)
        assertDomainError(.conflict) {
            try s.projects.rotateKeys(id: other.id, [
                KeyReplacement(newKey: .current(publicKey: Fixtures.publicKey(9), at: rotatedAt), graceSeconds: 0),
            ], now: rotatedAt)
        }
        XCTAssertEqual(try s.projects.liveSecretKeyHashes(projectId: other.id, at: rotatedAt), [Fixtures.hash(2)])
        XCTAssertEqual(try s.projects.project(publicKey: Fixtures.publicKey(2), at: rotatedAt)?.id, other.id)
    }

    func testProductsCrudSortedByCodePoint() throws {
        let s = try TestStores.make(label: "products")
        defer { s.close() }
        let p = try s.makeProject(1)
        XCTAssertEqual(try s.projects.products(projectId: p.id), [])
        let a = try s.projects.setProduct(
            projectId: p.id, ProductMapping(productId: "a.monthly", entitlements: ["pro", "ads.off", "pro"]),
            now: Fixtures.t0)
        XCTAssertEqual(a.entitlements, ["ads.off", "pro"])
        _ = try s.projects.setProduct(projectId: p.id, ProductMapping(productId: "B.yearly", entitlements: []), now: Fixtures.t0)
        // Replace keeps one row.
        _ = try s.projects.setProduct(
            projectId: p.id, ProductMapping(productId: "a.monthly", entitlements: ["pro"]), now: Fixtures.at(1))
        XCTAssertEqual(
            try s.projects.products(projectId: p.id),
            [ProductMapping(productId: "B.yearly", entitlements: []), ProductMapping(productId: "a.monthly", entitlements: ["pro"])])
        let row = try XCTUnwrap(
            try s.rows("SELECT created_at, updated_at FROM products WHERE project_id = \(p.id) AND product_id = 'a.monthly'").first)
        XCTAssertEqual(try row.decode("created_at", as: Date.self), Fixtures.t0)
        XCTAssertEqual(try row.decode("updated_at", as: Date.self), Fixtures.at(1))

        XCTAssertTrue(try s.projects.deleteProduct(projectId: p.id, productId: "a.monthly"))
        XCTAssertFalse(try s.projects.deleteProduct(projectId: p.id, productId: "a.monthly"))
        XCTAssertEqual(try s.projects.products(projectId: p.id).map(\.productId), ["B.yearly"])

        assertDomainError(.projectNotFound) {
            try s.projects.setProduct(projectId: UUID(), ProductMapping(productId: "x", entitlements: []), now: Fixtures.t0)
        }
    }

    func testProductsAreScopedToTheirProject() throws {
        let s = try TestStores.make(label: "prodscope")
        defer { s.close() }
        let a = try s.makeProject(1)
        let b = try s.makeProject(2)
        _ = try s.projects.setProduct(projectId: a.id, ProductMapping(productId: "pro", entitlements: ["a"]), now: Fixtures.t0)
        _ = try s.projects.setProduct(projectId: b.id, ProductMapping(productId: "pro", entitlements: ["b"]), now: Fixtures.t0)
        XCTAssertEqual(try s.projects.products(projectId: a.id), [ProductMapping(productId: "pro", entitlements: ["a"])])
        XCTAssertTrue(try s.projects.deleteProduct(projectId: b.id, productId: "pro"))
        XCTAssertEqual(try s.projects.products(projectId: a.id).count, 1)
        XCTAssertEqual(try s.projects.products(projectId: b.id).count, 0)
    }

    func testDeleteProjectCascadesToEveryTenantTable() throws {
        let s = try TestStores.make(label: "projdelete")
        defer { s.close() }
        let doomed = try s.makeProject(1)
        let kept = try s.makeProject(2)
        for p in [doomed, kept] {
            _ = try s.projects.setProduct(projectId: p.id, ProductMapping(productId: "pro.monthly", entitlements: ["pro"]), now: Fixtures.t0)
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly("1", start: 0), userId: "u1", deviceId: nil, project: p, now: Fixtures.t0)
            _ = try s.purchases.recordTransaction(
                Fixtures.monthly("1", start: 0), userId: "u2", deviceId: nil, project: p, now: Fixtures.t0)  // transfer event
            try s.purchases.recordRenewal(Fixtures.renewal(original: "orphan", signed: 1), project: p, now: Fixtures.t0)
        }
        XCTAssertTrue(try s.projects.deleteProject(id: doomed.id))
        XCTAssertFalse(try s.projects.deleteProject(id: doomed.id))
        for table in ["products", "transactions", "purchases", "subscriptions", "ownership_events", "pending_renewals"] {
            XCTAssertEqual(
                try s.count("SELECT count(*) FROM \(unsafeSQL: table) WHERE project_id = \(doomed.id)"), 0, table)
            XCTAssertGreaterThan(
                try s.count("SELECT count(*) FROM \(unsafeSQL: table) WHERE project_id = \(kept.id)"), 0, table)
        }
        XCTAssertNil(try s.projects.project(id: doomed.id))
        XCTAssertEqual(try s.projects.allProjects().map(\.id), [kept.id])
    }
}
