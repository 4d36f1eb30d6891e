@testable import Domain
import Foundation
import HTTPCore
import JSON
import XCTest

final class AppStoreCredentialsTests: XCTestCase {
    let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900/app-store-credentials"
    let projectId = FakeProjectStore.uuid(900)

    func body(issuer: String = TestKeys.issuerId, keyId: String = TestKeys.keyId, pem: String = TestKeys.pem) -> String {
        JSONValue.object(JSONObject([("issuer_id", .string(issuer)), ("key_id", .string(keyId)),
                                     ("private_key", .string(pem))])).serializedString()
    }

    /// No response, stored field or log line may carry any part of the key.
    func assertNoKey(_ texts: [String], file: StaticString = #filePath, line: UInt = #line) {
        for text in texts {
            XCTAssertFalse(text.contains(TestKeys.p256BodyMarker), "key material in: \(text)", file: file, line: line)
            XCTAssertFalse(text.contains("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"), "key in: \(text)", file: file, line: line)
            XCTAssertFalse(text.contains("-----END PRIVATE KEY-----"), "PEM in: \(text)", file: file, line: line)
        }
    }

    func testPutShowsMetadataAndFingerprintAndSealsTheKey() throws {
        let h = Harness()
        let put = h.admin(.put, path, body: body(issuer: "57246542-96FE-1A63-E053-0824D011072A"))
        XCTAssertEqual(put.status, 200, put.text)
        let json = try XCTUnwrap(put.json)
        XCTAssertEqual(json.objectValue?.keys, ["issuer_id", "key_id", "key_fingerprint", "created_at", "updated_at"])
        XCTAssertEqual(json["issuer_id"]?.stringValue, TestKeys.issuerId, "stored lowercase, as App Store Connect shows it")
        XCTAssertEqual(json["key_id"]?.stringValue, "2X9R4HXF34")
        XCTAssertEqual(json["key_fingerprint"]?.stringValue, TestKeys.fingerprint)
        XCTAssertEqual(json["created_at"]?.stringValue, "2026-06-01T00:00:00.000Z")
        XCTAssertEqual(json["updated_at"]?.stringValue, "2026-06-01T00:00:00.000Z")

        let get = h.admin(.get, path)
        XCTAssertEqual(get.status, 200)
        XCTAssertEqual(get.json, json)

        // Stored sealed, bound to the project, under the current key; the PEM only inside the sealer.
        let row = try XCTUnwrap(h.credentials.rows[projectId])
        XCTAssertEqual(row.sealedPrivateKey.keyId, FakeSealer.keyA)
        XCTAssertFalse(String(decoding: row.sealedPrivateKey.bytes, as: UTF8.self).contains(TestKeys.p256BodyMarker))
        XCTAssertEqual(try FakeSealer().open(row.sealedPrivateKey,
                                             associatedData: Array("bouncer:app-store-credentials:v1:\(projectId.uuidString.lowercased())".utf8)),
                       Array(TestKeys.pem.utf8))
        assertNoKey([put.text, get.text] + h.log.all)
    }

    func testPutAgainReplacesAndKeepsCreatedAt() throws {
        let h = Harness()
        XCTAssertEqual(h.admin(.put, path, body: body()).status, 200)
        h.clock.advance(3600)
        let again = h.admin(.put, path, body: body(keyId: "ABCDEFGHIJ", pem: TestKeys.pem2))
        XCTAssertEqual(again.status, 200, again.text)
        XCTAssertEqual(again.json?["key_id"]?.stringValue, "ABCDEFGHIJ")
        XCTAssertEqual(again.json?["key_fingerprint"]?.stringValue, TestKeys.fingerprint2)
        XCTAssertEqual(again.json?["created_at"]?.stringValue, "2026-06-01T00:00:00.000Z")
        XCTAssertEqual(again.json?["updated_at"]?.stringValue, "2026-06-01T01:00:00.000Z")
        XCTAssertEqual(h.credentials.rows.count, 1)
    }

