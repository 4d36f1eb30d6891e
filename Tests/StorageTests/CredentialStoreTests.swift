import Domain
import Foundation
import Postgres
import Storage
import XCTest

final class CredentialStoreTests: XCTestCase {
    static let keyA = "0123456789abcdef"
    static let keyB = "fedcba9876543210"

    func credentials(keyId: String = "2X9R4HXF34", sealed: [UInt8] = [1, 2, 3, 4], encryptionKeyId: String = keyA,
                     at: Date = Fixtures.t0) -> StoredAppStoreCredentials {
        StoredAppStoreCredentials(
            publicHalf: AppStoreCredentials(
                issuerId: "57246542-96fe-1a63-e053-0824d011072a", keyId: keyId,
                keyFingerprint: String(repeating: "ab", count: 32), createdAt: at, updatedAt: at),
            sealedPrivateKey: SealedSecret(keyId: encryptionKeyId, bytes: sealed))
    }

    func testSetShowReplaceDeleteRoundTripsEveryColumn() throws {
        let s = try TestStores.make(label: "credroundtrip")
        defer { s.close() }
        let store = PostgresCredentialStore(pool: s.pool)
        let project = try s.makeProject(1)
        XCTAssertNil(try store.credentials(projectId: project.id))

        let first = credentials(sealed: Array(0...255))
        XCTAssertEqual(try store.setCredentials(projectId: project.id, first), first)
        XCTAssertEqual(try store.credentials(projectId: project.id), first)

        // A re-set replaces everything but created_at.
        let second = credentials(keyId: "ABCDEFGHIJ", sealed: [9, 9], encryptionKeyId: Self.keyB, at: Fixtures.at(1))
        var expected = second
        expected.publicHalf.createdAt = Fixtures.t0
        XCTAssertEqual(try store.setCredentials(projectId: project.id, second), expected)
        XCTAssertEqual(try store.credentials(projectId: project.id), expected)
        XCTAssertEqual(try s.count("SELECT count(*) FROM app_store_credentials"), 1)

        XCTAssertTrue(try store.deleteCredentials(projectId: project.id))
        XCTAssertFalse(try store.deleteCredentials(projectId: project.id))
        XCTAssertNil(try store.credentials(projectId: project.id))
    }

    func testUnknownProjectIsProjectNotFoundAndRowsAreTenantScoped() throws {
        let s = try TestStores.make(label: "credtenant")
        defer { s.close() }
        let store = PostgresCredentialStore(pool: s.pool)
        assertDomainError(.projectNotFound) { try store.setCredentials(projectId: UUID(), credentials()) }
        let a = try s.makeProject(1)
        let b = try s.makeProject(2)
        _ = try store.setCredentials(projectId: a.id, credentials(sealed: [1]))
        XCTAssertNil(try store.credentials(projectId: b.id))
        XCTAssertFalse(try store.deleteCredentials(projectId: b.id))
        XCTAssertEqual(try store.credentials(projectId: a.id)?.sealedPrivateKey.bytes, [1])
    }

    func testDeletingTheProjectDeletesItsCredentials() throws {
        let s = try TestStores.make(label: "credcascade")
        defer { s.close() }
        let store = PostgresCredentialStore(pool: s.pool)
        let project = try s.makeProject(1)
        _ = try store.setCredentials(projectId: project.id, credentials())
        XCTAssertTrue(try s.projects.deleteProject(id: project.id))
        XCTAssertEqual(try s.count("SELECT count(*) FROM app_store_credentials"), 0)
    }

    func testReplaceSealedIsACompareAndSwapThatLeavesMetadataAlone() throws {
        let s = try TestStores.make(label: "credcas")
        defer { s.close() }
        let store = PostgresCredentialStore(pool: s.pool)
        let a = try s.makeProject(1)
        let b = try s.makeProject(2)
        let stored = try store.setCredentials(projectId: a.id, credentials(sealed: [1, 1]))
        _ = try store.setCredentials(projectId: b.id, credentials(sealed: [2, 2]))
        let all = try store.allSealedPrivateKeys()
        XCTAssertEqual(all.map(\.projectId), [a.id, b.id].sorted { $0.uuidString < $1.uuidString })
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: all.map { ($0.projectId, $0.sealed.bytes) }),
                       [a.id: [1, 1], b.id: [2, 2]])

        let old = SealedSecret(keyId: Self.keyA, bytes: [1, 1])
        let new = SealedSecret(keyId: Self.keyB, bytes: [7, 7, 7])
        // A stale `old` (another writer got there first) changes nothing.
        XCTAssertFalse(try store.replaceSealedPrivateKey(projectId: a.id, old: SealedSecret(keyId: Self.keyA, bytes: [0]),
                                                         new: new))
        XCTAssertFalse(try store.replaceSealedPrivateKey(projectId: b.id, old: old, new: new), "b's bytes differ")
        XCTAssertTrue(try store.replaceSealedPrivateKey(projectId: a.id, old: old, new: new))
        let after = try XCTUnwrap(try store.credentials(projectId: a.id))
        XCTAssertEqual(after.sealedPrivateKey, new)
        XCTAssertEqual(after.publicHalf, stored.publicHalf, "updated_at is about the credentials, not the sealing")
        XCTAssertEqual(try store.credentials(projectId: b.id)?.sealedPrivateKey.bytes, [2, 2])
    }

    func testSchemaRefusesMalformedValuesEvenPastTheRules() throws {
        let s = try TestStores.make(label: "credchecks")
        defer { s.close() }
        let store = PostgresCredentialStore(pool: s.pool)
        let project = try s.makeProject(1)
        for bad in [credentials(keyId: "short"), credentials(encryptionKeyId: "XYZ")] {
            XCTAssertThrowsError(try store.setCredentials(projectId: project.id, bad)) { error in
                XCTAssertEqual((error as? PGError)?.sqlState, "23514", String(reflecting: error))
            }
        }
        XCTAssertEqual(try s.count("SELECT count(*) FROM app_store_credentials"), 0)
    }

    func testUnreachableDatabaseIsServiceUnavailable() throws {
        let s = try TestStores.make(label: "creddown")
        let store = PostgresCredentialStore(pool: s.pool)
        s.close()
        assertDomainError(.serviceUnavailable) { try store.credentials(projectId: UUID()) }
    }
}
