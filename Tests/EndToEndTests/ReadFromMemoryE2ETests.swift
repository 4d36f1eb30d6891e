import Foundation
import JSON
import TestSupport
import XCTest

/// `GET /v1/subscriptions` answered from memory (the read cache's entry and its kept answer, on the I/O thread) says
/// byte for byte what the first read, from the database on a worker, said; a secret key, a wrong one, an unknown
/// public key and a write still take the worker's path with its answers.
final class ReadFromMemoryE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "frommemory" }

    func testAnswersFromMemoryAreTheDatabasesAnswers() throws {
        let api = API(client: try server.client)
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)

        let first = try api.user(tenant.publicKey, "alice")  // a miss: the worker reads the database
        XCTAssertEqual(first.status, 200, first.description)
        XCTAssertEqual(try first.json()["entitlements"], ["pro"])
        XCTAssertEqual(try first.json()["status"], "active")
        for _ in 0..<3 {  // hits: from memory
            let again = try api.user(tenant.publicKey, "alice")
            XCTAssertEqual(again.status, 200)
            XCTAssertEqual(again.text, first.text)
            XCTAssertEqual(again.header("Content-Type"), "application/json")
        }
        let withKey = try api.user(tenant.publicKey, "alice", headers: ["Authorization": "Bearer \(tenant.secretKey)"])
        XCTAssertEqual(withKey.status, 200)
        XCTAssertEqual(withKey.text, first.text)
        let wrongKey = "sk_" + String(repeating: "0", count: 64)
        assertError(try api.user(tenant.publicKey, "alice", headers: ["Authorization": "Bearer \(wrongKey)"]), 401,
                    "AUTH_INVALID_SECRET_KEY")
        assertError(try api.user("pk_" + String(repeating: "0", count: 32), "alice"), 401, "AUTH_INVALID_PUBLIC_KEY")

        // A second purchase: the write drops the entry and its kept answer; the next reads show both purchases.
        let second = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try second.mint(), user: "alice").status, 201)
        let after = try api.user(tenant.publicKey, "alice")
        XCTAssertEqual(try after.json()["subscriptions"]?.arrayValue?.count, 2, after.description)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").text, after.text)
    }
}
