import Crypto
import Foundation
import JSON
import Postgres
import TestSupport
import XCTest

/// Accounts and API keys against the real `bouncer serve` and PostgreSQL (issue 24, items 1 and 4).
final class AccountsE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "accounts" }
    /// 127.0.0.1 is a trusted proxy, so the lockout test speaks from an address of its own.
    override class var serverOverrides: [String: String?] { ["BOUNCER_TRUSTED_PROXIES": "127.0.0.1/32"] }

    static let defaultAccount = "00000000-0000-4000-8000-000000000001"

    func createAccount(_ name: String) throws -> String {
        let r = try server.client.post("/v1/admin/accounts", json: ["name": .string(name)], headers: E2E.admin)
        XCTAssertEqual(r.status, 201, r.description)
        return try XCTUnwrap(try r.json()["id"]?.stringValue)
    }

    func createProject(account: String?, headers: [String: String] = E2E.admin) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("name", "App"), ("bundle_id", .string(E2E.uniqueBundle()))]
        if let account { pairs.append(("account_id", .string(account))) }
        return try server.client.post("/v1/admin/projects", json: .object(JSONObject(pairs)), headers: headers)
    }

    func createKey(account: String, role: String, projects: [String]? = nil, expiresAt: String? = nil,
                   headers: [String: String] = E2E.admin) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("name", .string("\(role) key")), ("role", .string(role))]
        if let projects { pairs.append(("project_ids", .array(projects.map { .string($0) }))) }
        if let expiresAt { pairs.append(("expires_at", .string(expiresAt))) }
        return try server.client.post("/v1/admin/accounts/\(account)/api-keys", json: .object(JSONObject(pairs)),
                                      headers: headers)
    }

    static func bearer(_ key: String) -> [String: String] { ["Authorization": "Bearer \(key)"] }

    /// Item 1 in one story: the default account takes projects while it is the only one; with two, the operator
    /// names the account; an account with projects cannot be deleted.
    func testAccountsOwnProjects() throws {
        let client = try server.client
        let first = try createProject(account: nil)
        XCTAssertEqual(first.status, 201, first.description)
        XCTAssertEqual(try first.json()["account_id"]?.stringValue, Self.defaultAccount)

        let created = try client.post("/v1/admin/accounts", json: ["name": "Acme"], headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let acme = try created.json()
        let acmeId = try XCTUnwrap(acme["id"]?.stringValue)
        XCTAssertEqual(acme.objectValue?.keys, ["id", "name", "created_at", "updated_at"])
        XCTAssertEqual(acme["name"]?.stringValue, "Acme")
        let listed = try client.get("/v1/admin/accounts", headers: E2E.admin)
        XCTAssertEqual(listed.status, 200)
        XCTAssertEqual(try listed.json()["accounts"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["Default", "Acme"])

        // Two accounts: the operator must say which.
        let ambiguous = try createProject(account: nil)
        assertError(ambiguous, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try ambiguous.json()["details"], [["path": ["account_id"],
                                                           "message": "Required when more than one account exists"]])
        XCTAssertTrue(try XCTUnwrap(try ambiguous.json()["suggestion"]?.stringValue).contains("account_id (uuid)"))
        assertError(try createProject(account: UUID().uuidString), 404, "ACCOUNT_NOT_FOUND", error: "Account not found.",
                    suggestion: "Check the account id; GET /v1/admin/accounts lists them.")
        let owned = try createProject(account: acmeId)
        XCTAssertEqual(owned.status, 201, owned.description)
        let projectId = try XCTUnwrap(try owned.json()["id"]?.stringValue)
        XCTAssertEqual(try owned.json()["account_id"]?.stringValue, acmeId)
        XCTAssertEqual(try client.get("/v1/admin/projects/\(projectId)", headers: E2E.admin).json()["account_id"]?.stringValue,
                       acmeId)
        let row = try db.query("SELECT account_id::text AS a FROM projects WHERE id = \(UUID(uuidString: projectId))")
        XCTAssertEqual(try row.first?.decode("a", as: String.self), acmeId)

        let renamed = try client.send("PATCH", "/v1/admin/accounts/\(acmeId)", json: ["name": "Acme Inc"], headers: E2E.admin)
        XCTAssertEqual(renamed.status, 200)
        XCTAssertEqual(try renamed.json()["name"]?.stringValue, "Acme Inc")
        assertError(try client.send("PATCH", "/v1/admin/accounts/\(acmeId)", json: ["name": ""], headers: E2E.admin),
                    400, "VALIDATION_ERROR")

        let refused = try client.delete("/v1/admin/accounts/\(acmeId)", headers: E2E.admin)
        assertError(refused, 409, "ACCOUNT_HAS_PROJECTS", error: "The account still owns 1 project(s).",
                    suggestion: "Delete the account's projects first (DELETE /v1/admin/projects/{id}; GET "
                        + "/v1/admin/projects lists them with their account_id), then delete the account.")
        XCTAssertEqual(try client.delete("/v1/admin/projects/\(projectId)", headers: E2E.admin).status, 204)
        XCTAssertEqual(try client.delete("/v1/admin/accounts/\(acmeId)", headers: E2E.admin).status, 204)
        assertError(try client.get("/v1/admin/accounts/\(acmeId)", headers: E2E.admin), 404, "ACCOUNT_NOT_FOUND")
        XCTAssertEqual(try db.query("SELECT 1 FROM accounts WHERE id = \(UUID(uuidString: acmeId))").count, 0)
    }

    /// Item 4: a key is shown once and stored as its SHA-256; it is limited to its account and role; `last_used_at`
    /// is written at most once a minute; revoked and expired keys are 401 at once.
    func testScopedAPIKeys() throws {
        let client = try server.client
        let account = try createAccount("Keys \(E2E.uniqueId())")
        let project = try XCTUnwrap(try createProject(account: account).json()["id"]?.stringValue)
        let made = try createKey(account: account, role: "viewer", projects: [project])
        XCTAssertEqual(made.status, 201, made.description)
        XCTAssertEqual(made.header("Cache-Control"), "no-store")
        let body = try made.json()
        XCTAssertEqual(body.objectValue?.keys, ["id", "account_id", "name", "role", "project_ids", "last4", "key",
                                                "created_at", "expires_at", "last_used_at"])
        let key = try XCTUnwrap(body["key"]?.stringValue)
        let keyId = try XCTUnwrap(body["id"]?.stringValue)
        XCTAssertTrue(key.hasPrefix("bk_") && key.utf8.count == 67, key)
        XCTAssertEqual(body["role"]?.stringValue, "viewer")
        XCTAssertEqual(body["project_ids"], .array([.string(project)]))
        XCTAssertEqual(body["last4"]?.stringValue, String(key.suffix(4)))
        XCTAssertEqual(body["expires_at"], .null)
        XCTAssertEqual(body["last_used_at"], .null)
        let stored = try db.query("SELECT key_hash FROM api_keys WHERE id = \(UUID(uuidString: keyId))")
        XCTAssertEqual(try stored.first?.decode("key_hash", as: [UInt8].self), Digest.sha256(Array(key.utf8)))

        // Read-only within its project; the list shows only that project.
        XCTAssertEqual(try client.get("/v1/admin/projects/\(project)", headers: Self.bearer(key)).status, 200)
        let projects = try client.get("/v1/admin/projects", headers: Self.bearer(key)).json()["projects"]?.arrayValue
        XCTAssertEqual(projects?.compactMap { $0["id"]?.stringValue }, [project])
        let denied = try client.send("PATCH", "/v1/admin/projects/\(project)", json: ["name": "x"], headers: Self.bearer(key))
        assertError(denied, 403, "PERMISSION_DENIED", error: "This credential may not do this: it lacks projects.write.")
        XCTAssertEqual(try denied.json()["details"], [["path": ["permission"], "message": "projects.write"]])

        // last_used_at: written by the first use, not again within the minute.
        let listed = try client.get("/v1/admin/accounts/\(account)/api-keys", headers: E2E.admin).json()["api_keys"]
        let used = try XCTUnwrap(listed?.arrayValue?.first?["last_used_at"]?.stringValue)
        XCTAssertNil(listed?.arrayValue?.first?["key"], "the text is shown once")
        XCTAssertEqual(try client.get("/v1/admin/projects/\(project)", headers: Self.bearer(key)).status, 200)
        let again = try client.get("/v1/admin/accounts/\(account)/api-keys", headers: E2E.admin).json()["api_keys"]
        XCTAssertEqual(again?.arrayValue?.first?["last_used_at"]?.stringValue, used)

        // No escalation: an owner key can make a viewer key; a developer key cannot make an owner key.
        let owner = try XCTUnwrap(try createKey(account: account, role: "owner").json()["key"]?.stringValue)
        XCTAssertEqual(try createKey(account: account, role: "viewer", headers: Self.bearer(owner)).status, 201)
        let developer = try XCTUnwrap(try createKey(account: account, role: "developer").json()["key"]?.stringValue)
        let escalation = try createKey(account: account, role: "owner", headers: Self.bearer(developer))
        assertError(escalation, 403, "PERMISSION_DENIED")
        XCTAssertEqual(try escalation.json()["details"], [["path": ["permission"], "message": "members.manage"]])
        assertError(try createKey(account: account, role: "viewer", headers: Self.bearer(key)), 403, "PERMISSION_DENIED")
        let foreign = try createKey(account: account, role: "viewer", projects: [UUID().uuidString])
        assertError(foreign, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try foreign.json()["details"], [["path": ["project_ids", "0"], "message": "No such project in this account"]])

        // Revoked: 401 at once.
        XCTAssertEqual(try client.delete("/v1/admin/accounts/\(account)/api-keys/\(keyId)", headers: E2E.admin).status, 204)
        assertError(try client.get("/v1/admin/projects/\(project)", headers: Self.bearer(key)), 401, "AUTH_INVALID_API_KEY",
                    error: "Invalid API key.")
        assertError(try client.delete("/v1/admin/accounts/\(account)/api-keys/\(keyId)", headers: E2E.admin), 404,
                    "API_KEY_NOT_FOUND")
        XCTAssertEqual(try db.query("SELECT 1 FROM api_keys WHERE id = \(UUID(uuidString: keyId))").count, 0)

        // Expired: 401 from its instant.
        let soon = E2E.iso(E2E.ms(1.5))
        let expiring = try XCTUnwrap(try createKey(account: account, role: "owner", expiresAt: soon).json()["key"]?.stringValue)
        XCTAssertEqual(try client.get("/v1/admin/projects/\(project)", headers: Self.bearer(expiring)).status, 200)
        Thread.sleep(forTimeInterval: 2)
        assertError(try client.get("/v1/admin/projects/\(project)", headers: Self.bearer(expiring)), 401, "AUTH_INVALID_API_KEY")
        assertError(try createKey(account: account, role: "owner", expiresAt: E2E.iso(E2E.ms(-60))), 400, "VALIDATION_ERROR")
    }

    /// Wrong `bk_…` keys count toward the address's lockout like wrong admin tokens.
    func testWrongKeysLockTheAddressOut() throws {
        let client = try server.client
        let from = ["X-Forwarded-For": "198.51.100.77"]
        for _ in 1...10 {
            let wrong = "bk_" + String(repeating: "0", count: 64)
            assertError(try client.get("/v1/admin/projects", headers: from.merging(Self.bearer(wrong)) { $1 }), 401,
                        "AUTH_INVALID_API_KEY")
        }
        assertError(try client.get("/v1/admin/projects", headers: from.merging(E2E.admin) { $1 }), 429,
                    "AUTH_TOO_MANY_FAILURES")
    }
}
