import Foundation
import JSON
import Postgres
import TestSupport
import XCTest

/// The audit log against the real `bouncer serve` and PostgreSQL (issue 24, item 5).
final class AuditLogE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "audit" }
    /// An encryption key seals webhook secrets, credentials and TOTP secrets; webhooks may point at this machine.
    override class var serverOverrides: [String: String?] {
        ["BOUNCER_ENCRYPTION_KEY": Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString(),
         "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1"]
    }

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
        "PUT /v1/admin/projects/{id}/purchases/{originalTransactionId}/app-account-token": "purchase.set_app_account_token",
        "POST /v1/admin/projects/{id}/products/{productId}/extend": "product.extend_renewals",
        "POST /v1/admin/projects/{id}/users/{userId}/grants": "grant.create",
        "DELETE /v1/admin/projects/{id}/users/{userId}/grants/{grantId}": "grant.delete",
        "DELETE /v1/admin/projects/{id}/users/{userId}": "customer.erase",
        "PUT /v1/admin/projects/{id}/webhook": "webhook.put",
        "DELETE /v1/admin/projects/{id}/webhook": "webhook.delete",
        "POST /v1/admin/projects/{id}/webhook/rotate-secret": "webhook.rotate_secret",
        "POST /v1/admin/projects/{id}/webhook/test": "webhook.test",
        "POST /v1/admin/projects/{id}/webhook/deliveries/{eventId}/retry": "webhook.retry_delivery",
        "DELETE /v1/admin/sessions": "sessions.sign_out_everywhere",
        "POST /v1/admin/accounts/{id}/members": "member.invite",
        "PATCH /v1/admin/accounts/{id}/members/{memberId}": "member.update",
        "DELETE /v1/admin/accounts/{id}/members/{memberId}": "member.remove",
        "POST /v1/admin/accounts/{id}/members/{memberId}/totp": "member.enable_totp",
        "PUT /v1/admin/accounts/{id}/quotas": "account.set_quotas",
        "PUT /v1/admin/projects/{id}/revenue-settings": "revenue_settings.update",
        "PUT /v1/admin/exchange-rates": "exchange_rates.update",
        "PUT /v1/admin/tax-rates": "tax_rates.update",
        "PUT /v1/admin/projects/{id}/retention/rules": "retention.put_rules",
        "PUT /v1/admin/projects/{id}/retention/messages/{messageId}": "retention.upload_message",
        "DELETE /v1/admin/projects/{id}/retention/messages/{messageId}": "retention.delete_message",
        "PUT /v1/admin/projects/{id}/retention/images/{imageId}": "retention.upload_image",
        "DELETE /v1/admin/projects/{id}/retention/images/{imageId}": "retention.delete_image",
        "PUT /v1/admin/projects/{id}/retention/default-messages/{productId}/{locale}": "retention.set_default_message",
        "DELETE /v1/admin/projects/{id}/retention/default-messages/{productId}/{locale}": "retention.delete_default_message",
        "PUT /v1/admin/projects/{id}/retention/realtime-url": "retention.set_realtime_url",
        "POST /v1/admin/projects/{id}/retention/performance-test": "retention.performance_test",
    ]
    /// Changing methods that change nothing (a simulation): never audited.
    static let readOnly: Set<String> = ["POST /v1/admin/projects/{id}/retention/simulate"]

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

    /// Webhooks, credentials, grants, erase, members, quotas and sessions: each store writes its entry in the
    /// change's transaction (the gate makes none up: `bouncer_audit_missing_total` stays 0), with before and after,
    /// never a secret, and a customer's entries never name the user.
    func testEveryOtherChangeWritesItsEntryInItsStore() throws {
        let account = try XCTUnwrap(try send("POST", "/v1/admin/accounts", "/v1/admin/accounts", ["name": "Stores"],
                                             expect: 201).json()["id"]?.stringValue)
        let project = try XCTUnwrap(try send("POST", "/v1/admin/projects", "/v1/admin/projects", [
            "name": "S", "bundle_id": .string(E2E.uniqueBundle()), "account_id": .string(account),
        ], expect: 201).json()["id"]?.stringValue)
        let a = "/v1/admin/accounts/\(account)", p = "/v1/admin/projects/\(project)"
        let aT = "/v1/admin/accounts/{id}", pT = "/v1/admin/projects/{id}"
        func changes(_ r: HTTPResponse) throws -> String { try entry(r).changes }

        let quotas = try send("PUT", aT + "/quotas", a + "/quotas", ["receipts_per_month": 100, "requests_per_second": .null], expect: 200)
        XCTAssertEqual(try changes(quotas), #"{"receipts_per_month": [null, 100]}"#)

        let url = "http://127.0.0.1:9/hook"
        let hook = try send("PUT", pT + "/webhook", p + "/webhook", ["url": .string(url)], expect: 200)
        let hookSecret = try XCTUnwrap(try hook.json()["secret"]?.stringValue)
        XCTAssertEqual(try changes(hook), #"{"url": [null, "http://127.0.0.1:9/hook"], "secret": [null, "[redacted]"]}"#)
        let moved = try send("PUT", pT + "/webhook", p + "/webhook", ["url": "http://127.0.0.1:9/other"], expect: 200)
        XCTAssertEqual(try changes(moved), #"{"url": ["http://127.0.0.1:9/hook", "http://127.0.0.1:9/other"]}"#)
        let rotated = try send("POST", pT + "/webhook/rotate-secret", p + "/webhook/rotate-secret", expect: 200)
        let rotatedSecret = try XCTUnwrap(try rotated.json()["secret"]?.stringValue)
        XCTAssertTrue(try changes(rotated).hasPrefix(#"{"secret": ["[redacted]", "[redacted]"], "#))
        let ping = try send("POST", pT + "/webhook/test", p + "/webhook/test", expect: 202)
        let eventId = try XCTUnwrap(try ping.json()["event_id"]?.stringValue, ping.text)
        XCTAssertEqual(try changes(ping), #"{"type": [null, "ping"]}"#)
        let retried = try send("POST", pT + "/webhook/deliveries/{eventId}/retry",
                               p + "/webhook/deliveries/\(eventId)/retry", expect: 202)
        XCTAssertTrue(try changes(retried).hasPrefix(#"{"status": ["#))
        let unhooked = try send("DELETE", pT + "/webhook", p + "/webhook", expect: 204)
        XCTAssertEqual(try changes(unhooked), #"{"url": ["http://127.0.0.1:9/other", null]}"#)

        let dir = try AppStoreCredentialsE2ETests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pem = try AppStoreCredentialsE2ETests.generate("audit.p8", in: dir).pem
        let credentials = try send("PUT", pT + "/app-store-credentials", p + "/app-store-credentials", [
            "issuer_id": .string(AppStoreCredentialsE2ETests.issuerId), "key_id": "AUDIT12345", "private_key": .string(pem),
        ], expect: 200)
        let fingerprint = try XCTUnwrap(try credentials.json()["key_fingerprint"]?.stringValue, credentials.text)
        XCTAssertEqual(try changes(credentials), """
            {"key_id": [null, "AUDIT12345"], "issuer_id": [null, "\(AppStoreCredentialsE2ETests.issuerId)"], \
            "fingerprint": [null, "\(fingerprint)"], "private_key": [null, "[redacted]"]}
            """)
        _ = try send("DELETE", pT + "/app-store-credentials", p + "/app-store-credentials", expect: 204)

        let user = "audit-user-\(E2E.uniqueId())"
        let uT = pT + "/users/{userId}", u = p + "/users/\(user)"
        let grant = try send("POST", uT + "/grants", u + "/grants", ["entitlement": "pro", "reason": "ticket 7"],
                             expect: 201)
        let grantId = try XCTUnwrap(try grant.json()["id"]?.stringValue)
        XCTAssertEqual(try changes(grant), #"{"entitlement": [null, "pro"]}"#, "never the reason (free text an erase replaces)")
        _ = try send("DELETE", uT + "/grants/{grantId}", u + "/grants/\(grantId)", expect: 200)
        let erased = try send("DELETE", uT, u, expect: 200)
        XCTAssertTrue(try changes(erased).contains(#""grants_anonymised": [null, 1]"#))
        XCTAssertEqual(try db.query("""
            SELECT count(*)::int8 AS n FROM audit_log WHERE project_id = \(project)::uuid AND audit_log::text LIKE \("%" + user + "%")
            """).first?.decode("n", as: Int64.self), 0, "the user id is in no entry")

        let email = "audit\(E2E.uniqueId())@example.com"
        let invited = try send("POST", aT + "/members", a + "/members", ["email": .string(email), "role": "viewer"],
                               expect: 201)
        let memberId = try XCTUnwrap(try invited.json()["id"]?.stringValue)
        let inviteToken = try XCTUnwrap(try invited.json()["invite_token"]?.stringValue)
        XCTAssertEqual(try changes(invited), """
            {"role": [null, "viewer"], "email": [null, "\(email)"], "invite_token": [null, "[redacted]"]}
            """)
        let promoted = try send("PATCH", aT + "/members/{memberId}", a + "/members/\(memberId)", ["role": "developer"],
                                expect: 200)
        XCTAssertEqual(try changes(promoted), #"{"role": ["viewer", "developer"]}"#)
        let totp = try send("POST", aT + "/members/{memberId}/totp", a + "/members/\(memberId)/totp", expect: 200)
        let otpauth = try XCTUnwrap(try totp.json()["otpauth_uri"]?.stringValue)
        _ = try send("DELETE", aT + "/members/{memberId}", a + "/members/\(memberId)", expect: 204)
        _ = try send("DELETE", "/v1/admin/sessions", "/v1/admin/sessions", expect: 204)

        let dump = try db.query("SELECT string_agg(audit_log::text, ' ') AS t FROM audit_log").first?
            .decode("t", as: String?.self) ?? ""
        let totpSecret = String(otpauth.split(separator: "secret=").last?.prefix(32) ?? "")
        for secret in [hookSecret, rotatedSecret, inviteToken, totpSecret, String(pem.split(separator: "\n")[1])] {
            XCTAssertFalse(dump.contains(secret), "a secret reached the audit log")
        }
        let metrics = String(decoding: try server.client.get("/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.split(separator: "\n").contains("bouncer_audit_missing_total 0"), metrics)
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
