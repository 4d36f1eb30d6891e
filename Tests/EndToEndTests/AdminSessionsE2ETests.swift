import Foundation
import JSON
import Postgres
import TestSupport
import XCTest

/// Admin authentication like a bank's, against the real `bouncer serve`: wrong admin tokens lock the client's address
/// out (before any comparison), console sessions are bound to the admin token they were opened with, and
/// `DELETE /v1/admin/sessions` ends them all.
final class AdminSessionsE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "sessions" }
    /// 127.0.0.1 is a trusted proxy, so each test speaks from addresses of its own through `X-Forwarded-For`.
    override class var serverOverrides: [String: String?] { ["BOUNCER_TRUSTED_PROXIES": "127.0.0.1/32"] }

    static func from(_ address: String, _ headers: [String: String] = [:]) -> [String: String] {
        headers.merging(["X-Forwarded-For": address]) { $1 }
    }

    func sessionCount() throws -> Int { try db.count("console_sessions") }

    /// `(cookie header, csrf token, session token)` of a new session on `server`.
    func signIn(_ server: BouncerProcess, token: String = E2E.adminToken, from address: String = "192.0.2.1",
                file: StaticString = #filePath, line: UInt = #line) throws -> (cookie: String, csrf: String, token: String) {
        let r = try server.client.post("/v1/admin/session", json: ["token": .string(token)], headers: Self.from(address))
        XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        let setCookie = try XCTUnwrap(r.header("Set-Cookie"), file: file, line: line)
        let session = String(setCookie.prefix { $0 != ";" }.dropFirst("bouncer_session=".count))
        return ("bouncer_session=\(session)", try XCTUnwrap(try r.json()["csrf_token"]?.stringValue), session)
    }

    func assertLockedOut(_ r: HTTPResponse, file: StaticString = #filePath, line: UInt = #line) {
        assertError(r, 429, "AUTH_TOO_MANY_FAILURES", error: "Too many failed admin sign-ins from this address.",
                    suggestion: "Wait the number of seconds in Retry-After, then send the right BOUNCER_ADMIN_TOKEN; each "
                        + "further lockout lasts twice as long.", file: file, line: line)
        let retryAfter = Int(r.header("Retry-After") ?? "") ?? 0
        XCTAssertTrue((55...60).contains(retryAfter), "Retry-After \(retryAfter): the first lockout is a minute",
                      file: file, line: line)
    }

    // MARK: Lockout

    func testTenWrongSignInsLockTheAddressOutEvenForTheRightToken() throws {
        let client = try server.client
        let address = "198.51.100.11"
        let before = try sessionCount()
        for attempt in 1...10 {
            let r = try client.post("/v1/admin/session", json: ["token": .string("wrong-token-\(attempt)-0123456789abcdef")],
                                    headers: Self.from(address))
            assertError(r, 401, "AUTH_INVALID_ADMIN_TOKEN", suggestion: "Enter the server's BOUNCER_ADMIN_TOKEN.")
        }
        // Refused before the comparison: the right token from that address changes nothing either.
        assertLockedOut(try client.post("/v1/admin/session", json: ["token": .string(E2E.adminToken)],
                                        headers: Self.from(address)))
        assertLockedOut(try client.get("/v1/admin/projects", headers: Self.from(address, E2E.admin)))
        XCTAssertEqual(try sessionCount(), before, "no session was opened")
        // Per address: another client with the right token is not affected.
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: Self.from("198.51.100.12", E2E.admin)).status, 200)
    }

    func testWrongBearerTokensCountAndASuccessResetsThem() throws {
        let client = try server.client
        let address = "198.51.100.21"
        for attempt in 1...9 {
            assertError(try client.get("/v1/admin/projects",
                                       headers: Self.from(address, ["Authorization": "Bearer nope-\(attempt)"])),
                        401, "AUTH_INVALID_ADMIN_TOKEN")
        }
        // The right token forgets the nine failures: nine more are still answered, the tenth locks.
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: Self.from(address, E2E.admin)).status, 200)
        for attempt in 1...10 {
            assertError(try client.get("/v1/admin/projects",
                                       headers: Self.from(address, ["Authorization": "Bearer again-\(attempt)"])),
                        401, "AUTH_INVALID_ADMIN_TOKEN")
        }
        assertLockedOut(try client.get("/v1/admin/projects", headers: Self.from(address, E2E.admin)))
        // A request without credentials is no guess: another address asking twelve times is never locked out.
        for _ in 1...12 {
            assertError(try client.get("/v1/admin/projects", headers: Self.from("198.51.100.22")), 401,
                        "AUTH_INVALID_ADMIN_TOKEN")
        }
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: Self.from("198.51.100.22", E2E.admin)).status, 200)
    }

    // MARK: Sessions

    func testASessionEndsWhenTheAdminTokenChanges() throws {
        let first = try server
        let db = try db
        let session = try signIn(first)
        let rows = try db.query("""
            SELECT admin_fingerprint = sha256(convert_to('console-session-binding:' || \(E2E.adminToken), 'UTF8')) AS bound,
                   position(convert_to(\(E2E.adminToken), 'UTF8') IN admin_fingerprint) = 0 AS no_token,
                   admin_fingerprint <> sha256(convert_to(\(E2E.adminToken), 'UTF8')) AS not_the_digest
            FROM console_sessions WHERE token_hash = sha256(convert_to(\(session.token), 'UTF8'))
            """)
        XCTAssertEqual(rows.count, 1)
        for column in ["bound", "no_token", "not_the_digest"] {
            XCTAssertEqual(try rows.first?.decode(column, as: Bool.self), true, column)
        }

        // The same database behind a server started with another token (a restart after rotation).
        let rotated = "rotated-admin-token-" + String(repeating: "9", count: 24)
        let second = try BouncerProcess(databaseURL: db.url, overrides: ["BOUNCER_ADMIN_TOKEN": rotated])
        defer { second.stopAndAssertCleanExit() }
        assertError(try second.client.get("/v1/admin/projects", headers: ["Cookie": session.cookie]), 401,
                    "CONSOLE_SESSION_INVALID", suggestion: "Sign in again at /admin/ with the admin token (sessions expire).")
        assertError(try second.client.get("/v1/admin/session", headers: ["Cookie": session.cookie]), 401,
                    "CONSOLE_SESSION_INVALID")
        let newer = try signIn(second, token: rotated)
        XCTAssertEqual(try second.client.get("/v1/admin/projects", headers: ["Cookie": newer.cookie]).status, 200)
        // And back: the old server does not take the new token's session.
        assertError(try first.client.get("/v1/admin/projects", headers: ["Cookie": newer.cookie]), 401,
                    "CONSOLE_SESSION_INVALID")
    }

    func testSignOutEverywhereEndsEverySession() throws {
        let client = try server.client
        let one = try signIn(try server)
        let two = try signIn(try server)
        let before = try sessionCount()
        XCTAssertGreaterThanOrEqual(before, 2)

        // Without credentials, and with a session but no CSRF token: refused, nothing deleted.
        assertError(try client.delete("/v1/admin/sessions"), 401, "AUTH_INVALID_ADMIN_TOKEN")
        assertError(try client.delete("/v1/admin/sessions", headers: ["Cookie": one.cookie]), 403, "CSRF_TOKEN_INVALID")
        XCTAssertEqual(try sessionCount(), before)

        let out = try client.delete("/v1/admin/sessions", headers: ["Cookie": one.cookie, "X-CSRF-Token": one.csrf])
        XCTAssertEqual(out.status, 204, out.description)
        XCTAssertEqual(out.header("Set-Cookie"), "bouncer_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        XCTAssertEqual(out.header("Cache-Control"), "no-store")
        XCTAssertEqual(try sessionCount(), 0)
        for session in [one, two] {
            assertError(try client.get("/v1/admin/projects", headers: ["Cookie": session.cookie]), 401,
                        "CONSOLE_SESSION_INVALID")
        }

        // The bearer token may do it too (an operator who lost a laptop signs it out from a terminal).
        let three = try signIn(try server)
        XCTAssertEqual(try client.delete("/v1/admin/sessions", headers: E2E.admin).status, 204)
        XCTAssertEqual(try sessionCount(), 0)
        assertError(try client.get("/v1/admin/projects", headers: ["Cookie": three.cookie]), 401, "CONSOLE_SESSION_INVALID")
    }
}

