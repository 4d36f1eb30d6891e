import Foundation
import JSON
import Postgres
import XCTest

/// The admin console against the real `bouncer serve`: its files and headers, the session cookie with CSRF as an
/// alternative to the bearer token, the dashboard's overview, and the whole console in headless Chromium.
final class ConsoleE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "console" }
    /// Webhooks to the browser test's local receiver: private networks allowed, a sealed secret, a quick sweep.
    override class var serverOverrides: [String: String?] {
        [
            "BOUNCER_ENCRYPTION_KEY": Data((0..<32).map { UInt8($0 * 5 + 1) }).base64EncodedString(),
            "BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
            "BOUNCER_WEBHOOK_RETRY_BASE_SECONDS": "0.1",
            "BOUNCER_WEBHOOK_SWEEP_SECONDS": "0.2",
        ]
    }

    static let csp = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    // MARK: Files

    func testConsoleFilesAreServedWithStrictHeadersAndETags() throws {
        let client = try server.client
        let redirect = try client.get("/admin")
        XCTAssertEqual(redirect.status, 301)
        XCTAssertEqual(redirect.header("Location"), "/admin/")

        let index = try client.get("/admin/")
        XCTAssertEqual(index.status, 200, index.description)
        XCTAssertEqual(index.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertEqual(index.header("Content-Security-Policy"), Self.csp)
        XCTAssertEqual(index.header("X-Frame-Options"), "DENY")
        XCTAssertEqual(index.header("X-Content-Type-Options"), "nosniff")
        XCTAssertEqual(index.header("Cache-Control"), "no-cache")
        XCTAssertTrue(index.text.contains(#"<script type="module" src="console.js"></script>"#))
        XCTAssertFalse(index.text.contains("<script>"), "no inline script")
        XCTAssertFalse(index.text.contains("http://") || index.text.contains("https://"), "nothing from another origin")

        for (name, type) in [("console.js", "text/javascript; charset=utf-8"), ("charts.js", "text/javascript; charset=utf-8"),
                             ("console.css", "text/css; charset=utf-8"), ("favicon.svg", "image/svg+xml")] {
            let r = try client.get("/admin/\(name)")
            XCTAssertEqual(r.status, 200, name)
            XCTAssertEqual(r.header("Content-Type"), type, name)
            XCTAssertEqual(r.header("Content-Security-Policy"), Self.csp, name)
            let etag = try XCTUnwrap(r.header("ETag"), name)
            let again = try client.get("/admin/\(name)", headers: ["If-None-Match": etag])
            XCTAssertEqual(again.status, 304, name)
            XCTAssertEqual(again.body, [], name)
            XCTAssertEqual(try client.get("/admin/\(name)", headers: ["If-None-Match": "\"other\""]).status, 200)
        }
        let script = try client.get("/admin/console.js").text
        XCTAssertFalse(script.contains("localStorage"), "the console keeps nothing in localStorage")
        assertError(try client.get("/admin/secrets.txt"), 404, "NOT_FOUND", suggestion: "Open /admin/ for the console.")
        assertError(try client.get("/admin/..%2Fconsole.js"), 404, "NOT_FOUND")
    }

    // MARK: Sessions

    /// `(cookie header value, csrf token)` after a successful sign-in, with the response checked.
    private func signIn(file: StaticString = #filePath, line: UInt = #line) throws -> (cookie: String, csrf: String, token: String) {
        let r = try server.client.post("/v1/admin/session", json: ["token": .string(E2E.adminToken)])
        XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        let setCookie = try XCTUnwrap(r.header("Set-Cookie"), file: file, line: line)
        let token = String(setCookie.prefix { $0 != ";" }.dropFirst("bouncer_session=".count))
        XCTAssertEqual(setCookie, "bouncer_session=\(token); Path=/; Max-Age=43200; HttpOnly; SameSite=Strict",
                       file: file, line: line)
        XCTAssertEqual(r.header("Cache-Control"), "no-store", file: file, line: line)
        let body = try r.json()
        XCTAssertEqual(Set(body.objectValue?.keys ?? []), ["csrf_token", "expires_at"], file: file, line: line)
        return ("bouncer_session=\(token)", try XCTUnwrap(body["csrf_token"]?.stringValue), token)
    }

    func testSessionCookieWithCSRFStandsInForTheAdminToken() throws {
        let client = try server.client
        let db = try db
        assertError(try client.post("/v1/admin/session", json: ["token": "wrong-token-0123456789"]), 401,
                    "AUTH_INVALID_ADMIN_TOKEN", suggestion: "Enter the server's BOUNCER_ADMIN_TOKEN.")
        let missing = try client.post("/v1/admin/session", json: [:])
        assertError(missing, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try missing.json()["details"]?[0]?["path"], ["token"])

        let session = try signIn()
        XCTAssertTrue(session.token.hasPrefix("cs_") && session.token.utf8.count == 67, session.token)
        // Only the token's SHA-256 is stored.
        let rows = try db.query("""
            SELECT token_hash = sha256(convert_to(\(session.token), 'UTF8')) AS hashed,
                   expires_at - created_at = interval '12 hours' AS twelve_hours
            FROM console_sessions WHERE token_hash = sha256(convert_to(\(session.token), 'UTF8'))
            """)
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(try rows.first?.decode("hashed", as: Bool.self), true)
        XCTAssertEqual(try rows.first?.decode("twelve_hours", as: Bool.self), true)

        // Safe methods need only the cookie; the session route gives the same CSRF token back.
        let cookie = ["Cookie": "theme=dark; \(session.cookie)"]
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: cookie).status, 200)
        let shown = try client.get("/v1/admin/session", headers: cookie)
        XCTAssertEqual(shown.status, 200, shown.description)
        XCTAssertEqual(try shown.json()["csrf_token"]?.stringValue, session.csrf)

        // State-changing methods need the CSRF header too: nothing is created without it.
        let body: JSONValue = ["name": "Console", "bundle_id": .string(E2E.uniqueBundle())]
        let projectsBefore = try db.count("projects")
        let refused = try client.post("/v1/admin/projects", json: body, headers: cookie)
        assertError(refused, 403, "CSRF_TOKEN_INVALID",
                    suggestion: "Send the csrf_token from GET /v1/admin/session as the X-CSRF-Token header.")
        let wrong = try client.post("/v1/admin/projects", json: body, headers: cookie.merging(["X-CSRF-Token": "00"]) { $1 })
        assertError(wrong, 403, "CSRF_TOKEN_INVALID")
        XCTAssertEqual(try db.count("projects"), projectsBefore)
        let created = try client.post("/v1/admin/projects", json: body,
                                      headers: cookie.merging(["X-CSRF-Token": session.csrf]) { $1 })
        XCTAssertEqual(created.status, 201, created.description)
        XCTAssertEqual(try db.count("projects"), projectsBefore + 1)

        // The bearer path is exactly as before: a wrong bearer token fails even with a good cookie.
        assertError(try client.get("/v1/admin/projects", headers: cookie.merging(["Authorization": "Bearer nope"]) { $1 }),
                    401, "AUTH_INVALID_ADMIN_TOKEN", suggestion: "Send Authorization: Bearer <BOUNCER_ADMIN_TOKEN>.")
        XCTAssertEqual(try client.get("/v1/admin/projects", headers: E2E.admin).status, 200)
        // Without a cookie or a token: the bearer path's answer.
        assertError(try client.get("/v1/admin/projects"), 401, "AUTH_INVALID_ADMIN_TOKEN")
        // A well-formed unknown session, and an expired one.
        let unknown = ["Cookie": "bouncer_session=cs_" + String(repeating: "ab", count: 32)]
        assertError(try client.get("/v1/admin/projects", headers: unknown), 401, "CONSOLE_SESSION_INVALID",
                    suggestion: "Sign in again at /admin/ with the admin token (sessions expire).")
        let other = try signIn()
        _ = try db.query("""
            UPDATE console_sessions SET expires_at = now() - interval '1 second'
            WHERE token_hash = sha256(convert_to(\(other.token), 'UTF8'))
            """)
        assertError(try client.get("/v1/admin/projects", headers: ["Cookie": other.cookie]), 401, "CONSOLE_SESSION_INVALID")

        // Sign-out: CSRF-checked, deletes the row, clears the cookie; the cookie no longer works.
        assertError(try client.delete("/v1/admin/session", headers: cookie), 403, "CSRF_TOKEN_INVALID")
        let out = try client.delete("/v1/admin/session", headers: cookie.merging(["X-CSRF-Token": session.csrf]) { $1 })
        XCTAssertEqual(out.status, 204, out.description)
        XCTAssertEqual(out.header("Set-Cookie"), "bouncer_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        let left = try db.query("SELECT count(*)::int8 AS n FROM console_sessions WHERE token_hash = sha256(convert_to(\(session.token), 'UTF8'))")
        XCTAssertEqual(try left.first?.decode("n", as: Int64.self), 0)
        assertError(try client.get("/v1/admin/projects", headers: cookie), 401, "CONSOLE_SESSION_INVALID")
    }

    // MARK: Overview

    func testOverviewCountsPurchasesRenewalsRevenueAndMRR() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro", "no_ads"])
        let day: Int64 = 86_400_000
        let now = E2E.ms(0)
        let today = now / day * day
        // The EUR subscription's first period ends, and its renewal begins, today before now: a minute after midnight,
        // or halfway to now when the test runs in the day's first minute (today's figures count its starts whole and
        // its ends up to now, so a renewal dated after now was counted beside the period it follows: 3 active).
        let renewed = today + min(60_000, (now - today) / 2)
        // Two new subscriptions (USD, EUR) bought yesterday, one renewed today.
        var first = TransactionPayload(bundleId: tenant.bundleId)
        first.purchaseDate = today - day + 3_600_000
        first.originalPurchaseDate = first.purchaseDate
        first.expiresDate = now + 30 * day
        first.extra = [("price", 9990), ("currency", "USD")]
        var second = TransactionPayload(bundleId: tenant.bundleId)
        second.purchaseDate = today - day + 7_200_000
        second.originalPurchaseDate = second.purchaseDate
        second.expiresDate = renewed
        second.extra = [("price", 4990), ("currency", "EUR")]
        var renewal = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: second.transactionId)
        renewal.purchaseDate = renewed
        renewal.originalPurchaseDate = second.purchaseDate
        renewal.expiresDate = now + 30 * day
        renewal.extra = [("price", 4990), ("currency", "EUR")]
        for (payload, user) in [(first, "ov_a"), (second, "ov_b"), (renewal, "ov_b")] {
            let r = try api.postReceipt(tenant.publicKey, try payload.mint(), user: user)
            XCTAssertEqual(r.status, 201, r.description)
        }
        let from = E2E.iso(today - day).prefix(10)
        let to = E2E.iso(today).prefix(10)
        let r = try api.client.get(
            "/v1/admin/projects/\(tenant.id)/metrics/overview?from=\(from)&to=\(to)&interval=day&environment=Sandbox",
            headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        let o = try r.json()
        XCTAssertEqual(o["from"]?.stringValue, String(from))
        XCTAssertEqual(o["to"]?.stringValue, String(to))
        XCTAssertEqual(o["environment"], "Sandbox")
        let days = try XCTUnwrap(o["days"]?.arrayValue)
        XCTAssertEqual(days.count, 2)
        // Yesterday: two new purchases, both active at its end; 2 entitlements each.
        XCTAssertEqual(days[0], .object(JSONObject([
            ("date", .string(String(from))), ("active_subscriptions", 2), ("active_entitlements", 4),
            ("new_purchases", 2), ("renewals", 0), ("refunds", 0), ("expirations", 0), ("trial_conversions", 0),
            ("revenue", .object(JSONObject([("EUR", 4990), ("USD", 9990)]))),
        ])))
        // Today: the second's first period ended and its renewal began: still two active, one renewal.
        XCTAssertEqual(days[1], .object(JSONObject([
            ("date", .string(String(to))), ("active_subscriptions", 2), ("active_entitlements", 4),
            ("new_purchases", 0), ("renewals", 1), ("refunds", 0), ("expirations", 0), ("trial_conversions", 0),
            ("revenue", .object(JSONObject([("EUR", 4990)]))),
        ])))
        XCTAssertEqual(o["totals"], .object(JSONObject([
            ("active_subscriptions", 2), ("active_entitlements", 4), ("new_purchases", 2), ("renewals", 1), ("refunds", 0),
            ("expirations", 0), ("trial_conversions", 0), ("revenue", .object(JSONObject([("EUR", 9980), ("USD", 9990)]))),
        ])))
        let mrr = try XCTUnwrap(o["mrr"]?.objectValue)
        XCTAssertEqual(Set(mrr.keys), ["EUR", "USD"])

        // By default Production only: nothing (the receipts were Sandbox); `all` sums every environment.
        let production = try api.client.get(
            "/v1/admin/projects/\(tenant.id)/metrics/overview?from=\(from)&to=\(to)", headers: E2E.admin)
        XCTAssertEqual(try production.json()["environment"], "Production")
        XCTAssertEqual(try production.json()["totals"]?["new_purchases"], 0)
        let all = try api.client.get(
            "/v1/admin/projects/\(tenant.id)/metrics/overview?from=\(from)&to=\(to)&environment=all", headers: E2E.admin)
        XCTAssertEqual(try all.json()["environment"], "all")
        XCTAssertEqual(try all.json()["totals"], o["totals"])

        // Validation: every problem named, with the suggestion.
        let bad = try api.client.get(
            "/v1/admin/projects/\(tenant.id)/metrics/overview?from=2026-02-30&interval=week&environment=prod", headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue }, ["from", "interval", "environment"])
        let reversed = try api.client.get(
            "/v1/admin/projects/\(tenant.id)/metrics/overview?from=2026-03-02&to=2026-03-01", headers: E2E.admin)
        assertError(reversed, 400, "VALIDATION_ERROR")
        let long = try api.client.get(
            "/v1/admin/projects/\(tenant.id)/metrics/overview?from=2024-01-01&to=2026-01-01", headers: E2E.admin)
        XCTAssertEqual(try long.json()["details"]?[0]?["message"], "At most 366 days")
        assertError(try api.client.get("/v1/admin/projects/\(UUID())/metrics/overview", headers: E2E.admin), 404,
                    "PROJECT_NOT_FOUND")
        assertError(try api.client.get("/v1/admin/projects/\(tenant.id)/metrics/overview"), 401, "AUTH_INVALID_ADMIN_TOKEN")
    }

    // MARK: The browser

    /// Runs `Tests/EndToEndTests/console/console_browser_test.py` (Selenium, headless Chromium) against this server.
    /// Skips when Chromium or Selenium is missing, unless `CI=true` (then it fails: CI installs them).
    func testConsoleInHeadlessChromium() throws {
        let server = try server
        let bundle = E2E.uniqueBundle()
        var payload = TransactionPayload(bundleId: bundle)
        payload.extra = [("price", 9990), ("currency", "USD")]
        let screenshots = BrowserScript.screenshots
        let output = try BrowserScript.run("console_browser_test.py", [
            "BOUNCER_URL": "http://127.0.0.1:\(server.port)", "ADMIN_TOKEN": E2E.adminToken, "BUNDLE_ID": bundle,
            "PRODUCT_ID": payload.productId, "USER_ID": "console_\(E2E.uniqueId())",
            "SIGNED_TRANSACTION": try payload.mint(),
        ], context: "server:\n\(server.stderr)")
        for step in ["sign-in page", "signed in: HttpOnly SameSite=Strict cookie", "product mapped",
                     "customer found with entitlement pro", "grant added: entitlements, grants and timeline",
                     "export downloaded", "grant removed", "public key rotated with grace",
                     "webhook configured, test delivered and signed, retried, secret rotated",
                     "user erased after typed confirmation",
                     "dashboard numbers equal the API's", "no CSP violations", "signed out", "signed out everywhere",
                     "operator: accounts page, account created, usage with quotas",
                     "each role sees what it may do: owner, admin, developer, viewer, support",
                     "owner invited a member, enabled TOTP, created and revoked an API key",
                     "audit page lists the changes, filters, links the CSV", "member signed in with TOTP",
                     "operator renamed the account, saw why it could not be deleted, deleted it"] {
            XCTAssertTrue(output.contains("STEP \(step)"), "missing step \(step):\n\(output)")
        }
        let result = try XCTUnwrap(output.split(separator: "\n").first { $0.hasPrefix("RESULT ") }, output)
        let measured = try JSONParser.parse(Array(result.dropFirst("RESULT ".count).utf8))
        XCTAssertEqual(measured["dashboard"]?["new_purchases"], "1")
        XCTAssertEqual(measured["dashboard"]?["revenue"], "9.99 USD")
        print("console measurements: \(result.dropFirst("RESULT ".count))")
        for name in ["01-sign-in", "02-projects", "03-products", "04-customer", "04b-customer-grant", "05-settings-keys", "08-dashboard",
                     "10-webhooks", "11-customer-erased", "12-operator-usage", "13-viewer-products", "14-api-keys", "15-audit"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: screenshots.appendingPathComponent("\(name).png").path), name)
        }
    }
}
