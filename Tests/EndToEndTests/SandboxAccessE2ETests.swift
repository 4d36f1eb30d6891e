import Foundation
import JSON
import XCTest

/// Sandbox access over the real `bouncer` process and PostgreSQL: with `sandbox_access: allowlist`, Sandbox purchases
/// of users outside `sandbox_allowed_user_ids` are stored but grant nothing, in every answer that grants, and the
/// timeline says why; the setting is audited.
final class SandboxAccessE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "sandboxaccess" }

    func testAllowlistWithholdsOtherUsersSandboxPurchasesButStoresThem() throws {
        let api = try self.api, server = try self.server, db = try self.db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let projectPath = "/v1/admin/projects/\(tenant.id)"

        // The default, explicit on the project.
        let before = try server.client.get(projectPath, headers: E2E.admin)
        XCTAssertEqual(try before.json()["sandbox_access"], "all")
        XCTAssertEqual(try before.json()["sandbox_allowed_user_ids"], [])

        // Bad settings: every problem named.
        let bad = try server.client.send("PATCH", projectPath, json: [
            "sandbox_access": "some", "sandbox_allowed_user_ids": ["", .string(String(repeating: "u", count: 257))],
        ], headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"], [
            ["path": ["sandbox_access"], "message": "Invalid enum value. Expected 'all' | 'allowlist'"],
            ["path": ["sandbox_allowed_user_ids", "0"], "message": "String must contain at least 1 character(s)"],
            ["path": ["sandbox_allowed_user_ids", "1"], "message": "String must contain at most 256 character(s)"],
        ])

        let patched = try server.client.send("PATCH", projectPath, json: [
            "sandbox_access": "allowlist", "sandbox_allowed_user_ids": ["tester", "reviewer", "tester"],
        ], headers: E2E.admin)
        XCTAssertEqual(patched.status, 200, patched.description)
        XCTAssertEqual(try patched.json()["sandbox_access"], "allowlist")
        XCTAssertEqual(try patched.json()["sandbox_allowed_user_ids"], ["reviewer", "tester"])
        XCTAssertEqual(try server.client.get(projectPath, headers: E2E.admin).json()["sandbox_allowed_user_ids"],
                       ["reviewer", "tester"])
        // The change and its audit entry, in one transaction.
        let requestId = try XCTUnwrap(patched.header("X-Request-Id"))
        let audit = try db.query("SELECT action, changes::text AS changes FROM audit_log WHERE request_id = \(requestId)")
        XCTAssertEqual(try audit.map { try $0.decode("action", as: String.self) }, ["project.update"])
        let changes = try JSONParser.parse(Array(try XCTUnwrap(audit.first).decode("changes", as: String.self).utf8))
        XCTAssertEqual(changes, [
            "sandbox_access": ["all", "allowlist"], "sandbox_allowed_user_ids": [[], ["reviewer", "tester"]],
        ])

        // A tester's Sandbox purchase grants; a stranger's is stored but grants nothing, even in the receipt's answer.
        let tested = TransactionPayload(bundleId: tenant.bundleId)
        let testerReceipt = try api.postReceipt(tenant.publicKey, try tested.mint(), user: "tester")
        XCTAssertEqual(try testerReceipt.json(), expectedReceipt(tested, entitlements: ["pro"], status: "active"))
        let strangers = TransactionPayload(bundleId: tenant.bundleId)
        let strangerReceipt = try api.postReceipt(tenant.publicKey, try strangers.mint(), user: "stranger")
        XCTAssertEqual(strangerReceipt.status, 201, strangerReceipt.description)
        XCTAssertEqual(try strangerReceipt.json(), expectedReceipt(strangers, entitlements: [], status: "active"))
        let stored = try db.query("""
            SELECT s.user_id, p.environment FROM subscriptions s JOIN purchases p
              ON p.project_id = s.project_id AND p.environment = s.environment
             AND p.original_transaction_id = s.original_transaction_id
            WHERE s.project_id = \(tenant.id) AND s.original_transaction_id = \(strangers.originalTransactionId)
            """)
        XCTAssertEqual(try stored.map { [try $0.decode("user_id", as: String.self), try $0.decode("environment", as: String.self)] },
                       [["stranger", "Sandbox"]], "the facts and the binding are stored")

        let tester = try api.user(tenant.publicKey, "tester").json()
        XCTAssertEqual(tester["status"], "active")
        XCTAssertEqual(tester["entitlements"], ["pro"])
        XCTAssertNil(tester["subscriptions"]?[0]?.objectValue?["withheld_reason"])
        let stranger = try api.user(tenant.publicKey, "stranger").json()
        XCTAssertEqual(stranger["status"], "none")
        XCTAssertEqual(stranger["entitlements"], [])
        let subscription = try XCTUnwrap(stranger["subscriptions"]?[0])
        XCTAssertEqual(subscription["status"], "active", "the facts' status")
        XCTAssertEqual(subscription["entitlements"], [])
        XCTAssertEqual(subscription["withheld_reason"], "sandbox_user_not_allowed")

        // The timeline says why.
        let timeline = try server.client.get("\(projectPath)/users/stranger/timeline", headers: E2E.admin)
        XCTAssertEqual(timeline.status, 200, timeline.description)
        XCTAssertEqual(try timeline.json()["entitlements"], [[
            "id": "pro", "active": false,
            "reason": .string("Not granted: transaction \(strangers.transactionId) (com.e2e.pro.monthly) is a Sandbox "
                + "purchase, and this user is not in the project's sandbox_allowed_user_ids (sandbox_access: allowlist)."),
        ]])

        // Back to everyone: the same stored facts grant at once.
        let reopened = try server.client.send("PATCH", projectPath, json: ["sandbox_access": "all"], headers: E2E.admin)
        XCTAssertEqual(try reopened.json()["sandbox_allowed_user_ids"], ["reviewer", "tester"], "the list is kept")
        let now = try api.user(tenant.publicKey, "stranger").json()
        XCTAssertEqual(now["status"], "active")
        XCTAssertEqual(now["entitlements"], ["pro"])
    }

    /// The webhook copy applies the same rule: a stranger's Sandbox purchase is announced as a purchase
    /// (subscription.started: a fact) but grants no entitlement (no entitlement.granted), a tester's does.
    func testAllowlistedSandboxGrantsAreTheOnlyOnesAnnouncedToTheWebhook() throws {
        let api = try self.api, server = try self.server, db = try self.db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        // A webhook configured (its deliveries to a closed loopback port are refused and retried: only the outbox
        // rows matter here).
        _ = try db.query("""
            INSERT INTO webhook_endpoints (project_id, url, events, sealed_secret, encryption_key_id, created_at, updated_at)
            VALUES (\(tenant.id)::uuid, 'https://127.0.0.1:9/hook', NULL, '\\x00'::bytea, '0123456789abcdef', now(), now())
            """)
        let patched = try server.client.send("PATCH", "/v1/admin/projects/\(tenant.id)", json: [
            "sandbox_access": "allowlist", "sandbox_allowed_user_ids": ["tester"],
        ], headers: E2E.admin)
        XCTAssertEqual(patched.status, 200, patched.description)
        for user in ["tester", "stranger"] {
            let posted = try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(),
                                             user: user)
            XCTAssertEqual(posted.status, 201, posted.description)
        }
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 }, "derived")
        let rows = try db.query("""
            SELECT user_id, type FROM webhook_events WHERE project_id = \(tenant.id)::uuid ORDER BY user_id, seq
            """)
        XCTAssertEqual(try rows.map { [try $0.decode("user_id", as: String.self), try $0.decode("type", as: String.self)] }, [
            ["stranger", "subscription.started"],
            ["tester", "subscription.started"],
            ["tester", "entitlement.granted"],
        ])
    }

}