/// `BOUNCER_RATE_LIMIT_ADMIN` keeps strangers and credential holders in separate buckets.
final class AdminRateLimitE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "adminlimit" }
    override class var serverOverrides: [String: String?] {
        ["BOUNCER_RATE_LIMIT_ADMIN": "0.01", "BOUNCER_RATE_LIMIT_ADMIN_BURST": "3"]
    }

    func testStrangersCannotDrainTheAdminsOrACustomersBudget() throws {
        let server = try server
        let client = server.client
        let api = API(client: client)
        let tenant = try api.createProject()
        let timeline = "/v1/admin/projects/\(tenant.id)/users/u1/timeline"
        // Strangers without credentials empty their shared bucket …
        for _ in 1...3 {
            assertError(try client.get("/v1/admin/projects"), 401, "AUTH_INVALID_ADMIN_TOKEN")
        }
        assertError(try client.get("/v1/admin/projects"), 429, "RATE_LIMITED")
        assertError(try client.get(timeline), 429, "RATE_LIMITED")
        // … and the admin and the customer's backend are still served from their own.
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: E2E.admin).status, 200)
        let customer = try client.get(timeline, headers: ["Authorization": "Bearer \(tenant.secretKey)"])
        XCTAssertEqual(customer.status, 200, customer.description)
    }
}
