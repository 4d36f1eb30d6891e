import Foundation
import JSON
import Postgres
import TestSupport
import XCTest

/// The audit log against the real `bouncer serve` and PostgreSQL (issue 24, item 5).
final class AuditLogE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "audit" }

    /// The action each changing admin operation records (the API's `AuditActions`, stated again here).
    static let actions: [String: String] = [
        "POST /v1/admin/accounts": "account.create",
        "PATCH /v1/admin/accounts/{id}": "account.update",
        "DELETE /v1/admin/accounts/{id}": "account.delete",
        "POST /v1/admin/accounts/{id}/api-keys": "api_key.create",
        "DELETE /v1/admin/accounts/{id}/api-keys/{keyId}": "api_key.revoke",
        "POST /v1/admin/projects": "project.create",
        "PATCH /v1/admin/projects/{id}": "project.update",
        "DELETE /v1/admin/projects/{id}": "project.delete",
        "POST /v1/admin/projects/{id}/rotate-keys": "project.rotate_keys",
        "POST /v1/admin/projects/{id}/reconcile": "project.reconcile",
        "PUT /v1/admin/projects/{id}/products/{productId}": "product.put",
        "DELETE /v1/admin/projects/{id}/products/{productId}": "product.delete",
        "PUT /v1/admin/projects/{id}/app-store-credentials": "credentials.put",
        "DELETE /v1/admin/projects/{id}/app-store-credentials": "credentials.delete",
        "POST /v1/admin/projects/{id}/app-store/test-notification": "app_store.test_notification",
        "POST /v1/admin/projects/{id}/subscriptions/{originalTransactionId}/extend": "subscription.extend",
        "POST /v1/admin/projects/{id}/users/{userId}/grants": "grant.create",
        "DELETE /v1/admin/projects/{id}/users/{userId}/grants/{grantId}": "grant.delete",
        "DELETE /v1/admin/projects/{id}/users/{userId}": "customer.erase",
        "PUT /v1/admin/projects/{id}/webhook": "webhook.put",
        "DELETE /v1/admin/projects/{id}/webhook": "webhook.delete",
        "POST /v1/admin/projects/{id}/webhook/rotate-secret": "webhook.rotate_secret",
        "POST /v1/admin/projects/{id}/webhook/test": "webhook.test",
        "POST /v1/admin/projects/{id}/webhook/deliveries/{eventId}/retry": "webhook.retry_delivery",
        "DELETE /v1/admin/sessions": "sessions.sign_out_everywhere",
    ]

    /// The count: a successful change (2xx, not GET) has exactly one entry, with its operation's action, under the
    /// response's request id; a refused one has none. Called for every request of the isolation walk too.
    static func assertAudited(_ db: E2EDatabase, method: String, template: String, _ r: HTTPResponse,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        guard method != "GET", let requestId = r.header("X-Request-Id") else { return }
        let rows = try db.query("SELECT action FROM audit_log WHERE request_id = \(requestId)")
        let actions = try rows.map { try $0.decode("action", as: String.self) }
        let operation = "\(method) \(template)"
        if (200..<300).contains(r.status) {
            XCTAssertEqual(actions, [try XCTUnwrap(Self.actions[operation], operation)], "\(operation): \(r.status)",
                           file: file, line: line)
        } else {
            XCTAssertEqual(actions, [], "\(operation): \(r.status) \(r.text)", file: file, line: line)
        }
    }

    func send(_ method: String, _ template: String, _ path: String, _ json: JSONValue? = nil,
              headers: [String: String] = E2E.admin, expect status: Int) throws -> HTTPResponse {
        var headers = headers
        var body: [UInt8]?
        if let json {
            body = Array(json.serializedString().utf8)
            headers["Content-Type"] = "application/json"
        }
        let r = try server.client.request(method, path, headers: headers, body: body)
        XCTAssertEqual(r.status, status, "\(method) \(path): \(r.text)")
        try Self.assertAudited(db, method: method, template: template, r)
        return r
    }

    func entry(_ r: HTTPResponse) throws -> (actor: String, changes: String, account: String?, project: String?) {
        let row = try XCTUnwrap(try db.query("""
            SELECT actor_label, changes::text AS changes, account_id::text AS a, project_id::text AS p
            FROM audit_log WHERE request_id = \(try XCTUnwrap(r.header("X-Request-Id")))
            """).first)
        return (try row.decode("actor_label", as: String.self), try row.decode("changes", as: String.self),
                try row.decode("a", as: String?.self), try row.decode("p", as: String?.self))
    }

    /// Accounts, keys, projects and products: each change one entry, in its transaction, with before and after;
    /// no secret the test created appears in any row; members of another account see nothing of this one.
    func testChangesAreRecordedWithoutSecrets() throws {
        let account = try XCTUnwrap(try send("POST", "/v1/admin/accounts", "/v1/admin/accounts", ["name": "Audited"],
                                             expect: 201).json()["id"]?.stringValue)
        let renamed = try send("PATCH", "/v1/admin/accounts/{id}", "/v1/admin/accounts/\(account)",
                               ["name": "Audited Inc"], expect: 200)
        XCTAssertEqual(try entry(renamed).changes, #"{"name": ["Audited", "Audited Inc"]}"#)
        XCTAssertEqual(try entry(renamed).account, account)

        let keyResponse = try send("POST", "/v1/admin/accounts/{id}/api-keys", "/v1/admin/accounts/\(account)/api-keys",
                                   ["name": "ops", "role": "admin"], expect: 201)
        let key = try XCTUnwrap(try keyResponse.json()["key"]?.stringValue)
        let keyId = try XCTUnwrap(try keyResponse.json()["id"]?.stringValue)
        let asKey = ["Authorization": "Bearer \(key)"]

        let created = try send("POST", "/v1/admin/projects", "/v1/admin/projects",
                               ["name": "A", "bundle_id": .string(E2E.uniqueBundle())], headers: asKey, expect: 201)
        let project = try XCTUnwrap(try created.json()["id"]?.stringValue)
        let secretKey = try XCTUnwrap(try created.json()["secret_key"]?.stringValue)
        let made = try entry(created)
        XCTAssertEqual(made.actor, "api_key:\(keyId)")
        XCTAssertEqual(made.account, account)
        XCTAssertEqual(made.project, project)

        let updated = try send("PATCH", "/v1/admin/projects/{id}", "/v1/admin/projects/\(project)", ["name": "B"],
                               headers: asKey, expect: 200)
        XCTAssertEqual(try entry(updated).changes, #"{"name": ["A", "B"]}"#)
        let rotated = try send("POST", "/v1/admin/projects/{id}/rotate-keys", "/v1/admin/projects/\(project)/rotate-keys",
                               ["secret_key": ["grace_seconds": 0]], headers: asKey, expect: 200)
        let newSecret = try rotated.json()["secret_key"]?.stringValue
        _ = try send("PUT", "/v1/admin/projects/{id}/products/{productId}", "/v1/admin/projects/\(project)/products/pro",
                     ["entitlements": ["premium"]], headers: asKey, expect: 200)
        let removed = try send("DELETE", "/v1/admin/projects/{id}/products/{productId}",
                               "/v1/admin/projects/\(project)/products/pro", headers: asKey, expect: 204)
        XCTAssertEqual(try entry(removed).changes, #"{"entitlements": [["premium"], null]}"#)

        // A refused change writes nothing; a wrong key is a failed sign-in, without the key.
        _ = try send("PATCH", "/v1/admin/projects/{id}", "/v1/admin/projects/\(project)", ["name": ""],
                     headers: asKey, expect: 400)
        let wrongKey = "bk_" + String(repeating: "0", count: 64)
        let failed = try server.client.get("/v1/admin/projects", headers: ["Authorization": "Bearer \(wrongKey)"])
        XCTAssertEqual(failed.status, 401)
        let failure = try XCTUnwrap(try db.query("""
            SELECT action, actor_type, actor_label FROM audit_log WHERE request_id = \(try XCTUnwrap(failed.header("X-Request-Id")))
            """).first)
        XCTAssertEqual(try failure.decode("action", as: String.self), "session.sign_in_failed")
        XCTAssertEqual(try failure.decode("actor_label", as: String.self), "api_key:unknown")

        let deleted = try send("DELETE", "/v1/admin/projects/{id}", "/v1/admin/projects/\(project)", headers: asKey,
                               expect: 204)
        XCTAssertEqual(try entry(deleted).account, account)
        _ = try send("DELETE", "/v1/admin/accounts/{id}/api-keys/{keyId}",
                     "/v1/admin/accounts/\(account)/api-keys/\(keyId)", expect: 204)

        // No secret the test made appears in any stored row.
        let dump = try db.query("SELECT string_agg(audit_log::text, ' ') AS t FROM audit_log").first?
            .decode("t", as: String?.self) ?? ""
        for secret in [key, secretKey, newSecret ?? secretKey, wrongKey, E2E.adminToken] {
            XCTAssertFalse(dump.contains(secret), "a secret reached the audit log")
        }
    }

    /// The list: the operator sees every account's entries; a key sees only its account's, another account's id
    /// is an empty page; keyset pages by cursor; CSV with RFC 4180 quoting and injection-safe cells.
    func testListScopePagesAndCSV() throws {
        let mine = try XCTUnwrap(try send("POST", "/v1/admin/accounts", "/v1/admin/accounts", ["name": "=cmd|' /C calc'!A0"],
                                          expect: 201).json()["id"]?.stringValue)
        let other = try XCTUnwrap(try send("POST", "/v1/admin/accounts", "/v1/admin/accounts", ["name": "Other, \"quoted\""],
                                           expect: 201).json()["id"]?.stringValue)
        let key = try XCTUnwrap(try send("POST", "/v1/admin/accounts/{id}/api-keys", "/v1/admin/accounts/\(mine)/api-keys",
                                         ["name": "reader", "role": "viewer"], expect: 201).json()["key"]?.stringValue)
        let viewer = ["Authorization": "Bearer \(key)"]
        for name in ["one", "two", "three"] {
            _ = try send("PATCH", "/v1/admin/accounts/{id}", "/v1/admin/accounts/\(mine)", ["name": .string(name)],
                         expect: 200)
        }
        _ = try send("PATCH", "/v1/admin/accounts/{id}", "/v1/admin/accounts/\(other)", ["name": "x"], expect: 200)

        let own = try server.client.get("/v1/admin/audit-log", headers: viewer)
        XCTAssertEqual(own.status, 200, own.text)
        let entries = try XCTUnwrap(try own.json()["entries"]?.arrayValue)
        XCTAssertEqual(entries.compactMap { $0["action"]?.stringValue },
                       ["account.update", "account.update", "account.update", "api_key.create", "account.create"])
        XCTAssertEqual(Set(entries.compactMap { $0["account_id"]?.stringValue }), [mine])
        XCTAssertEqual(entries.first?["changes"], ["name": ["two", "three"]])
        XCTAssertEqual(entries.first?["actor"], ["type": "operator", "id": nil, "label": "operator"])
        let otherPage = try server.client.get("/v1/admin/audit-log?account_id=\(other)", headers: viewer)
        XCTAssertEqual(try otherPage.json()["entries"], [])

        // Pages of two, by cursor, newest first: the same five entries.
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try server.client.get("/v1/admin/audit-log?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""),
                                             headers: viewer)
            XCTAssertEqual(page.status, 200, page.text)
            seen += try XCTUnwrap(try page.json()["entries"]?.arrayValue).compactMap { $0["id"]?.stringValue }
            cursor = try page.json()["next_cursor"]?.stringValue
        } while cursor != nil
        XCTAssertEqual(seen, entries.compactMap { $0["id"]?.stringValue })
        assertError(try server.client.get("/v1/admin/audit-log?cursor=nope", headers: viewer), 400, "VALIDATION_ERROR")

        // The operator filters by account and action; CSV.
        let csv = try server.client.get("/v1/admin/audit-log?format=csv&action=account.create&account_id=\(other)",
                                        headers: E2E.admin)
        XCTAssertEqual(csv.status, 200)
        XCTAssertEqual(csv.header("Content-Type"), "text/csv; charset=utf-8")
        let lines = csv.text.components(separatedBy: "\r\n")
        XCTAssertEqual(lines.first, "id,at,actor_type,actor_id,actor_label,action,account_id,project_id,target,changes,"
                       + "request_id,client_address")
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines[1].contains(#""{""name"":[null,""Other, \""quoted\""""]}""#), lines[1])
    }
}
