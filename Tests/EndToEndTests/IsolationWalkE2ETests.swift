import Foundation
import JSON
import TestSupport
import XCTest

/// Issue 24, item 8: EVERY admin operation (read from `openapi.yaml`, which `OpenAPIRoutesTests` holds equal to the
/// route table and `AccessControlTests` to each route's permission, so a new route cannot be left out) called by the
/// operator, a key and a signed-in member (console cookie and CSRF token) of each role of the owning account, a key
/// and a member of another account, and a key limited to another project of the same account.
///
/// Each call gets a project of its own (the same state for every caller), so a caller that may do what it asks
/// answers exactly what the operator does; one that may not answers 403 PERMISSION_DENIED naming the permission; and
/// another tenant's resource answers the very body of a nonexistent one. A member answers exactly what a key of the
/// same role and account does (no exception today: a member's own TOTP is the one route open to them without its
/// permission, and the walk's `{memberId}` is nobody). Every successful change left exactly one audit entry, and
/// none was missing (`bouncer_audit_missing_total` stays 0).
final class IsolationWalkE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "walk" }

    static let roles = ["owner", "admin", "developer", "viewer", "support"]
    /// `Role.permissions` as the README prints it (`AccessControlTests` holds the README to the code).
    static func rolePermissions() throws -> [String: Set<String>] {
        let readme = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        var out: [String: Set<String>] = [:]
        var inTable = false
        for line in readme.split(separator: "\n") {
            if line.hasPrefix("| Permission | owner |") { inTable = true; continue }
            guard inTable else { continue }
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let permission = cells.first?.trimmingCharacters(in: ["`"]), permission.contains(".") else { continue }
            for (role, cell) in zip(roles, cells.dropFirst()) where cell == "✓" { out[role, default: []].insert(permission) }
        }
        return out
    }

    /// What the operator's call answers for each operation (with `{}` as the body of a write, on a fresh project
    /// without credentials, webhook or customers): the anchor every allowed key must match.
    static let operatorStatus: [String: Int] = [
        "DELETE /v1/admin/accounts/{id}": 409,
        "DELETE /v1/admin/accounts/{id}/api-keys/{keyId}": 404,
        "DELETE /v1/admin/accounts/{id}/members/{memberId}": 404,
        "DELETE /v1/admin/projects/{id}": 204,
        "DELETE /v1/admin/projects/{id}/app-store-credentials": 404,
        "DELETE /v1/admin/projects/{id}/products/{productId}": 404,
        "DELETE /v1/admin/projects/{id}/users/{userId}": 200,
        "DELETE /v1/admin/projects/{id}/users/{userId}/grants/{grantId}": 404,
        "DELETE /v1/admin/projects/{id}/webhook": 404,
        "DELETE /v1/admin/sessions": 204,
        "GET /v1/admin/accounts": 200,
        "GET /v1/admin/accounts/{id}": 200,
        "GET /v1/admin/accounts/{id}/api-keys": 200,
        "GET /v1/admin/accounts/{id}/quotas": 200,
        "GET /v1/admin/accounts/{id}/usage": 200,
        "GET /v1/admin/accounts/{id}/members": 200,
        "GET /v1/admin/accounts/{id}/members/{memberId}": 404,
        "GET /v1/admin/audit-log": 200,
        "GET /v1/admin/projects": 200,
        "GET /v1/admin/projects/{id}": 200,
        "GET /v1/admin/projects/{id}/app-store-credentials": 404,
        "GET /v1/admin/projects/{id}/app-store/test-notification/{token}": 400,
        "GET /v1/admin/projects/{id}/metrics/overview": 200,
        "GET /v1/admin/projects/{id}/charts/{chart}": 200,
        "GET /v1/admin/projects/{id}/exports/transactions.csv": 200,
        "GET /v1/admin/projects/{id}/customers": 200,
        "GET /v1/admin/projects/{id}/notifications": 200,
        "GET /v1/admin/projects/{id}/orders/{orderId}": 400,
        "GET /v1/admin/projects/{id}/products": 200,
        "GET /v1/admin/projects/{id}/reconcile/runs": 200,
        "GET /v1/admin/projects/{id}/retention/rules": 200,
        "GET /v1/admin/projects/{id}/retention/decisions": 200,
        "GET /v1/admin/projects/{id}/transactions/{transactionId}": 404,
        "GET /v1/admin/projects/{id}/users/{userId}/export": 200,
        "GET /v1/admin/projects/{id}/users/{userId}/timeline": 200,
        "GET /v1/admin/projects/{id}/webhook": 404,
        "GET /v1/admin/projects/{id}/webhook/deliveries": 404,
        "PATCH /v1/admin/accounts/{id}": 400,
        "PATCH /v1/admin/accounts/{id}/members/{memberId}": 400,
        "PATCH /v1/admin/projects/{id}": 400,
        "PUT /v1/admin/accounts/{id}/quotas": 400,
        "POST /v1/admin/accounts": 400,
        "POST /v1/admin/accounts/{id}/api-keys": 400,
        "POST /v1/admin/accounts/{id}/members": 400,
        "POST /v1/admin/accounts/{id}/members/{memberId}/totp": 404,
        "POST /v1/admin/projects": 400,
        "POST /v1/admin/projects/{id}/app-store/test-notification": 400,
        "POST /v1/admin/projects/{id}/reconcile": 400,
        "POST /v1/admin/projects/{id}/retention/simulate": 400,
        "POST /v1/admin/projects/{id}/rotate-keys": 200,
        "POST /v1/admin/projects/{id}/subscriptions/{originalTransactionId}/extend": 400,
        "PUT /v1/admin/projects/{id}/purchases/{originalTransactionId}/app-account-token": 400,
        "POST /v1/admin/projects/{id}/products/{productId}/extend": 400,
        "GET /v1/admin/projects/{id}/products/{productId}/extend/{requestId}": 400,
        "POST /v1/admin/projects/{id}/users/{userId}/grants": 400,
        "POST /v1/admin/projects/{id}/webhook/deliveries/{eventId}/retry": 404,
        "POST /v1/admin/projects/{id}/webhook/rotate-secret": 409,
        "POST /v1/admin/projects/{id}/webhook/test": 404,
        "PUT /v1/admin/projects/{id}/app-store-credentials": 400,
        "PUT /v1/admin/projects/{id}/products/{productId}": 400,
        "PUT /v1/admin/projects/{id}/retention/rules": 400,
        "PUT /v1/admin/projects/{id}/webhook": 400,
        "PUT /v1/admin/projects/{id}/revenue-settings": 400,
        "PUT /v1/admin/exchange-rates": 400,
        "PUT /v1/admin/tax-rates": 400,
        "GET /v1/admin/tax-rates": 200,
        // Retention Messaging at Apple: the fresh project has no credentials; an image must be a PNG.
        "GET /v1/admin/projects/{id}/retention/messages": 400,
        "PUT /v1/admin/projects/{id}/retention/messages/{messageId}": 400,
        "DELETE /v1/admin/projects/{id}/retention/messages/{messageId}": 400,
        "GET /v1/admin/projects/{id}/retention/images": 400,
        "PUT /v1/admin/projects/{id}/retention/images/{imageId}": 415,
        "DELETE /v1/admin/projects/{id}/retention/images/{imageId}": 400,
        "PUT /v1/admin/projects/{id}/retention/default-messages/{productId}/{locale}": 400,
        "DELETE /v1/admin/projects/{id}/retention/default-messages/{productId}/{locale}": 400,
        "PUT /v1/admin/projects/{id}/retention/realtime-url": 400,
        "POST /v1/admin/projects/{id}/retention/performance-test": 400,
    ]

    struct Caller {
        var name: String
        var headers: [String: String]
        /// nil: the operator.
        var role: String?
        var ownAccount: Bool
        var limited: Bool
        /// A member's email and session (nil: the operator or a key).
        var email: String?
        var session: MemberSession?

        /// The headers of a request with `method`: a member's changes carry the CSRF token.
        func headers(_ method: String) -> [String: String] {
            guard let session else { return headers }
            return method == "GET" ? session.get : session.write
        }
    }

    func testEveryAdminRouteWithEveryKindOfCaller() throws {
        let client = try server.client
        let text = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let operations = OpenAPIPermissions.permissions(inOpenAPI: text).sorted { $0.key < $1.key }
        XCTAssertEqual(operations.count, 76, "every admin operation but the console's sign-in and the invite's acceptance")
        XCTAssertEqual(Set(operations.map(\.key).filter { !$0.hasPrefix("GET ") && !AuditLogE2ETests.readOnly.contains($0) }),
                       Set(AuditLogE2ETests.actions.keys),
                       "every changing operation has its audit action")
        let roles = try Self.rolePermissions()
        XCTAssertEqual(Set(roles.keys), Set(Self.roles))

        func post(_ path: String, _ json: JSONValue, _ headers: [String: String] = E2E.admin) throws -> JSONValue {
            let r = try client.post(path, json: json, headers: headers)
            XCTAssertEqual(r.status, 201, r.description)
            return try r.json()
        }
        let owning = try XCTUnwrap(try post("/v1/admin/accounts", ["name": "Owning"])["id"]?.stringValue)
        let other = try XCTUnwrap(try post("/v1/admin/accounts", ["name": "Other"])["id"]?.stringValue)
        func project(_ account: String) throws -> String {
            try XCTUnwrap(try post("/v1/admin/projects", ["name": "Walk", "bundle_id": .string(E2E.uniqueBundle()),
                                                          "account_id": .string(account)])["id"]?.stringValue)
        }
        let elsewhere = try project(owning)
        _ = try project(other)
        func key(_ account: String, _ role: String, projects: [String]? = nil) throws -> [String: String] {
            var body: [(String, JSONValue)] = [("name", .string(role)), ("role", .string(role))]
            if let projects { body.append(("project_ids", .array(projects.map { .string($0) }))) }
            let made = try post("/v1/admin/accounts/\(account)/api-keys", .object(JSONObject(body)))
            return ["Authorization": "Bearer " + (try XCTUnwrap(made["key"]?.stringValue))]
        }
        var callers = [Caller(name: "operator", headers: E2E.admin, role: nil, ownAccount: true, limited: false)]
        for role in Self.roles {
            callers.append(Caller(name: role, headers: try key(owning, role), role: role, ownAccount: true, limited: false))
        }
        callers.append(Caller(name: "other account's owner", headers: try key(other, "owner"), role: "owner",
                              ownAccount: false, limited: false))
        callers.append(Caller(name: "owner limited to another project", headers: try key(owning, "owner", projects: [elsewhere]),
                              role: "owner", ownAccount: true, limited: true))
        func signedIn(_ email: String) throws -> MemberSession { try session(try signIn(email)) }
        for (account, own) in [(owning, true), (other, false)] {
            for role in own ? Self.roles : ["owner"] {
                let email = try member(account, role).email
                callers.append(Caller(name: (own ? "" : "other account's ") + "member " + role, headers: [:], role: role,
                                      ownAccount: own, limited: false, email: email, session: try signedIn(email)))
            }
        }

        // What a nonexistent project and account answer, without request_id.
        let noProject = try client.get("/v1/admin/projects/\(UUID().uuidString.lowercased())", headers: E2E.admin).errorFields()
        let noAccount = try client.get("/v1/admin/accounts/\(UUID().uuidString.lowercased())", headers: E2E.admin).errorFields()

        var cells = 0
        for (operation, permission) in operations {
            let parts = operation.split(separator: " ", maxSplits: 1).map(String.init)
            let (method, template) = (parts[0], parts[1])
            let scope = template.hasPrefix("/v1/admin/projects/{id}") ? "project"
                : template.hasPrefix("/v1/admin/accounts/{id}") ? "account" : "server"
            var operatorStatus: Int?
            var keyStatus: [String: Int] = [:]
            for index in callers.indices {
                let caller = callers[index]
                // Each call on a project of its own, so every caller meets the same state.
                let id = scope == "project" ? try project(owning) : owning
                let path = Self.fill(template, id: id)
                let body: [UInt8]? = ["POST", "PUT", "PATCH"].contains(method) ? Array("{}".utf8) : nil
                var headers = caller.headers(method)
                if body != nil { headers["Content-Type"] = "application/json" }
                let r = try client.request(method, path, headers: headers, body: body)
                cells += 1
                try AuditLogE2ETests.assertAudited(db, method: method, template: template, r)
                let label = "\(operation) as \(caller.name): \(r.status) \(r.text)"
                guard let role = caller.role else {
                    XCTAssertEqual(r.status, Self.operatorStatus[operation], "\(label): add or correct its operatorStatus")
                    operatorStatus = r.status
                    if operation == "DELETE /v1/admin/sessions", r.status == 204 {
                        // Signed out everywhere: the members sign in again before their turn.
                        for i in callers.indices { if let email = callers[i].email { callers[i].session = try signedIn(email) } }
                    }
                    continue
                }
                let kind = "\(caller.ownAccount) \(caller.limited) \(role)"
                if caller.session == nil {
                    keyStatus[kind] = r.status
                } else {
                    XCTAssertEqual(r.status, keyStatus[kind], "\(label): a member answers what a key of the role does")
                }
                let may = roles[role]?.contains(permission) ?? false
                if scope == "project" && (!caller.ownAccount || caller.limited) {
                    XCTAssertEqual(r.status, 404, label)
                    XCTAssertEqual(try r.errorFields(), noProject, label)
                } else if scope == "account" && !caller.ownAccount {
                    XCTAssertEqual(r.status, 404, label)
                    XCTAssertEqual(try r.errorFields(), noAccount, label)
                } else if !may || (scope == "account" && caller.limited) {
                    XCTAssertEqual(r.status, 403, label)
                    XCTAssertEqual(try r.json()["code"]?.stringValue, "PERMISSION_DENIED", label)
                    XCTAssertEqual(try r.json()["details"], [["path": ["permission"], "message": .string(permission)]], label)
                } else {
                    XCTAssertEqual(r.status, operatorStatus, label)
                }
                if operation == "GET /v1/admin/projects", r.status == 200 {
                    let accounts = Set(try r.json()["projects"]?.arrayValue?.compactMap { $0["account_id"]?.stringValue } ?? [])
                    XCTAssertTrue(accounts.isSubset(of: [caller.ownAccount ? owning : other]), label)
                    if caller.limited {
                        XCTAssertEqual(try r.json()["projects"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, [elsewhere])
                    }
                }
            }
        }
        XCTAssertEqual(cells, operations.count * callers.count)
        XCTAssertEqual(callers.count, 14)
        let metrics = String(decoding: try client.get("/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.split(separator: "\n").contains("bouncer_audit_missing_total 0"), metrics)
    }

    /// A concrete path for a template: `{id}` is the project or account, other parameters plausible values.
    static func fill(_ template: String, id: String) -> String {
        template.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            switch segment {
            case "{id}": return id
            case "{userId}": return "walk_user"
            case "{productId}": return "com.walk.pro"
            case "{locale}": return "en-US"
            case "{grantId}", "{keyId}", "{memberId}", "{messageId}", "{imageId}": return UUID().uuidString.lowercased()
            case "{eventId}": return "evt_00000000000000000000000000"
            case "{token}": return "walk-token"
            case "{chart}": return "revenue"
            case "{orderId}": return "MK5TTTVWJH"
            case "{transactionId}", "{originalTransactionId}": return "1000000000"
            default: return String(segment)
            }
        }.joined(separator: "/")
    }
}