    func testNoneIs404AndDeleteRemoves() {
        let h = Harness()
        assertError(h.admin(.get, path), status: 404, code: "APP_STORE_CREDENTIALS_NOT_FOUND",
                    error: "This project has no App Store credentials.",
                    suggestion: "Store them with PUT /v1/admin/projects/:id/app-store-credentials "
                        + "(or `bouncer project credentials set`).")
        assertError(h.admin(.delete, path), status: 404, code: "APP_STORE_CREDENTIALS_NOT_FOUND")
        XCTAssertEqual(h.admin(.put, path, body: body()).status, 200)
        let deleted = h.admin(.delete, path)
        XCTAssertEqual(deleted.status, 204)
        XCTAssertEqual(deleted.body, [])
        XCTAssertTrue(h.credentials.rows.isEmpty)
        assertError(h.admin(.get, path), status: 404, code: "APP_STORE_CREDENTIALS_NOT_FOUND")
    }

    func testUnknownProjectIs404OnEveryMethod() {
        let h = Harness()
        let other = "/v1/admin/projects/00000000-0000-0000-0000-000000000901/app-store-credentials"
        assertError(h.admin(.put, other, body: body()), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(h.admin(.get, other), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(h.admin(.delete, other), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(h.admin(.get, "/v1/admin/projects/nope/app-store-credentials"), status: 400,
                    code: "VALIDATION_ERROR", details: [["path": ["id"], "message": "Invalid uuid"]])
        XCTAssertTrue(h.credentials.rows.isEmpty)
    }

    func testValidationNamesEveryFieldAndSaysWhereTheP8ComesFrom() {
        let h = Harness()
        let bad = h.admin(.put, path, body: body(issuer: "not-a-uuid", keyId: "2x9r4hxf3", pem: "hello"))
        assertError(bad, status: 400, code: "VALIDATION_ERROR", error: "Validation error",
                    suggestion: APIHandlersText.credentialsSuggestion, details: [
                        ["path": ["issuer_id"], "message": "Invalid uuid"],
                        ["path": ["key_id"], "message": "Must be 10 characters: uppercase letters and digits"],
                        ["path": ["private_key"],
                         "message": "Expected a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)"],
                    ])
        XCTAssertTrue(APIHandlersText.credentialsSuggestion.contains(".p8"))
        XCTAssertTrue(APIHandlersText.credentialsSuggestion.contains("Users and Access > Integrations > In-App Purchase"))

        assertError(h.admin(.put, path, body: "{}"), status: 400, code: "VALIDATION_ERROR", details: [
            ["path": ["issuer_id"], "message": "Required"],
            ["path": ["key_id"], "message": "Required"],
            ["path": ["private_key"], "message": "Required"],
        ])
        assertError(h.admin(.put, path, body: #"{"issuer_id":1,"key_id":null,"private_key":["x"]}"#), status: 400,
                    code: "VALIDATION_ERROR", details: [
                        ["path": ["issuer_id"], "message": "Expected string"],
                        ["path": ["key_id"], "message": "Expected string"],
                        ["path": ["private_key"], "message": "Expected string"],
                    ])
        assertError(h.admin(.put, path, body: body(pem: TestKeys.sec1PEM)), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["private_key"], "message": "Expected a PKCS#8 PEM (BEGIN PRIVATE KEY), got a "
                        + "SEC1 EC key (BEGIN EC PRIVATE KEY); send the .p8 file unchanged"]])
        // The cryptographic check (the inspector): a PKCS#8 key that is not P-256.
        assertError(h.admin(.put, path, body: body(pem: TestKeys.rsaPEM)), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["private_key"], "message": "Expected an EC key on P-256 (prime256v1), got RSA"]])
        assertError(h.admin(.put, path, body: body(pem: "   ")), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["private_key"], "message": "String must contain at least 1 character(s)"]])
        let huge = TestKeys.pem + String(repeating: "A", count: AppStoreCredentialRules.maxPrivateKeyBytes)
        assertError(h.admin(.put, path, body: body(pem: huge)), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["private_key"], "message": "String must contain at most 8192 character(s)"]])
        assertError(h.admin(.put, path, body: body(keyId: "2X9R4HXF34\u{0}")), status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["key_id"], "message": "String must not contain NUL characters"]])
        assertError(h.admin(.put, path, body: "[]"), status: 400, code: "VALIDATION_ERROR")
        assertError(h.admin(.put, path, body: "{"), status: 400, code: "INVALID_JSON")
        XCTAssertTrue(h.credentials.rows.isEmpty)
        // A rejected key is never echoed, not even in the error.
        assertNoKey([h.admin(.put, path, body: body(keyId: "x", pem: TestKeys.rsaPEM)).text] + h.log.all)
    }

    func testWithoutEncryptionKeyStoringIsRefusedButShowAndDeleteWork() {
        let h = Harness(sealer: nil)
        assertError(h.admin(.put, path, body: body()), status: 409, code: "ENCRYPTION_KEY_MISSING",
                    error: "App Store credentials cannot be stored: the server has no encryption key.",
                    suggestion: "Set BOUNCER_ENCRYPTION_KEY on the server to 32 random bytes in base64 "
                        + "(generate one with `openssl rand -base64 32`, keep it in your secret store) and restart.")
        let response = h.admin(.put, path, body: body())
        XCTAssertNil(response.headers["Retry-After"], "final until the operator acts: no retry invitation")
        // Refused before the input is looked at: the operator fixes the server first.
        assertError(h.admin(.put, path, body: body(keyId: "x")), status: 409, code: "ENCRYPTION_KEY_MISSING")
        XCTAssertTrue(h.credentials.rows.isEmpty)
        assertError(h.admin(.get, path), status: 404, code: "APP_STORE_CREDENTIALS_NOT_FOUND")
        assertError(h.admin(.delete, path), status: 404, code: "APP_STORE_CREDENTIALS_NOT_FOUND")
    }

    /// The routes that only use stored credentials never speak of storing them: without credentials the fix is to
    /// store some (400 MISSING), with credentials sealed under a key the server lost it is that key (409).
    func testRoutesUsingStoredCredentialsWithoutEncryptionKeySayTheyCannotBeOpened() throws {
        let h = Harness(sealer: nil)
        let project = "/v1/admin/projects/00000000-0000-0000-0000-000000000900"
        let routes: [(HTTPMethod, String)] = [
            (.post, project + "/app-store/test-notification"), (.get, project + "/app-store/test-notification/tok"),
        ]
        for (method, route) in routes {
            assertError(h.admin(method, route), status: 400, code: "APP_STORE_CREDENTIALS_MISSING")
        }
        _ = try CredentialAdministration(projects: h.projects, store: h.credentials, sealer: FakeSealer(),
                                         inspector: FakeKeyInspector(), now: { Harness.now })
            .setCredentials(projectId: projectId, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId,
                            privateKeyPEM: TestKeys.pem)
        for (method, route) in routes {
            assertError(h.admin(method, route), status: 409, code: "ENCRYPTION_KEY_MISSING",
                        error: "The project's App Store credentials cannot be opened: the server has no encryption key.",
                        suggestion: "Set BOUNCER_ENCRYPTION_KEY on the server to the key the credentials were stored "
                            + "under and restart, or store the credentials again after setting a new key.")
        }
    }

    func testAdminAuthIsRequired() {
        let h = Harness()
        assertError(h.send(.get, path), status: 401, code: "AUTH_INVALID_ADMIN_TOKEN")
        assertError(h.send(.put, path, headers: [("Content-Type", "application/json")], body: body()), status: 401,
                    code: "AUTH_INVALID_ADMIN_TOKEN")
        assertError(h.send(.delete, path, headers: [("Authorization", "Bearer wrong-token-0123456789")]), status: 401,
                    code: "AUTH_INVALID_ADMIN_TOKEN")
        assertError(Harness(adminToken: nil).admin(.get, path), status: 404, code: "ADMIN_API_DISABLED")
        XCTAssertTrue(h.credentials.rows.isEmpty)
    }

    func testStoreOutageIs503AndBugIs500WithoutInternals() {
        let h = Harness()
        h.credentials.failure = .unavailable
        assertError(h.admin(.put, path, body: body()), status: 503, code: "SERVICE_UNAVAILABLE")
        assertError(h.admin(.get, path), status: 503, code: "SERVICE_UNAVAILABLE")
        h.credentials.failure = .internalBug
        let bug = h.admin(.delete, path)
        assertError(bug, status: 500, code: "INTERNAL_ERROR")
        XCTAssertFalse(bug.text.contains("42P01"))
        assertNoKey(h.log.all)
    }

    func testUndecryptableCredentialsNameTheOperatorsFix() throws {
        let h = Harness()
        XCTAssertEqual(h.admin(.put, path, body: body()).status, 200)
        // The server restarted with another key and without the previous one.
        let rotated = CredentialAdministration(
            projects: h.projects, store: h.credentials, sealer: FakeSealer(keyIds: [FakeSealer.keyB]),
            inspector: FakeKeyInspector(), now: { Harness.now })
        XCTAssertThrowsError(try rotated.unsealedCredentials(projectId: projectId)) { error in
            XCTAssertEqual((error as? DomainError)?.code, .encryptionKeyUnknown)
        }
    }
}

