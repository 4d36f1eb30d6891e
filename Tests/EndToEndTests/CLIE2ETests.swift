import Foundation
import JSON
import XCTest

/// The `bouncer project|product` CLI against the database a running server uses: same JSON as the admin API,
/// changes visible to the server at once, failures as non-zero exits with nothing changed.
extension ContractE2ETests {
    func testCLIPrintsWhatTheAdminAPIReturnsAndRotatesKeys() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject(extra: [("transfer_policy", "block"), ("app_apple_id", 42)])
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"])

        let show = try cli(["project", "show", tenant.id])
        XCTAssertEqual(show.status, 0, show.stderr)
        let apiShow = try api.client.get("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).json()
        XCTAssertEqual(try JSONParser.parse(show.stdout), apiShow)
        XCTAssertFalse(show.stdout.contains("\"secret_key\""), show.stdout)

        let products = try cli(["product", "list", tenant.id])
        XCTAssertEqual(products.status, 0, products.stderr)
        // Same list shape as GET /v1/admin/projects/:id/products.
        XCTAssertEqual(try JSONParser.parse(products.stdout),
                       ["products": [["product_id": "com.e2e.pro.monthly", "entitlements": ["pro"]]]])
        let list = try cli(["project", "list"])
        XCTAssertEqual(list.status, 0, list.stderr)
        let listed = try XCTUnwrap(JSONParser.parse(list.stdout)["projects"]?.arrayValue)
        XCTAssertTrue(listed.contains { $0["id"]?.stringValue == tenant.id }, list.stdout)

        // Rotation through the CLI with grace 0: the running server refuses the old key and accepts the new one as
        // soon as the rotation's announcement reaches its cache (README, "Several instances"; polled, not timed).
        let rotate = try cli(["project", "rotate-keys", tenant.id, "--grace-seconds", "0"])
        XCTAssertEqual(rotate.status, 0, rotate.stderr)
        let rotated = try JSONParser.parse(rotate.stdout)
        let newKey = try XCTUnwrap(rotated["public_key"]?.stringValue)
        let newSecret = try XCTUnwrap(rotated["secret_key"]?.stringValue)
        XCTAssertTrue(try E2E.eventually {
            try api.user(tenant.publicKey, "u").status == 401
                && api.user(newKey, "u", headers: ["Authorization": "Bearer \(newSecret)"]).status == 200
        })
        assertError(try api.user(tenant.publicKey, "u"), 401, "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(try api.user(newKey, "u", headers: ["Authorization": "Bearer \(newSecret)"]).status, 200)

        let delete = try cli(["product", "delete", tenant.id, "com.e2e.pro.monthly"])
        XCTAssertEqual(delete.status, 0, delete.stderr)
        XCTAssertEqual(try api.client.get("/v1/admin/projects/\(tenant.id)/products", headers: E2E.admin).json(), ["products": []])

        // Failures: unknown project and product exit 1, bad arguments exit 2 with usage; nothing changes.
        let unknown = "00000000-0000-4000-8000-000000000000"
        let missing = try cli(["project", "show", unknown])
        XCTAssertEqual(missing.status, 1, missing.stdout + missing.stderr)
        XCTAssertEqual(missing.stdout, "")
        XCTAssertEqual(try cli(["product", "delete", tenant.id, "com.e2e.pro.monthly"]).status, 1)
        XCTAssertEqual(try cli(["product", "set", unknown, "p", "pro"]).status, 1)
        let bad = try cli(["project", "show", "not-a-uuid"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("usage: bouncer project"), bad.stderr)
        XCTAssertEqual(try cli(["project", "create", "--name", "x"]).status, 2)
        XCTAssertEqual(try cli(["project", "create", "--name", "x", "--bundle-id", "com.x", "--transfer-policy", "steal"]).status, 2)
        XCTAssertEqual(try cli(["project", "create", "--name", String(repeating: "n", count: 201), "--bundle-id", "com.x"]).status, 2)
        XCTAssertEqual(try cli(["project", "create", "--name", "x", "--bundle-id", "com.x" + String(repeating: "b", count: 251)]).status, 2)
        XCTAssertEqual(try db.count("products", project: tenant.id), 0)
        XCTAssertEqual(try db.query("SELECT 1 FROM projects WHERE bundle_id LIKE 'com.x%'").count, 0)
    }

    /// The CLI claims the admin API's rules: an entitlement must be 1 to 128 characters there.
    func testCLIProductSetFollowsTheAdminAPIRules() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        let apiEmpty = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/products/p1", json: ["entitlements": [""]],
                                           headers: E2E.admin)
        assertError(apiEmpty, 400, "VALIDATION_ERROR")
        let cliEmpty = try cli(["product", "set", tenant.id, "p1", ""])
        let tooLong = try cli(["product", "set", tenant.id, "p2", String(repeating: "e", count: 129)])
        let emptyProduct = try cli(["product", "set", tenant.id, "", "pro"])
        // Found by this test: the CLI used to store all three (exit 0); it now refuses them as usage errors.
        for (what, run) in [("empty entitlement", cliEmpty), ("129-character entitlement", tooLong), ("empty product id", emptyProduct)] {
            XCTAssertEqual(run.status, 2, "\(what): \(run.stdout)\(run.stderr)")
            XCTAssertTrue(run.stderr.contains("usage: bouncer product"), run.stderr)
        }
        XCTAssertEqual(try db.count("products", project: tenant.id), 0)
        let ok = try cli(["product", "set", tenant.id, "p3", String(repeating: "e", count: 128)])
        XCTAssertEqual(ok.status, 0, ok.stderr)
    }
}
