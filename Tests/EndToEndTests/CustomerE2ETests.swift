import Foundation
import JSON
import Postgres
import XCTest

/// Manual grants, the customer timeline, export and erase against a real `bouncer serve` and PostgreSQL: signed test
/// transactions and notifications (REFUND, DID_RENEW), a transfer by another user posting the same purchase, exact
/// explanation texts, grants in `GET /v1/subscriptions` (read cache on), webhook outbox rows, and after an erase a
/// scan of every column of every table for the user id.
final class CustomerE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "customer" }

    var client: RawHTTPClient { get throws { try server.client } }

    /// A sentence's date: UTC, whole seconds (floored).
    static func sentence(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss'Z'"
        return formatter.string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    static func sentence(ms: Int64) -> String { sentence(Date(timeIntervalSince1970: Double(ms) / 1000)) }

    func makeTenant() throws -> Tenant {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])
        try api.mapProduct(tenant, "com.e2e.lifetime", ["lifetime"])
        return tenant
    }

    func userPath(_ tenant: Tenant, _ user: String) -> String { "/v1/admin/projects/\(tenant.id)/users/\(user)" }

    func timeline(_ tenant: Tenant, _ user: String, headers: [String: String] = E2E.admin,
                  file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let r = try client.get(userPath(tenant, user) + "/timeline", headers: headers)
        XCTAssertEqual(r.status, 200, r.description, file: file, line: line)
        return try r.json()
    }

    /// The timeline's explanations as `id active: reason` lines.
    func explanations(_ tenant: Tenant, _ user: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> [String]
    {
        try (timeline(tenant, user, file: file, line: line)["entitlements"]?.arrayValue ?? []).map { e in
            "\(e["id"]?.stringValue ?? "?") \(e["active"]?.boolValue ?? false): \(e["reason"]?.stringValue ?? "?")"
        }
    }

    func notify(_ tenant: Tenant, _ n: NotificationPayload, file: StaticString = #filePath, line: UInt = #line) throws {
        try api.deliver(tenant.publicKey, n, file: file, line: line)
    }

    /// One date column of one row.
    func date(_ query: Query) throws -> Date {
        guard let row = try db.query(query).first, let value = try row.decode(at: 0, as: Date?.self) else {
            throw HarnessFailure(description: "no date for \(query)")
        }
        return value
    }

    // MARK: - Timeline

    func testTimelineExplainsPurchaseRenewalRefundTransferAndGrant() throws {
        let tenant = try makeTenant()
        let api = try api
        let u1 = "user-\(E2E.uniqueId())", u2 = "user-\(E2E.uniqueId())"

        // Purchase.
        var t1 = TransactionPayload(bundleId: tenant.bundleId)
        t1.purchaseDate = E2E.ms(-600)
        t1.originalPurchaseDate = t1.purchaseDate
        t1.signedDate = E2E.ms(-600)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t1.mint(), user: u1, device: "device-a").status, 201)
        XCTAssertEqual(try explanations(tenant, u1), [
            "pro true: Granted by transaction \(t1.transactionId) (com.e2e.pro.monthly) until "
                + "\(Self.sentence(ms: t1.expiresDate ?? 0)).",
        ])

        // Renewal (DID_RENEW with the next transaction).
        var t2 = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: t1.originalTransactionId)
        t2.purchaseDate = E2E.ms(-120)
        t2.expiresDate = E2E.ms(40 * 86_400)
        t2.signedDate = E2E.ms(-120)
        try notify(tenant, NotificationPayload("DID_RENEW", bundleId: tenant.bundleId, transaction: t2,
                                               renewal: RenewalPayload(originalTransactionId: t1.originalTransactionId)))
        XCTAssertEqual(try explanations(tenant, u1), [
            "pro true: Granted by transaction \(t2.transactionId) (com.e2e.pro.monthly) until "
                + "\(Self.sentence(ms: t2.expiresDate ?? 0)).",
        ])

        // Refund of the renewal.
        var refunded = t2
        refunded.signedDate = E2E.ms(0)
        refunded.revocationDate = E2E.ms(0)
        refunded.revocationReason = 0
        try notify(tenant, NotificationPayload("REFUND", bundleId: tenant.bundleId, transaction: refunded))
        let refundSentence = "pro false: Not active: transaction \(t2.transactionId) was refunded on "
            + "\(Self.sentence(ms: refunded.revocationDate ?? 0))."
        XCTAssertEqual(try explanations(tenant, u1), [refundSentence])

        // Transfer: u2 restores u1's lifetime purchase under the project's transfer policy.
        var lifetime = TransactionPayload(bundleId: tenant.bundleId)
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: u1).status, 201)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: u2).status, 201)
        let movedAt = try date("""
            SELECT revoked_at FROM subscriptions WHERE project_id = \(tenant.id)::uuid AND user_id = \(u1)
              AND original_transaction_id = \(lifetime.originalTransactionId)
            """)
        let transferSentence = "lifetime false: Not active: the purchase moved to user \(u2) on "
            + "\(Self.sentence(movedAt)) (transfer policy)."
        XCTAssertEqual(try explanations(tenant, u1), [transferSentence, refundSentence])
        XCTAssertEqual(try explanations(tenant, u2), [
            "lifetime true: Granted by transaction \(lifetime.transactionId) (com.e2e.lifetime) with no expiry.",
        ])

        // Grant: read first, so the answer is cached; the grant must replace it at once.
        XCTAssertEqual(try api.user(tenant.publicKey, u1).json()["entitlements"], [])
        let until = E2E.ms(30 * 86_400)
        let created = try client.post(userPath(tenant, u1) + "/grants", json: [
            "entitlement": "pro", "reason": "support ticket 42", "expires_at": .string(E2E.iso(until)),
        ], headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let grant = try created.json()
        let grantId = try XCTUnwrap(grant["id"]?.stringValue)
        XCTAssertEqual(grant, [
            "id": .string(grantId), "source": "grant", "user_id": .string(u1), "entitlement": "pro",
            "expires_at": .string(E2E.iso(until)), "reason": "support ticket 42",
            "created_at": grant["created_at"] ?? .null, "revoked_at": nil, "active": true,
        ])
        let grantSentence = "pro true: Granted manually by an admin until \(Self.sentence(ms: until)) "
            + "(reason: support ticket 42)."
        XCTAssertEqual(try explanations(tenant, u1), [transferSentence, grantSentence])
        let answer = try api.user(tenant.publicKey, u1).json()
        XCTAssertEqual(answer["status"], "active")
        XCTAssertEqual(answer["entitlements"], ["pro"])
        XCTAssertEqual(answer["grants"], [[
            "source": "grant", "id": .string(grantId), "entitlement": "pro", "expires_at": .string(E2E.iso(until)),
            "created_at": grant["created_at"] ?? .null, "active": true,
        ]])
        XCTAssertNil(answer["grants"]?[0]?["reason"], "the public read path never shows the admin's reason")

        // Events, oldest first, with their exact texts.
        let events = try timeline(tenant, u1)["events"]?.arrayValue ?? []
        let ats = events.compactMap { $0["at"]?.stringValue }
        XCTAssertEqual(ats, ats.sorted(), "oldest first")
        let lines = events.map { e in
            "\(e["source"]?.stringValue ?? "?") \(e["type"]?.stringValue ?? "?") \(e["transaction_id"]?.stringValue ?? "-"): "
                + "\(e["summary"]?.stringValue ?? "?") → \(e["effect"]?.stringValue ?? "?")"
        }
        let otid = t1.originalTransactionId
        let expected = [
            "transaction purchase \(t1.transactionId): Purchased com.e2e.pro.monthly (transaction \(t1.transactionId)). → "
                + "Gives pro until \(Self.sentence(ms: t1.expiresDate ?? 0)).",
            "notification renewal \(t2.transactionId): Renewed com.e2e.pro.monthly (transaction \(t2.transactionId)). → "
                + "Gives pro until \(Self.sentence(ms: t2.expiresDate ?? 0)).",
            "ownership binding \(otid): Purchase \(otid) bound to this user (device device-a). → "
                + "Gives pro while the purchase is active.",
            "notification notification \(otid): App Store notification DID_RENEW about purchase \(otid). → "
                + "Extends or restores access.",
            "notification refund \(t2.transactionId): Transaction \(t2.transactionId) was refunded. → Ends pro.",
            "notification notification \(otid): App Store notification REFUND about purchase \(otid). → Ends access.",
            "transaction purchase \(lifetime.transactionId): Purchased com.e2e.lifetime (transaction "
                + "\(lifetime.transactionId)). → Gives lifetime with no expiry.",
            "ownership binding \(lifetime.originalTransactionId): Purchase \(lifetime.originalTransactionId) bound to "
                + "this user. → Gives lifetime while the purchase is active.",
            "ownership transfer_out \(lifetime.originalTransactionId): Purchase \(lifetime.originalTransactionId) moved "
                + "to user \(u2) (transfer policy). → Ends lifetime for this user.",
            "admin grant -: An admin granted pro (reason: support ticket 42). → Gives pro until \(Self.sentence(ms: until)).",
        ]
        // The lifetime purchase's own purchase date is the payload's (a minute ago), so it sorts among the first
        // purchase's events: compare as sets of lines plus the relative order of each purchase's story.
        XCTAssertEqual(Set(lines), Set(expected), lines.joined(separator: "\n"))
        XCTAssertEqual(lines.count, expected.count, lines.joined(separator: "\n"))
        let story = lines.filter { $0.contains(otid) || $0.contains(t2.transactionId) || $0.hasPrefix("transaction purchase \(t1.transactionId)") }
        XCTAssertEqual(story, Array(expected.prefix(6)), "the subscription's story in order")

        // The webhook outbox (schema 0012) took the grant's event in the grant's transaction, when a webhook wants it.
        XCTAssertEqual(try db.count("webhook_events", project: tenant.id), 0, "no webhook configured: no outbox rows")

        // Removing the grant: 200 with revoked_at; the answer and the explanation change at once.
        let removed = try client.delete(userPath(tenant, u1) + "/grants/\(grantId)", headers: E2E.admin)
        XCTAssertEqual(removed.status, 200, removed.description)
        XCTAssertEqual(try removed.json()["active"], false)
        let revokedAt = try date("SELECT revoked_at FROM grants WHERE project_id = \(tenant.id)::uuid AND id = \(grantId)::uuid")
        XCTAssertEqual(try removed.json()["revoked_at"]?.stringValue, E2E.iso(Int64((revokedAt.timeIntervalSince1970 * 1000).rounded(.down))))
        XCTAssertEqual(try explanations(tenant, u1), [
            transferSentence,
            "pro false: Not active: the manual grant was removed on \(Self.sentence(revokedAt)) (reason: support ticket 42).",
        ])
        let after = try api.user(tenant.publicKey, u1).json()
        XCTAssertEqual(after["entitlements"], [])
        XCTAssertNil(after["grants"], "no standing grant: the published shape")
        let again = try client.delete(userPath(tenant, u1) + "/grants/\(grantId)", headers: E2E.admin)
        XCTAssertEqual(again.status, 200, "removing a removed grant answers the same")
        XCTAssertEqual(try again.json()["revoked_at"], try removed.json()["revoked_at"])
        // The row stays (soft delete) for the timeline.
        XCTAssertEqual(try db.count("grants", project: tenant.id), 1)
    }

    func testGrantEventsGoToTheOutboxInTheSameTransaction() throws {
        let tenant = try makeTenant()
        let user = "user-\(E2E.uniqueId())"
        _ = try db.query("""
            INSERT INTO webhook_endpoints (project_id, url, events, sealed_secret, encryption_key_id, created_at, updated_at)
            VALUES (\(tenant.id)::uuid, 'https://example.com/hook', NULL, '\\x00'::bytea, '0123456789abcdef', now(), now())
            """)
        let created = try client.post(userPath(tenant, user) + "/grants", json: [
            "entitlement": "gold", "reason": "launch promo",
        ], headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        let grantId = try XCTUnwrap(try created.json()["id"]?.stringValue)
        XCTAssertEqual(try created.json()["expires_at"], .null)
        let removed = try client.delete(userPath(tenant, user) + "/grants/\(grantId)", headers: E2E.admin)
        XCTAssertEqual(removed.status, 200, removed.description)
        let rows = try db.query("""
            SELECT type, user_id, data::text AS data FROM webhook_events WHERE project_id = \(tenant.id)::uuid ORDER BY seq
            """)
        let events = try rows.map { row -> [String] in
            [try row.decode("type", as: String.self), try row.decode("user_id", as: String.self),
             try row.decode("data", as: String.self)]
        }
        XCTAssertEqual(events, [
            ["entitlement.granted", user,
             #"{"source": "grant", "grant_id": "\#(grantId)", "expires_at": null, "entitlement": "gold"}"#],
            ["entitlement.revoked", user,
             #"{"reason": "grant removed", "source": "grant", "grant_id": "\#(grantId)", "expires_at": null, "entitlement": "gold"}"#],
        ])
    }

    func testAuthValidationAndNotFound() throws {
        let tenant = try makeTenant()
        let other = try makeTenant()
        let user = "user-\(E2E.uniqueId())"
        // The project's secret key works; another project's does not; no token is the admin's 401.
        XCTAssertEqual(try timeline(tenant, user, headers: ["Authorization": "Bearer \(tenant.secretKey)"]),
                       ["user_id": .string(user), "entitlements": [], "events": []])
        assertError(try client.get(userPath(tenant, user) + "/timeline",
                                   headers: ["Authorization": "Bearer \(other.secretKey)"]), 401, "AUTH_INVALID_SECRET_KEY")
        assertError(try client.get(userPath(tenant, user) + "/timeline"), 401, "AUTH_INVALID_ADMIN_TOKEN")
        assertError(try client.get("/v1/admin/projects/\(UUID().uuidString.lowercased())/users/\(user)/timeline",
                                   headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
        assertError(try client.delete(userPath(tenant, user) + "/grants/\(UUID().uuidString)", headers: E2E.admin),
                    404, "GRANT_NOT_FOUND")
        assertError(try client.delete(userPath(tenant, user) + "/grants/nope", headers: E2E.admin), 400, "VALIDATION_ERROR")
        let nul = try client.get(userPath(tenant, "a%00b") + "/timeline", headers: E2E.admin)
        assertError(nul, 400, "BAD_REQUEST")  // the router refuses NUL in a path segment before any handler
        // Another user's grant is not this user's.
        let created = try client.post(userPath(tenant, "someone-else") + "/grants", json: [
            "entitlement": "pro", "reason": "r",
        ], headers: ["Authorization": "Bearer \(tenant.secretKey)"])
        XCTAssertEqual(created.status, 201, created.description)
        let id = try XCTUnwrap(try created.json()["id"]?.stringValue)
        assertError(try client.delete(userPath(tenant, user) + "/grants/\(id)", headers: E2E.admin), 404, "GRANT_NOT_FOUND")

        let bad = try client.post(userPath(tenant, user) + "/grants", json: [
            "entitlement": "", "expires_at": "2001-01-01T00:00:00Z", "reason": 7,
        ], headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"], [
            ["path": ["reason"], "message": "Expected string"],
            ["path": ["entitlement"], "message": "String must contain at least 1 character(s)"],
            ["path": ["expires_at"], "message": "Must be in the future"],
        ])
        XCTAssertEqual(try db.count("grants", project: tenant.id), 1, "nothing written by the refused grant")
    }

    // MARK: - Search by transaction id

    func testFindCustomersByTransactionId() throws {
        let tenant = try makeTenant()
        let other = try makeTenant()
        let api = try api
        let u1 = "user-\(E2E.uniqueId())", u2 = "user-\(E2E.uniqueId())"
        func path(_ tenant: Tenant, _ transactionId: String) -> String {
            "/v1/admin/projects/\(tenant.id)/transactions/\(transactionId)"
        }

        var lifetime = TransactionPayload(bundleId: tenant.bundleId)
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: u1).status, 201)
        let first = try client.get(path(tenant, lifetime.transactionId), headers: E2E.admin)
        XCTAssertEqual(first.status, 200, first.description)
        XCTAssertEqual(first.body, Array("""
            {"transaction_id":"\(lifetime.transactionId)","original_transaction_id":"\(lifetime.originalTransactionId)",\
            "product_id":"com.e2e.lifetime","environment":"Sandbox","source":"transaction","user_ids":["\(u1)"]}
            """.utf8))

        // Transfer: u2 restores the purchase; only the current holder is listed. The secret key works too.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: u2).status, 201)
        let moved = try client.get(path(tenant, lifetime.transactionId),
                                   headers: ["Authorization": "Bearer \(tenant.secretKey)"])
        XCTAssertEqual(moved.status, 200, moved.description)
        XCTAssertEqual(try moved.json(), [
            "transaction_id": .string(lifetime.transactionId),
            "original_transaction_id": .string(lifetime.originalTransactionId),
            "product_id": "com.e2e.lifetime", "environment": "Sandbox", "source": "transaction",
            "user_ids": [.string(u2)],
        ])

        // A renewal recorded from a notification finds the holder of its purchase.
        let t1 = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try t1.mint(), user: u1).status, 201)
        var t2 = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: t1.originalTransactionId)
        t2.purchaseDate = E2E.ms(-60)
        t2.expiresDate = E2E.ms(40 * 86_400)
        t2.signedDate = E2E.ms(-60)
        try notify(tenant, NotificationPayload("DID_RENEW", bundleId: tenant.bundleId, transaction: t2,
                                               renewal: RenewalPayload(originalTransactionId: t1.originalTransactionId)))
        let renewal = try client.get(path(tenant, t2.transactionId), headers: E2E.admin)
        XCTAssertEqual(try renewal.json(), [
            "transaction_id": .string(t2.transactionId),
            "original_transaction_id": .string(t1.originalTransactionId),
            "product_id": "com.e2e.pro.monthly", "environment": "Sandbox", "source": "notification",
            "user_ids": [.string(u1)],
        ])

        // Unknown id, and the other project's transaction: the same 404.
        let suggestion = "Check the transaction id (digits only) and the project: only transactions Bouncer has "
            + "recorded for this project (posted to /v1/receipts, received in a notification or recovered by "
            + "reconciliation) are found."
        for r in [try client.get(path(tenant, "999999999999"), headers: E2E.admin),
                  try client.get(path(other, lifetime.transactionId), headers: E2E.admin)] {
            assertError(r, 404, "TRANSACTION_NOT_FOUND", error: "No transaction with that id in this project.",
                        suggestion: suggestion)
            let body = try r.json()
            XCTAssertEqual(body.objectValue?.keys.sorted(), ["code", "error", "request_id", "suggestion"], r.description)
            XCTAssertEqual(body["request_id"]?.stringValue, r.header("X-Request-Id"))
        }
        // Validation, auth, unknown project.
        let bad = try client.get(path(tenant, "abc"), headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"], [
            ["path": ["transactionId"], "message": "Must be an App Store transaction id (digits only)"],
        ])
        assertError(try client.get(path(tenant, String(repeating: "1", count: 33)), headers: E2E.admin),
                    400, "VALIDATION_ERROR")
        assertError(try client.get(path(tenant, lifetime.transactionId)), 401, "AUTH_INVALID_ADMIN_TOKEN")
        assertError(try client.get(path(tenant, lifetime.transactionId),
                                   headers: ["Authorization": "Bearer \(other.secretKey)"]), 401, "AUTH_INVALID_SECRET_KEY")
        assertError(try client.get("/v1/admin/projects/\(UUID().uuidString.lowercased())/transactions/1",
                                   headers: E2E.admin), 404, "PROJECT_NOT_FOUND")
    }

    /// Two instances with long-lived read caches: a grant, its removal and an erase made through A reach B's cached
    /// answer through the announcements alone (neither the maximum age nor the refresh can explain it in time).
    func testGrantsAndEraseInvalidateEveryInstance() throws {
        let db = try E2EDatabase(label: "customercache")
        let servers = try (0..<2).map { _ in
            try BouncerProcess(databaseURL: db.url, overrides: [
                "BOUNCER_CACHE_REFRESH_SECONDS": "3600", "BOUNCER_READ_CACHE_MAX_AGE_SECONDS": "3600",
            ])
        }
        defer { servers.forEach { $0.stopAndAssertCleanExit() } }
        for server in servers {
            XCTAssertTrue(E2E.eventually { server.stderr.contains("cache: listening; projects and reads served from memory") },
                          server.stderr)
        }
        let a = API(client: servers[0].client), b = API(client: servers[1].client)
        let tenant = try a.createProject()
        try a.mapProduct(tenant)
        let user = "user-\(E2E.uniqueId())"
        // Posted through B (its own write invalidates at once), so no late announcement from A can drop B's entry:
        // only the grant's can.
        XCTAssertTrue(try E2E.eventually { try b.user(tenant.publicKey, user).status == 200 }, "the project reaches B")
        XCTAssertEqual(try b.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(),
                                         user: user).status, 201)
        XCTAssertTrue(try E2E.eventually { try b.user(tenant.publicKey, user).json()["entitlements"] == ["pro"] })
        XCTAssertEqual(try b.user(tenant.publicKey, user).json()["entitlements"], ["pro"], "cached on B")

        let created = try a.client.post(userPath(tenant, user) + "/grants", json: ["entitlement": "gold", "reason": "vip"],
                                        headers: E2E.admin)
        XCTAssertEqual(created.status, 201, created.description)
        XCTAssertTrue(try E2E.eventually { try b.user(tenant.publicKey, user).json()["entitlements"] == ["gold", "pro"] },
                      "the grant reaches B")
        let id = try XCTUnwrap(try created.json()["id"]?.stringValue)
        XCTAssertEqual(try a.client.delete(userPath(tenant, user) + "/grants/\(id)", headers: E2E.admin).status, 200)
        XCTAssertTrue(try E2E.eventually { try b.user(tenant.publicKey, user).json()["entitlements"] == ["pro"] },
                      "the removal reaches B")
        XCTAssertEqual(try a.client.delete(userPath(tenant, user), headers: E2E.admin).status, 200)
        XCTAssertTrue(try E2E.eventually { try b.user(tenant.publicKey, user).json()["status"] == "none" },
                      "the erase reaches B")
        XCTAssertEqual(try b.user(tenant.publicKey, user).json()["subscriptions"], [])
    }

    /// `bouncer user …` against the server's database: the API's JSON, the running server's cache told at once.
    func testCLIGrantsTimelineExportAndErase() throws {
        let tenant = try makeTenant()
        let user = "user-\(E2E.uniqueId())"
        var env = try server.environment
        env["BOUNCER_PORT"] = nil
        func cli(_ args: [String]) throws -> CLIRun { try CLIRun.run(["user"] + args, environment: env) }
        // Cached on the server first: only the CLI's announcement can change the answer.
        XCTAssertEqual(try api.user(tenant.publicKey, user).json()["status"], "none")

        let granted = try cli(["grant", tenant.id, user, "pro", "--reason", "cli ticket"])
        XCTAssertEqual(granted.status, 0, granted.stderr)
        let grant = try JSONParser.parse(granted.stdout)
        XCTAssertEqual(grant["entitlement"], "pro")
        XCTAssertEqual(grant["reason"], "cli ticket")
        XCTAssertEqual(grant["active"], true)
        XCTAssertTrue(try E2E.eventually { try api.user(tenant.publicKey, user).json()["entitlements"] == ["pro"] })

        let timeline = try cli(["timeline", tenant.id, user])
        XCTAssertEqual(timeline.status, 0, timeline.stderr)
        XCTAssertEqual(try JSONParser.parse(timeline.stdout), try self.timeline(tenant, user), "the API's JSON")
        XCTAssertEqual(try JSONParser.parse(timeline.stdout)["entitlements"], [[
            "id": "pro", "active": true, "reason": "Granted manually by an admin with no expiry (reason: cli ticket).",
        ]])
        let export = try cli(["export", tenant.id, user])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertEqual(try JSONParser.parse(export.stdout)["grants"]?[0]?["id"], grant["id"])

        let bad = try cli(["grant", tenant.id, user, "pro"])
        XCTAssertEqual(bad.status, 2, "usage: --reason is required")
        XCTAssertTrue(bad.stderr.contains("--reason is required"), bad.stderr)
        let unknown = try cli(["revoke-grant", tenant.id, user, UUID().uuidString])
        XCTAssertEqual(unknown.status, 1, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("GRANT_NOT_FOUND"), unknown.stderr)

        let erased = try cli(["erase", tenant.id, user])
        XCTAssertEqual(erased.status, 0, erased.stderr)
        XCTAssertEqual(try JSONParser.parse(erased.stdout)["grants_anonymised"], 1)
        XCTAssertTrue(try E2E.eventually { try api.user(tenant.publicKey, user).json()["status"] == "none" })
        XCTAssertEqual(try self.timeline(tenant, user), ["user_id": .string(user), "entitlements": [], "events": []])
    }

    // MARK: - Export and erase

    func testExportThenEraseLeavesNoTraceOfTheUser() throws {
        let tenant = try makeTenant()
        let api = try api
        // A UUID user id that the app also used as appAccountToken: the token is the user id too.
        let user = UUID().uuidString.lowercased()
        let other = "user-\(E2E.uniqueId())"
        let device = "device-\(E2E.uniqueId())"
        _ = try db.query("""
            INSERT INTO webhook_endpoints (project_id, url, events, sealed_secret, encryption_key_id, created_at, updated_at)
            VALUES (\(tenant.id)::uuid, 'https://example.com/hook', NULL, '\\x00'::bytea, '0123456789abcdef', now(), now())
            """)

        var sub = TransactionPayload(bundleId: tenant.bundleId)
        sub.appAccountToken = user
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try sub.mint(), user: user, device: device).status, 201)
        var lifetime = TransactionPayload(bundleId: tenant.bundleId)
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: other).status, 201)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try lifetime.mint(), user: user).status, 201, "transfer in")
        let app = AppTransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postAppTransaction(tenant.publicKey, try app.mint(), user: user).status, 201)
        XCTAssertEqual(try client.post(userPath(tenant, user) + "/grants", json: [
            "entitlement": "gold", "reason": "support ticket 7",
        ], headers: E2E.admin).status, 201)
        // Every change derived (shortly after its commit); one of the user's events already delivered (kept,
        // anonymised), the rest pending (dropped).
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })
        _ = try db.query("""
            UPDATE webhook_events SET status = 'delivered', delivered_at = now()
            WHERE seq = (SELECT min(seq) FROM webhook_events WHERE project_id = \(tenant.id)::uuid AND user_id = \(user))
            """)
        let userEvents = try db.query("""
            SELECT count(*)::int8 AS n FROM webhook_events WHERE project_id = \(tenant.id)::uuid AND user_id = \(user)
            """).first?.decode("n", as: Int64.self) ?? 0
        XCTAssertGreaterThan(userEvents, 2)
        XCTAssertEqual(try api.user(tenant.publicKey, user).json()["entitlements"], ["gold", "lifetime", "pro"])

        // Export: everything stored about the user.
        let exported = try client.get(userPath(tenant, user) + "/export", headers: E2E.admin)
        XCTAssertEqual(exported.status, 200, exported.description)
        let export = try exported.json()
        XCTAssertEqual(export["user_id"], .string(user))
        XCTAssertEqual(export["device_ids"], [.string(device)])
        XCTAssertEqual(Set((export["bindings"]?.arrayValue ?? []).compactMap { $0["original_transaction_id"]?.stringValue }),
                       [sub.originalTransactionId, lifetime.originalTransactionId])
        XCTAssertEqual(Set((export["transactions"]?.arrayValue ?? []).compactMap { $0["transaction_id"]?.stringValue }),
                       [sub.transactionId, lifetime.transactionId])
        let exportedSub = export["transactions"]?.arrayValue?.first { $0["transaction_id"]?.stringValue == sub.transactionId }
        XCTAssertEqual(exportedSub?["payload"]?["appAccountToken"], .string(user), "the stored payload, as JSON")
        XCTAssertEqual(exportedSub?["source"], "transaction")
        XCTAssertEqual(export["grants"]?.arrayValue?.map { $0["entitlement"] }, ["gold"])
        XCTAssertEqual(export["grants"]?[0]?["reason"], "support ticket 7")
        XCTAssertEqual(export["app_transactions"]?.arrayValue?.map { $0["app_transaction_id"] }, [.string(app.appTransactionId)])
        XCTAssertEqual(export["ownership_events"]?.arrayValue?.map { [$0["from_user_id"], $0["to_user_id"]] },
                       [[.string(other), .string(user)]])
        XCTAssertEqual(export["timeline"]?["user_id"], .string(user))
        XCTAssertEqual(export["timeline"]?["entitlements"]?.arrayValue?.compactMap { $0["id"]?.stringValue },
                       ["gold", "lifetime", "pro"])
        XCTAssertEqual(export["timeline"], try timeline(tenant, user), "the export's timeline is the timeline")

        let transactionsBefore = try db.count("transactions", project: tenant.id)
        // The scan below can fail: before the erase it finds the user everywhere they are stored.
        XCTAssertEqual(try columnsHolding([user, device]), [
            "app_transactions.user_id", "grants.user_id", "ownership_events.to_user_id", "subscriptions.device_id",
            "subscriptions.user_id", "transactions.app_account_token", "transactions.payload",
            "webhook_entitlement_states.user_id", "webhook_events.data", "webhook_events.user_id",
            "webhook_purchase_states.user_id", "webhook_queue.user_id",
        ])

        // Erase.
        let erased = try client.delete(userPath(tenant, user), headers: E2E.admin)
        XCTAssertEqual(erased.status, 200, erased.description)
        let summary = try erased.json()
        XCTAssertEqual(summary["bindings_deleted"], 2)
        XCTAssertEqual(summary["grants_anonymised"], 1)
        XCTAssertEqual(summary["app_transactions_unbound"], 1)
        XCTAssertEqual(summary["ownership_events_anonymised"], 1)
        XCTAssertEqual(summary["app_account_tokens_cleared"], 1)
        XCTAssertEqual(summary["events_anonymised"], 1)
        XCTAssertEqual(summary["events_dropped"], JSONValue(userEvents - 1))

        // Nothing holds the user id (nor the device id): every text-like column of every table, scanned.
        let held = try columnsHolding([user, device])
        XCTAssertEqual(held, [], "after the erase")
        // Accounting keeps its rows, unbound; the user has nothing; the timeline is empty; the cache forgot them.
        XCTAssertEqual(try db.count("transactions", project: tenant.id), transactionsBefore)
        XCTAssertEqual(try db.count("grants", project: tenant.id), 1, "kept without user and reason")
        let answer = try api.user(tenant.publicKey, user).json()
        XCTAssertEqual(answer["status"], "none")
        XCTAssertEqual(answer["entitlements"], [])
        XCTAssertEqual(answer["subscriptions"], [])
        XCTAssertEqual(try timeline(tenant, user), ["user_id": .string(user), "entitlements": [], "events": []])
        // The other user's view of the transfer no longer names the erased user.
        let otherEvents = try timeline(tenant, other)["events"]?.arrayValue ?? []
        XCTAssertTrue(otherEvents.contains {
            $0["summary"]?.stringValue == "Purchase \(lifetime.originalTransactionId) moved to another user (transfer policy)."
        }, "\(otherEvents)")
        // Idempotent.
        let twice = try client.delete(userPath(tenant, user), headers: E2E.admin)
        XCTAssertEqual(twice.status, 200)
        XCTAssertEqual(try twice.json()["bindings_deleted"], 0)
    }

    /// `table.column` of every text-like column (of every table of the schema) that holds any of `needles`.
    func columnsHolding(_ needles: [String], file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let columns = try db.query("""
            SELECT c.table_name::text AS t, c.column_name::text AS c FROM information_schema.columns c
            JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
            WHERE c.table_schema = 'public' AND tb.table_type = 'BASE TABLE'
              AND c.data_type IN ('text', 'character varying', 'jsonb', 'json', 'uuid', 'ARRAY', 'bytea')
            ORDER BY 1, 2
            """)
        XCTAssertGreaterThan(columns.count, 40, "the scan covers the schema", file: file, line: line)
        var found: [String] = []
        for column in columns {
            let table = try column.decode("t", as: String.self), name = try column.decode("c", as: String.self)
            for needle in needles {
                let hits = try db.query("""
                    SELECT count(*)::int8 AS n FROM \(unsafeSQL: "\"\(table)\"")
                    WHERE \(unsafeSQL: "\"\(name)\"")::text ILIKE '%' || \(needle)::text || '%'
                    """).first?.decode("n", as: Int64.self) ?? 0
                if hits > 0, !found.contains("\(table).\(name)") { found.append("\(table).\(name)") }
            }
        }
        return found
    }
}