/// The route's suggestion, as tests compare it (the handler's static is internal to API).
enum APIHandlersText {
    static let credentialsSuggestion = "Request body requires issuer_id, key_id and private_key. In App Store "
        + "Connect, Users and Access > Integrations > In-App Purchase: the Issuer ID (a UUID) is shown above the "
        + "keys, the Key ID (10 characters) next to each key, and private_key is the whole .p8 file "
        + "(-----BEGIN PRIVATE KEY-----, a P-256 key in PKCS#8 PEM), downloadable once when the key is generated."
}

/// The use cases the API and the CLI share: opening for use and re-encryption under a rotated key.
final class CredentialAdministrationTests: XCTestCase {
    let projectId = FakeProjectStore.uuid(900)

    func make(_ h: Harness, _ sealer: FakeSealer?) -> CredentialAdministration {
        let clock = h.clock
        return CredentialAdministration(projects: h.projects, store: h.credentials, sealer: sealer,
                                        inspector: FakeKeyInspector(), now: { clock.now })
    }

    func testUnsealedCredentialsReturnTheKeyToCallersOnly() throws {
        let h = Harness()
        let admin = make(h, FakeSealer())
        let shown = try admin.setCredentials(projectId: projectId, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId,
                                             privateKeyPEM: "\n  " + TestKeys.pem + "\n\n")
        let opened = try admin.unsealedCredentials(projectId: projectId)
        XCTAssertEqual(opened.credentials, shown)
        XCTAssertEqual(opened.privateKeyPEM, TestKeys.pem, "trimmed, one final newline")
        // However it is printed, the opened value shows no key.
        var dumped = ""
        dump(opened, to: &dumped)
        for text in ["\(opened)", String(reflecting: opened), dumped, String(reflecting: [opened])] {
            XCTAssertFalse(text.contains(TestKeys.p256BodyMarker), text)
            XCTAssertTrue(text.contains(TestKeys.keyId), text)
        }
        XCTAssertThrowsError(try make(h, nil).unsealedCredentials(projectId: projectId)) {
            XCTAssertEqual(($0 as? DomainError)?.code, .encryptionKeyMissing)
        }
    }

