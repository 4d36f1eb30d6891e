import Crypto
import Foundation
import JSON
import Postgres
import Primitives
import TestSupport
import XCTest

/// Members and their sign-in against the real `bouncer serve` and PostgreSQL (issue 24, items 2 and 3): invite →
/// accept → sign in → act as the member's role, TOTP with replay refused, the lockout per email, and sessions that
/// end with the member's removal or role change.
final class MembersE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "members" }
    /// 127.0.0.1 is a trusted proxy, so each test speaks from addresses of its own; an encryption key seals TOTP.
    override class var serverOverrides: [String: String?] {
        ["BOUNCER_TRUSTED_PROXIES": "127.0.0.1/32",
         "BOUNCER_ENCRYPTION_KEY": Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()]
    }

    static let password = MemberSession.password

    func post(_ path: String, _ json: JSONValue, _ headers: [String: String] = E2E.admin,
              file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let r = try server.client.post(path, json: json, headers: headers)
        XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        return try r.json()
    }

    func account(_ name: String) throws -> String {
        try XCTUnwrap(try post("/v1/admin/accounts", ["name": .string(name)])["id"]?.stringValue)
    }

    func project(_ account: String) throws -> String {
        try XCTUnwrap(try post("/v1/admin/projects", ["name": "App", "bundle_id": .string(E2E.uniqueBundle()),
                                                      "account_id": .string(account)])["id"]?.stringValue)
    }

    /// `GET /v1/admin/session` says who the session acts as, so the console can hide what the role cannot do.
    func testSessionInfoNamesTheMemberTheirAccountRoleAndPermissions() throws {
        let account = try account("Session info \(E2E.uniqueId())")
        for role in ["owner", "developer", "viewer", "support"] {
            let (id, email) = try member(account, role)
            let signedIn = try session(try signIn(email, from: "203.0.113.40"))
            let r = try server.client.get("/v1/admin/session", headers: signedIn.get)
            XCTAssertEqual(r.status, 200, r.description)
            XCTAssertEqual(r.header("Cache-Control"), "no-store")
            let body = try r.json()
            XCTAssertEqual(Set(body.objectValue?.keys ?? []),
                           ["csrf_token", "expires_at", "kind", "account_id", "role", "email", "permissions"], role)
            XCTAssertEqual(body["kind"], "member")
            XCTAssertEqual(body["account_id"]?.stringValue, account)
            XCTAssertEqual(body["role"]?.stringValue, role)
            XCTAssertEqual(body["email"]?.stringValue, email)
            XCTAssertEqual(body["csrf_token"]?.stringValue, signedIn.csrf)
            XCTAssertEqual(body["permissions"]?.arrayValue?.compactMap(\.stringValue), Self.permissions[role], role)
            XCTAssertEqual(try server.client.get("/v1/admin/accounts/\(account)/members/\(id)", headers: signedIn.get).status,
                           role == "owner" ? 200 : 403, role)
        }
        let operatorSession = try server.client.post("/v1/admin/session", json: ["token": .string(E2E.adminToken)])
        let cookie = String(try XCTUnwrap(operatorSession.header("Set-Cookie")).prefix { $0 != ";" })
        let shown = try server.client.get("/v1/admin/session", headers: ["Cookie": cookie]).json()
        XCTAssertEqual(Set(shown.objectValue?.keys ?? []), ["csrf_token", "expires_at", "kind", "permissions"])
        XCTAssertEqual(shown["kind"], "operator")
        XCTAssertEqual(shown["permissions"]?.arrayValue?.count, 18)
        XCTAssertEqual(shown["permissions"]?.arrayValue?.contains("accounts.manage"), true)
    }

    /// The README's role table, as the session route answers it (sorted).
    static let permissions: [String: [String]] = [
        "owner": ["api_keys.manage", "audit.read", "credentials.manage", "customers.erase", "customers.export",
                  "customers.read", "customers.write", "keys.manage", "members.manage", "products.write", "projects.read",
                  "projects.write", "revenue.read", "usage.read", "webhooks.manage"],
        "developer": ["api_keys.manage", "audit.read", "credentials.manage", "customers.erase", "customers.export",
                      "customers.read", "customers.write", "keys.manage", "products.write", "projects.read",
                      "projects.write", "usage.read", "webhooks.manage"],
        "viewer": ["audit.read", "customers.read", "projects.read", "revenue.read", "usage.read"],
        "support": ["customers.export", "customers.read", "customers.write", "projects.read"],
    ]

    /// Item 2 and 3 in one story: the invite (hashed, single use), the password (PBKDF2 row), sign-in as the role,
    /// another account's project unseen, role rules, the last owner kept.
    func testInviteAcceptSignInAndActAsTheRole() throws {
        let client = try server.client
        let a = try account("A"), b = try account("B")
        let projectA = try project(a), projectB = try project(b)

        let invited = try invite(a, "  Owner.\(E2E.uniqueId())@A.Example ", "owner")
        XCTAssertEqual(invited.status, 201, invited.description)
        let body = try invited.json()
        XCTAssertEqual(Set(body.objectValue?.keys ?? []), ["id", "account_id", "email", "role", "status", "totp_enabled",
                                                            "invite_token", "invite_expires_at", "created_at", "updated_at"])
        let ownerEmail = try XCTUnwrap(body["email"]?.stringValue)
        XCTAssertEqual(ownerEmail, ownerEmail.lowercased())
        XCTAssertFalse(ownerEmail.hasPrefix(" "))
        XCTAssertEqual(body["status"]?.stringValue, "invited")
        XCTAssertEqual(invited.header("Cache-Control"), "no-store")
        let token = try XCTUnwrap(body["invite_token"]?.stringValue)
        XCTAssertTrue(token.hasPrefix("iv_") && token.count == 67)
        let ownerId = try XCTUnwrap(body["id"]?.stringValue)
        let row = try db.query("""
            SELECT invite_hash, invite_expires_at - created_at = interval '7 days' AS week FROM members
            WHERE id = \(ownerId)::uuid
            """).first
        XCTAssertEqual(try row?.decode("invite_hash", as: [UInt8]?.self), Digest.sha256(Array(token.utf8)))
        XCTAssertEqual(try row?.decode("week", as: Bool.self), true)
        // The same email, differently written: 409.
        assertError(try invite(a, ownerEmail.uppercased(), "viewer"), 409, "MEMBER_EMAIL_TAKEN")
        assertError(try invite(a, "not-an-email", "viewer"), 400, "VALIDATION_ERROR")
        // The list never shows the token.
        let listed = try client.get("/v1/admin/accounts/\(a)/members", headers: E2E.admin)
        XCTAssertEqual(listed.status, 200)
        XCTAssertFalse(listed.text.contains(token))

        let short = try accept(token, password: "elevenchars")
        assertError(short, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try short.json()["details"], [["path": ["password"], "message": "Must be at least 12 characters"]])
        let accepted = try accept(token)
        XCTAssertEqual(accepted.status, 200, accepted.description)
        XCTAssertEqual(try accepted.json()["status"]?.stringValue, "active")
        XCTAssertEqual(try accepted.json()["invite_expires_at"], .null)
        let stored = try XCTUnwrap(try db.query("""
            SELECT password_hash, password_salt, password_iterations::int8 AS n, invite_hash IS NULL AS used
            FROM members WHERE id = \(ownerId)::uuid
            """).first)
        let salt = try stored.decode("password_salt", as: [UInt8].self)
        XCTAssertEqual(salt.count, 16)
        XCTAssertEqual(try stored.decode("n", as: Int64.self), 210_000)
        XCTAssertEqual(try stored.decode("used", as: Bool.self), true)
        XCTAssertEqual(try stored.decode("password_hash", as: [UInt8].self),
                       PBKDF2.sha256(password: Array(Self.password.utf8), salt: salt, iterations: 210_000))
        // Used, unknown: one answer.
        let used = try accept(token)
        let unknown = try accept("iv_" + String(repeating: "a", count: 64))
        assertError(used, 400, "INVITE_INVALID")
        XCTAssertEqual(try used.errorFields(), try unknown.errorFields())
        XCTAssertEqual(try accept("garbage").errorFields(), try unknown.errorFields())

        // Wrong password and unknown email: the same answer.
        let wrong = try signIn(ownerEmail, password: "wrong password!")
        let nobody = try signIn("nobody@example.com")
        assertError(wrong, 401, "AUTH_INVALID_CREDENTIALS")
        XCTAssertEqual(try wrong.errorFields(), try nobody.errorFields())
        XCTAssertNil(wrong.header("Set-Cookie"))

        let owner = try session(try signIn(" " + ownerEmail.uppercased()))
        let seen = try client.get("/v1/admin/projects", headers: owner.get)
        XCTAssertEqual(seen.status, 200)
        XCTAssertEqual(try seen.json()["projects"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, [projectA])
        let noProject = try client.get("/v1/admin/projects/\(UUID().uuidString.lowercased())", headers: E2E.admin)
        let other = try client.get("/v1/admin/projects/\(projectB)", headers: owner.get)
        XCTAssertEqual(other.status, 404)
        XCTAssertEqual(try other.errorFields(), try noProject.errorFields())
        assertError(try client.get("/v1/admin/accounts/\(b)/members", headers: owner.get), 404, "ACCOUNT_NOT_FOUND")
        assertError(try client.send("PATCH", "/v1/admin/projects/\(projectA)", json: ["name": "Renamed"], headers: owner.get),
                    403, "CSRF_TOKEN_INVALID")
        let renamed = try client.send("PATCH", "/v1/admin/projects/\(projectA)", json: ["name": "Renamed"],
                                      headers: owner.write)
        XCTAssertEqual(renamed.status, 200, renamed.description)

        // A viewer reads and may not write.
        let viewerInvite = try invite(a, "viewer\(E2E.uniqueId())@a.example", "viewer", owner.write)
        XCTAssertEqual(viewerInvite.status, 201, viewerInvite.description)
        let viewerId = try XCTUnwrap(try viewerInvite.json()["id"]?.stringValue)
        let viewerEmail = try XCTUnwrap(try viewerInvite.json()["email"]?.stringValue)
        XCTAssertEqual(try accept(try XCTUnwrap(try viewerInvite.json()["invite_token"]?.stringValue)).status, 200)
        let viewer = try session(try signIn(viewerEmail))
        XCTAssertEqual(try client.get("/v1/admin/projects/\(projectA)", headers: viewer.get).status, 200)
        let denied = try client.send("PATCH", "/v1/admin/projects/\(projectA)", json: ["name": "No"], headers: viewer.write)
        assertError(denied, 403, "PERMISSION_DENIED")
        XCTAssertEqual(try denied.json()["details"], [["path": ["permission"], "message": "projects.write"]])
        assertError(try invite(a, "x\(E2E.uniqueId())@a.example", "viewer", viewer.write), 403, "PERMISSION_DENIED")
        assertError(try client.get("/v1/admin/projects/\(projectB)", headers: viewer.get), 404, "PROJECT_NOT_FOUND")

        // An admin gives no one more than admin, and touches no owner.
        let admin = try member(a, "admin")
        let adminSession = try session(try signIn(admin.email))
        assertError(try invite(a, "o\(E2E.uniqueId())@a.example", "owner", adminSession.write), 403, "PERMISSION_DENIED")
        assertError(try client.send("PATCH", "/v1/admin/accounts/\(a)/members/\(viewerId)", json: ["role": "owner"],
                                    headers: adminSession.write), 403, "PERMISSION_DENIED")
        assertError(try client.delete("/v1/admin/accounts/\(a)/members/\(ownerId)", headers: adminSession.write),
                    403, "PERMISSION_DENIED")

        // The last owner stays.
        assertError(try client.send("PATCH", "/v1/admin/accounts/\(a)/members/\(ownerId)", json: ["role": "admin"],
                                    headers: owner.write), 409, "LAST_OWNER")
        assertError(try client.delete("/v1/admin/accounts/\(a)/members/\(ownerId)", headers: E2E.admin), 409, "LAST_OWNER")

        // A role change ends the member's sessions; the new session has the new role.
        let changed = try client.send("PATCH", "/v1/admin/accounts/\(a)/members/\(viewerId)", json: ["role": "developer"],
                                      headers: owner.write)
        XCTAssertEqual(changed.status, 200, changed.description)
        XCTAssertEqual(try changed.json()["role"]?.stringValue, "developer")
        assertError(try client.get("/v1/admin/projects", headers: viewer.get), 401, "CONSOLE_SESSION_INVALID")
        let developer = try session(try signIn(viewerEmail))
        XCTAssertEqual(try client.send("PATCH", "/v1/admin/projects/\(projectA)", json: ["name": "Dev"],
                                       headers: developer.write).status, 200)

        // Removal ends them too, at once.
        XCTAssertEqual(try client.delete("/v1/admin/accounts/\(a)/members/\(viewerId)", headers: owner.write).status, 204)
        assertError(try client.get("/v1/admin/projects", headers: developer.get), 401, "CONSOLE_SESSION_INVALID")
        XCTAssertEqual(try db.query("SELECT count(*)::int8 AS n FROM console_sessions WHERE member_id = \(viewerId)::uuid")
                        .first?.decode("n", as: Int64.self), 0)
        assertError(try client.get("/v1/admin/accounts/\(a)/members/\(viewerId)", headers: owner.get), 404,
                    "MEMBER_NOT_FOUND")
        assertError(try signIn(viewerEmail), 401, "AUTH_INVALID_CREDENTIALS")
    }

    /// TOTP: the secret shown once as an otpauth URI, sealed at rest; sign-in needs a code; a used code is refused.
    func testTOTPIsRequiredOnceEnabledAndCodesDoNotReplay() throws {
        let client = try server.client
        let a = try account("T")
        let member = try member(a, "developer")
        let enabled = try client.request("POST", "/v1/admin/accounts/\(a)/members/\(member.id)/totp", headers: E2E.admin)
        XCTAssertEqual(enabled.status, 200, enabled.description)
        let uri = try XCTUnwrap(try enabled.json()["otpauth_uri"]?.stringValue)
        XCTAssertTrue(uri.hasPrefix("otpauth://totp/Bouncer:\(member.email)?secret="), uri)
        XCTAssertTrue(uri.contains("&issuer=Bouncer"))
        let base32 = try XCTUnwrap(uri.split(separator: "?").last?.split(separator: "&")
            .first { $0.hasPrefix("secret=") }?.dropFirst("secret=".count))
        let secret = try XCTUnwrap(Base32.decode(String(base32)))
        XCTAssertEqual(secret.count, 20)
        let sealed = try XCTUnwrap(try db.query("SELECT totp_sealed FROM members WHERE id = \(member.id)::uuid").first?
            .decode("totp_sealed", as: [UInt8]?.self))
        XCTAssertNil(Self.range(of: secret, in: sealed), "the secret is never stored in clear")
        XCTAssertEqual(try client.get("/v1/admin/accounts/\(a)/members/\(member.id)", headers: E2E.admin).json()["totp_enabled"],
                       .bool(true))

        assertError(try signIn(member.email), 401, "AUTH_TOTP_REQUIRED")
        assertError(try signIn(member.email, password: "wrong password!", totp: "000000"), 401, "AUTH_INVALID_CREDENTIALS")
        let code = OneTimePassword.hotp(secret: secret, counter: OneTimePassword.step(unixSeconds: Date().timeIntervalSince1970))
        let wrongCode = String(format: "%06d", ((Int(code) ?? 0) + 1) % 1_000_000)
        assertError(try signIn(member.email, totp: wrongCode), 401, "AUTH_TOTP_INVALID")
        let signedIn = try session(try signIn(member.email, totp: code))
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: signedIn.get).status, 200)
        assertError(try signIn(member.email, totp: code), 401, "AUTH_TOTP_INVALID")
    }

    /// Issue 24, item 2: a member turns TOTP on for themself without `members.manage` (and alone sees the secret);
    /// for anyone else it takes `members.manage`. Each success leaves one audit entry, the secret redacted.
    func testAMemberEnablesTheirOwnTOTPAndOnlyAManagerAnothers() throws {
        let client = try server.client
        let a = try account("S")
        let viewer = try member(a, "viewer"), developer = try member(a, "developer"), admin = try member(a, "admin")
        let viewerSession = try session(try signIn(viewer.email, from: "203.0.113.30"))
        let adminSession = try session(try signIn(admin.email, from: "203.0.113.31"))
        let template = "/v1/admin/accounts/{id}/members/{memberId}/totp"
        func enable(_ id: String, _ headers: [String: String]) throws -> HTTPResponse {
            let r = try client.request("POST", "/v1/admin/accounts/\(a)/members/\(id)/totp", headers: headers)
            try AuditLogE2ETests.assertAudited(db, method: "POST", template: template, r)
            return r
        }

        let own = try enable(viewer.id, viewerSession.write)
        XCTAssertEqual(own.status, 200, own.description)
        XCTAssertEqual(try own.json()["member_id"]?.stringValue, viewer.id)
        XCTAssertTrue(try XCTUnwrap(try own.json()["otpauth_uri"]?.stringValue)
            .hasPrefix("otpauth://totp/Bouncer:\(viewer.email)?secret="))
        let row = try XCTUnwrap(try db.query("""
            SELECT actor_label, target, changes::text AS changes FROM audit_log
            WHERE request_id = \(try XCTUnwrap(own.header("X-Request-Id")))
            """).first)
        XCTAssertEqual(try row.decode("actor_label", as: String.self), "member:" + viewer.id)
        XCTAssertEqual(try row.decode("target", as: String.self), "member:" + viewer.id)
        XCTAssertEqual(try row.decode("changes", as: String.self),
                       #"{"totp_secret": ["[redacted]", "[redacted]"], "two_factor_enabled": [false, true]}"#)

        // Someone else's TOTP needs members.manage: refused to the viewer (and to a viewer's key), not to an admin.
        assertError(try enable(developer.id, viewerSession.write), 403, "PERMISSION_DENIED")
        let viewerKey = try post("/v1/admin/accounts/\(a)/api-keys", ["name": "v", "role": "viewer"])
        let keyHeaders = ["Authorization": "Bearer " + (try XCTUnwrap(viewerKey["key"]?.stringValue))]
        let byKey = try enable(viewer.id, keyHeaders)
        XCTAssertEqual(byKey.status, 403)
        XCTAssertEqual(try byKey.json()["details"], [["path": ["permission"], "message": "members.manage"]])
        XCTAssertEqual(try enable(developer.id, adminSession.write).status, 200)
        XCTAssertEqual(try client.get("/v1/admin/accounts/\(a)/members/\(developer.id)", headers: E2E.admin)
            .json()["totp_enabled"], .bool(true))
        // A member of another account naming themself under this account's path: the account is not theirs.
        let b = try account("S2")
        let outsider = try member(b, "viewer")
        let outsiderSession = try session(try signIn(outsider.email, from: "203.0.113.32"))
        assertError(try enable(outsider.id, outsiderSession.write), 404, "ACCOUNT_NOT_FOUND")
    }

    /// Wrong passwords for one email from ten addresses lock the email out everywhere; another email from the same
    /// address is not locked.
    func testLockoutPerEmailAcrossAddresses() throws {
        let a = try account("L")
        let member = try member(a, "viewer")
        for i in 1...10 {
            assertError(try signIn(member.email, password: "wrong password \(i)", from: "198.51.100.\(i)"), 401,
                        "AUTH_INVALID_CREDENTIALS")
        }
        let locked = try signIn(member.email, from: "198.51.100.99")
        assertError(locked, 429, "AUTH_TOO_MANY_FAILURES")
        XCTAssertTrue((55...60).contains(Int(locked.header("Retry-After") ?? "") ?? 0), locked.description)
        // The address itself is not locked: another member signs in from it.
        let other = try self.member(a, "viewer")
        XCTAssertEqual(try signIn(other.email, from: "198.51.100.99").status, 201)
    }

    static func range(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
