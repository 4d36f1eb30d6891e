import Foundation
import JSON
import Postgres
import XCTest

/// Get Refund History in reconciliation (issue 25): a refund Apple never notified is found, recorded through the
/// verified path like any fact, counted, and not found again.
extension ReconcileE2ETests {
    func testRefundApplesNeverNotifiedIsFoundInRefundHistoryOnce() throws {
        let s = try makeSetup(label: "reconcile_refund_history")
        defer { s.server.stopAndAssertCleanExit() }
        let lifetime = nonConsumable(s)
        XCTAssertEqual(try s.api.postReceipt(s.tenant.publicKey, try lifetime.mint(), user: "dana").status, 201)
        XCTAssertEqual(try s.api.user(s.tenant.publicKey, "dana").json()["entitlements"], ["lifetime"])
        // Apple refunded it; no REFUND notification ever came. Apple's refund history for the customer lists it.
        var refunded = lifetime
        refunded.revocationDate = E2E.ms(-10)
        refunded.revocationReason = 0
        refunded.signedDate = E2E.ms(0)
        s.apple.setRefundHistory(lifetime.transactionId, pages: [[try refunded.mint()]], environment: .sandbox)

        let r = try s.reconcile()
        XCTAssertEqual(r.status, 200, r.description)
        let body = try r.json()
        XCTAssertEqual(body["refunds_found"], 1, "\(body)")
        XCTAssertEqual(body["changed"], 1)
        XCTAssertEqual(body["checked"], 0, "a refunded one-time purchase needs no check of its own")
        XCTAssertEqual(body["errors"], [])
        XCTAssertEqual(body["outcome"], "completed")
        XCTAssertEqual(body["apple_calls"], 3, "one refund history page, one notification history page per environment")
        let user = try s.api.user(s.tenant.publicKey, "dana").json()
        XCTAssertEqual(user["status"], "revoked")
        XCTAssertEqual(user["entitlements"], [])
        let row = try XCTUnwrap(s.db.query("""
            SELECT source, revocation_date IS NOT NULL AS refunded FROM transactions
            WHERE project_id = \(s.tenant.id)::uuid AND transaction_id = \(lifetime.transactionId)
            """).first)
        XCTAssertEqual(try row.decode("source", as: String.self), "reconcile")
        XCTAssertEqual(try row.decode("refunded", as: Bool.self), true)
        let change = try XCTUnwrap(s.db.query("""
            SELECT via, before_status, after_status FROM reconcile_changes WHERE project_id = \(s.tenant.id)::uuid
            """).first)
        XCTAssertEqual(try change.decode("via", as: String.self), "refund_history")
        XCTAssertEqual(try change.decode("before_status", as: String.self), "active")
        XCTAssertEqual(try change.decode("after_status", as: String.self), "revoked")
        // Asked as Apple documents: the customer's transaction, from the start; the revision reached is kept.
        let asked = s.apple.requests.filter { $0.endpoint == .refundHistory }
        XCTAssertEqual(asked.map(\.path), ["/inApps/v2/refund/lookup/\(lifetime.transactionId)"])
        XCTAssertEqual(asked.first?.query.map(\.name), [])
        let revision = try s.db.query("""
            SELECT revision FROM reconcile_refund_revisions WHERE project_id = \(s.tenant.id)::uuid
            """).map { try $0.decode("revision", as: String?.self) }
        XCTAssertEqual(revision, ["revision-1"])
        let runs = try s.api.client.get("/v1/admin/projects/\(s.tenant.id)/reconcile/runs", headers: E2E.admin)
        XCTAssertEqual(try runs.json()["runs"]?[0]?["refunds_found"], 1)
        XCTAssertEqual(try runs.json()["runs"]?[0]?["changes"]?[0]?["via"], "refund_history")

        // Again: asked from the revision reached, nothing new.
        let again = try s.reconcile().json()
        XCTAssertEqual(again["refunds_found"], 0)
        XCTAssertEqual(again["changed"], 0)
        XCTAssertEqual(again["outcome"], "completed")
        let second = s.apple.requests.filter { $0.endpoint == .refundHistory }.dropFirst()
        XCTAssertEqual(second.map { $0.query.map(\.value) }, [["revision-1"]])
        XCTAssertEqual(try s.db.count("reconcile_changes", project: s.tenant.id), 1)
    }
}