    func testSealedValueMovedToAnotherProjectDoesNotOpen() throws {
        let h = Harness()
        let other = try h.projects.createProject(NewProject(ProjectSettings(name: "B", bundleId: "b")), publicKey: "pk_b",
                                                 secretKeyHash: [1], now: Harness.now)
        let admin = make(h, FakeSealer())
        _ = try admin.setCredentials(projectId: projectId, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId,
                                     privateKeyPEM: TestKeys.pem)
        _ = try admin.setCredentials(projectId: other.id, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId,
                                     privateKeyPEM: TestKeys.pem2)
        let sealed = try XCTUnwrap(h.credentials.rows[projectId]).sealedPrivateKey
        h.credentials.state.withLock { $0.rows[other.id]?.sealedPrivateKey = sealed }
        XCTAssertThrowsError(try admin.unsealedCredentials(projectId: other.id)) {
            XCTAssertEqual(($0 as? DomainError)?.code, .sealedSecretCorrupt)
        }
    }

    func testReencryptMovesEveryValueToTheCurrentKeyOnce() throws {
        let h = Harness()
        let second = try h.projects.createProject(NewProject(ProjectSettings(name: "B", bundleId: "b")), publicKey: "pk_b",
                                                  secretKeyHash: [1], now: Harness.now)
        let third = try h.projects.createProject(NewProject(ProjectSettings(name: "C", bundleId: "c")), publicKey: "pk_c",
                                                 secretKeyHash: [2], now: Harness.now)
        let old = make(h, FakeSealer(keyIds: [FakeSealer.keyA]))
        for id in [projectId, second.id] {
            _ = try old.setCredentials(projectId: id, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId,
                                       privateKeyPEM: TestKeys.pem)
        }
        // Rotated: B is current, A still opens.
        let rotated = make(h, FakeSealer(keyIds: [FakeSealer.keyB, FakeSealer.keyA]))
        _ = try rotated.setCredentials(projectId: third.id, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId,
                                       privateKeyPEM: TestKeys.pem2)
        XCTAssertEqual(try rotated.unsealedCredentials(projectId: projectId).privateKeyPEM, TestKeys.pem)
        let before = h.credentials.rows
        var lines: [String] = []
        let report = try rotated.reencryptAll { lines.append("\($0.uuidString.lowercased()) \($1)") }
        XCTAssertEqual(report.resealed, 2)
        XCTAssertEqual(report.alreadyCurrent, 1)
        XCTAssertEqual(report.failures, [])
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(Set(h.credentials.rows.values.map(\.sealedPrivateKey.keyId)), [FakeSealer.keyB])
        // Only the encryption changed: metadata and updated_at are the credentials', untouched.
        XCTAssertEqual(h.credentials.rows.mapValues(\.publicHalf), before.mapValues(\.publicHalf))
        // Without the previous key, everything still opens.
        let only = make(h, FakeSealer(keyIds: [FakeSealer.keyB]))
        for id in [projectId, second.id] {
            XCTAssertEqual(try only.unsealedCredentials(projectId: id).privateKeyPEM, TestKeys.pem)
        }
        // A second run has nothing to do.
        let again = try rotated.reencryptAll()
        XCTAssertEqual(again, CredentialAdministration.ReencryptionReport(resealed: 0, alreadyCurrent: 3))
    }

