import Foundation
import JSON
import TestSupport
import XCTest

/// A member's console session: the cookie, and the CSRF token its changing requests send.
struct MemberSession {
    /// Every test member's password.
    static let password = "correct horse battery"

    var cookie: String
    var csrf: String
    var get: [String: String] { ["Cookie": cookie] }
    var write: [String: String] { ["Cookie": cookie, "X-CSRF-Token": csrf] }
}

/// Members through the API, as a person meets them: invite (by the operator unless `headers` say otherwise),
/// accept, sign in. The addresses matter only to a server that trusts 127.0.0.1 as a proxy (`MembersE2ETests`).
extension SharedServerTestCase {
    func invite(_ account: String, _ email: String, _ role: String, _ headers: [String: String] = E2E.admin) throws
        -> HTTPResponse {
        try server.client.post("/v1/admin/accounts/\(account)/members",
                               json: ["email": .string(email), "role": .string(role)], headers: headers)
    }

    func accept(_ token: String, password: String = MemberSession.password, from address: String = "203.0.113.1")
        throws -> HTTPResponse {
        try server.client.post("/v1/admin/invites/accept",
                               json: ["invite_token": .string(token), "password": .string(password)],
                               headers: ["X-Forwarded-For": address])
    }

    func signIn(_ email: String, password: String = MemberSession.password, totp: String? = nil,
                from address: String = "203.0.113.2") throws -> HTTPResponse {
        var body: [(String, JSONValue)] = [("email", .string(email)), ("password", .string(password))]
        if let totp { body.append(("totp", .string(totp))) }
        return try server.client.post("/v1/admin/session", json: .object(JSONObject(body)),
                                      headers: ["X-Forwarded-For": address])
    }

    /// The session a 201 sign-in answered.
    func session(_ r: HTTPResponse, file: StaticString = #filePath, line: UInt = #line) throws -> MemberSession {
        XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        let setCookie = try XCTUnwrap(r.header("Set-Cookie"), file: file, line: line)
        return MemberSession(cookie: String(setCookie.prefix { $0 != ";" }),
                             csrf: try XCTUnwrap(try r.json()["csrf_token"]?.stringValue, file: file, line: line))
    }

    /// A member of `account` with `role` who accepted the invite: `(id, email)`.
    func member(_ account: String, _ role: String) throws -> (id: String, email: String) {
        let email = "m\(E2E.uniqueId())@example.com"
        let invited = try invite(account, email, role)
        XCTAssertEqual(invited.status, 201, invited.description)
        let token = try XCTUnwrap(try invited.json()["invite_token"]?.stringValue)
        XCTAssertEqual(try accept(token).status, 200)
        return (try XCTUnwrap(try invited.json()["id"]?.stringValue), email)
    }
}