    func testReencryptReportsValuesItCannotOpenAndContinues() throws {
        let h = Harness()
        let second = try h.projects.createProject(NewProject(ProjectSettings(name: "B", bundleId: "b")), publicKey: "pk_b",
                                                  secretKeyHash: [1], now: Harness.now)
        _ = try make(h, FakeSealer(keyIds: ["cccccccccccccccc"])).setCredentials(
            projectId: projectId, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId, privateKeyPEM: TestKeys.pem)
        _ = try make(h, FakeSealer(keyIds: [FakeSealer.keyA])).setCredentials(
            projectId: second.id, issuerId: TestKeys.issuerId, keyId: TestKeys.keyId, privateKeyPEM: TestKeys.pem)
        let report = try make(h, FakeSealer(keyIds: [FakeSealer.keyB, FakeSealer.keyA])).reencryptAll()
        XCTAssertEqual(report.resealed, 1)
        XCTAssertEqual(report.failures.map(\.projectId), [projectId])
        XCTAssertEqual(report.failures.first?.reason,
                       "ENCRYPTION_KEY_UNKNOWN: Sealed under key cccccccccccccccc, which is not configured.")
        XCTAssertEqual(h.credentials.rows[projectId]?.sealedPrivateKey.keyId, "cccccccccccccccc", "left as it was")
        XCTAssertThrowsError(try make(h, nil).reencryptAll()) {
            XCTAssertEqual(($0 as? DomainError)?.code, .encryptionKeyMissing)
        }
    }
}
