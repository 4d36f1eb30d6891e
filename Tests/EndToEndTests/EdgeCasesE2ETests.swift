import Foundation
import JSON
import XCTest

/// Edge cases users will hit: a later re-signed transaction carrying a revocation, ownership moving back, a user
/// bound after an anonymous post, percent-encoded user ids, Xcode data, and HTTP-level errors still in JSON.
extension ContractE2ETests {
    /// Apple re-signs a refunded transaction with `revocationDate`: same transaction id, newer `signedDate`.
    func testRevocationOfAKnownTransactionRevokesIt() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "refund").status, 201)
        var refunded = payload
        refunded.revocationDate = E2E.ms(-0.5)
        refunded.revocationReason = 0
        refunded.signedDate = E2E.ms(-0.2)
        let r = try api.postReceipt(tenant.publicKey, try refunded.mint(), user: "refund")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(refunded, entitlements: [], status: "revoked"))
        let user = try api.user(tenant.publicKey, "refund").json()
        XCTAssertEqual(user["status"], "revoked")
        XCTAssertEqual(user["entitlements"], [])
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
        let row = try db.query("SELECT revocation_date IS NOT NULL AS revoked FROM transactions WHERE project_id = \(tenant.id)::uuid")
        XCTAssertEqual(try row.first?.decode("revoked", as: Bool.self), true)

        // The original (older) signature posted again does not un-revoke it.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "refund").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "refund").json()["status"], "revoked")
    }

    /// Under `transfer`, ownership can move back: alice → bob → alice, two ownership events.
    func testTransferBackToTheFirstOwner() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        var renewal = payload
        renewal.transactionId = E2E.uniqueId()
        renewal.purchaseDate = E2E.ms(-30)
        renewal.expiresDate = E2E.ms(60 * 86_400)
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)
        // A renewal of the same purchase restored on bob's account moves it too.
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try renewal.mint(), user: "bob").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "alice").json()["status"], "none")
        XCTAssertEqual(try api.user(tenant.publicKey, "bob").json()["entitlements"], ["pro"])
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: "alice").status, 201)
        let alice = try api.user(tenant.publicKey, "alice").json()
        XCTAssertEqual(alice["status"], "active", alice.description)
        XCTAssertEqual(alice["entitlements"], ["pro"])
        XCTAssertEqual(alice["subscriptions"]?[0]?["current_period_end"], .string(E2E.iso(renewal.expiresDate ?? 0)))
        XCTAssertEqual(try api.user(tenant.publicKey, "bob").json()["status"], "none")
        let events = try db.query("SELECT from_user_id, to_user_id FROM ownership_events WHERE project_id = \(tenant.id)::uuid ORDER BY id")
        XCTAssertEqual(try events.map { "\(try $0.decode("from_user_id", as: String?.self) ?? "-")>\(try $0.decode("to_user_id", as: String?.self) ?? "-")" },
                       ["alice>bob", "bob>alice"])
    }

    /// A purchase first posted without a user is bound when a user arrives; until then nobody holds it.
    func testAnonymousPostThenBinding() throws {
        let api = try api
        let db = try db
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let jws = try payload.mint()
        let anonymous = try api.postReceipt(tenant.publicKey, jws)
        XCTAssertEqual(anonymous.status, 201, anonymous.description)
        XCTAssertEqual(try anonymous.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 0)
        let bound = try api.postReceipt(tenant.publicKey, jws, user: "later")
        XCTAssertEqual(bound.body, anonymous.body)
        XCTAssertEqual(try db.count("subscriptions", project: tenant.id), 1)
        XCTAssertEqual(try db.count("ownership_events", project: tenant.id), 0)
        XCTAssertEqual(try api.user(tenant.publicKey, "later").json()["entitlements"], ["pro"])
    }

    /// User ids are arbitrary strings: the GET path carries them percent-encoded.
    func testPercentEncodedUserIds() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        for (user, encoded) in [("user@example.com", "user@example.com"), ("a b", "a%20b"), ("José", "Jos%C3%A9"),
                                ("50%", "50%25"), ("a+b", "a+b")] {
            let payload = TransactionPayload(bundleId: tenant.bundleId)
            XCTAssertEqual(try api.postReceipt(tenant.publicKey, try payload.mint(), user: user).status, 201, user)
            let r = try api.user(tenant.publicKey, encoded)
            XCTAssertEqual(r.status, 200, "\(user): \(r)")
            let body = try r.json()
            XCTAssertEqual(body["user_id"], .string(user))
            XCTAssertEqual(body["entitlements"], ["pro"], user)
            XCTAssertEqual(body["subscriptions"]?.arrayValue?.count, 1, user)
        }
        assertError(try api.user(tenant.publicKey, "%FF"), 400, "BAD_REQUEST")
    }

    /// A user id containing "/" (base64 ids, "a/b" style ids) is read back with the slash percent-encoded.
    func testUserIdWithSlashCanBeReadBack() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let user = "tenant/42"
        let post = try api.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint(), user: user)
        XCTAssertEqual(post.status, 201, post.description)
        let r = try api.user(tenant.publicKey, "tenant%2F42")
        XCTAssertEqual(r.status, 200, r.description)
        XCTAssertEqual(try r.json()["user_id"], .string(user))
        XCTAssertEqual(try r.json()["entitlements"], ["pro"])
    }

    /// Xcode (StoreKit Testing) data is locally signed: accepted only by projects with `allow_xcode`.
    func testXcodeTransactionsNeedAllowXcode() throws {
        let api = try api
        let db = try db
        let strict = try api.createProject()
        let dev = try api.createProject(extra: [("allow_xcode", true)])
        try api.mapProduct(dev)
        let certs = E2EPaths.untrustedCerts
        func xcode(_ bundle: String) throws -> (TransactionPayload, String) {
            var payload = TransactionPayload(bundleId: bundle)
            payload.environment = "Xcode"
            // Any self-made certificate signs Xcode data; here a chain under a root nobody trusts.
            let jws = try E2E.mint(payload.json, x5c: [certs.appendingPathComponent("untrusted-leaf.pem").path])
            return (payload, jws)
        }
        let (_, refused) = try xcode(strict.bundleId)
        assertError(try api.postReceipt(strict.publicKey, refused, user: "dev"), 400, "ENVIRONMENT_NOT_ALLOWED")
        XCTAssertEqual(try db.count("transactions", project: strict.id), 0)
        let (payload, accepted) = try xcode(dev.bundleId)
        let r = try api.postReceipt(dev.publicKey, accepted, user: "dev")
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json(), expectedReceipt(payload, entitlements: ["pro"], status: "active"))
        // Data claiming Production under the same untrusted chain still fails verification.
        var fake = payload
        fake.environment = "Production"
        fake.transactionId = E2E.uniqueId()
        let forged = try E2E.mint(fake.json, x5c: ["untrusted-leaf.pem", "untrusted-intermediate.pem", "untrusted-root.pem"]
            .map { certs.appendingPathComponent($0).path })
        assertError(try api.postReceipt(dev.publicKey, forged, user: "dev"), 400, "JWS_VERIFICATION_FAILED")
        let shortChain = try E2E.mint(fake.json, x5c: [certs.appendingPathComponent("untrusted-leaf.pem").path])
        assertError(try api.postReceipt(dev.publicKey, shortChain, user: "dev"), 400, "INVALID_JWS_FORMAT")
        XCTAssertEqual(try db.count("transactions", project: dev.id), 1)
    }

    /// Errors from the HTTP layer are JSON too, and never 5xx.
    func testHTTPLevelErrorsAreJSON() throws {
        let api = try api
        let tenant = try api.createProject()
        let unknownRoute = try api.client.get("/v1/nope")
        XCTAssertEqual(unknownRoute.status, 404, unknownRoute.description)
        XCTAssertNotNil(try unknownRoute.json()["code"]?.stringValue)
        let wrongMethod = try api.client.get("/v1/receipts/\(tenant.publicKey)")
        XCTAssertEqual(wrongMethod.status, 405, wrongMethod.description)
        XCTAssertNotNil(try wrongMethod.json()["code"]?.stringValue)
        XCTAssertEqual(wrongMethod.header("Allow"), "POST")
        // 64 KiB elsewhere; POST /v1/receipts takes StoreKit 1 receipts up to BOUNCER_MAX_RECEIPT_BODY_BYTES (1 MiB).
        let big = try api.client.request("POST", "/v1/offers/\(tenant.publicKey)/signatures", headers: ["Content-Type": "application/json"],
                                         body: Array(repeating: UInt8(ascii: " "), count: 70_000))
        XCTAssertEqual(big.status, 413, big.description)
        XCTAssertEqual(try big.json()["code"], "PAYLOAD_TOO_LARGE")
        let bigReceipt = try api.client.request("POST", "/v1/receipts/\(tenant.publicKey)", headers: ["Content-Type": "application/json"],
                                                body: Array(repeating: UInt8(ascii: " "), count: 1024 * 1024 + 1))
        XCTAssertEqual(bigReceipt.status, 413, bigReceipt.description)
        let upper = try api.postReceipt(tenant.publicKey.uppercased().replacingOccurrences(of: "PK_", with: "pk_"),
                                        try TransactionPayload(bundleId: tenant.bundleId).mint())
        assertError(upper, 401, "AUTH_INVALID_PUBLIC_KEY")
    }
}

/// Settings changes reach every process serving the database, within the cache bound (README: Caches).
extension ContractE2ETests {
    func testSettingsChangesReachOtherProcessesWithinTheCacheBound() throws {
        let api = try api
        let db = try db
        let other = try BouncerProcess(databaseURL: db.url)
        defer { other.stopAndAssertCleanExit() }
        let otherAPI = API(client: other.client)
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        XCTAssertEqual(try otherAPI.postReceipt(tenant.publicKey, try payload.mint(), user: "u").status, 201)
        XCTAssertEqual(try otherAPI.user(tenant.publicKey, "u").json()["entitlements"], ["pro"])

        // Re-mapping the product changes what the user is entitled to now; deleting it leaves nothing.
        // The other process learns of each change through the cache's announcement (README: well under a second), so
        // it is awaited with a deadline, then asserted exactly.
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["gold", "pro"])
        XCTAssertTrue(try E2E.eventually { try otherAPI.user(tenant.publicKey, "u").json()["entitlements"] == ["gold", "pro"] })
        XCTAssertEqual(try api.client.delete("/v1/admin/projects/\(tenant.id)/products/com.e2e.pro.monthly", headers: E2E.admin).status, 204)
        XCTAssertTrue(try E2E.eventually { try otherAPI.user(tenant.publicKey, "u").json()["entitlements"] == [] })
        let unmapped = try otherAPI.user(tenant.publicKey, "u").json()
        XCTAssertEqual(unmapped["status"], "active")
        XCTAssertEqual(unmapped["entitlements"], [])

        // A new bundle id and environment list apply to the next post on the other process.
        let newBundle = E2E.uniqueBundle()
        let patch = try api.client.send("PATCH", "/v1/admin/projects/\(tenant.id)",
                                        json: ["bundle_id": .string(newBundle), "environments": ["Production"]], headers: E2E.admin)
        XCTAssertEqual(patch.status, 200, patch.description)
        XCTAssertTrue(try E2E.eventually {
            try otherAPI.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint()).status == 400
        })
        assertError(try otherAPI.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: tenant.bundleId).mint()),
                    400, "BUNDLE_ID_MISMATCH")
        assertError(try otherAPI.postReceipt(tenant.publicKey, try TransactionPayload(bundleId: newBundle).mint()),
                    400, "ENVIRONMENT_NOT_ALLOWED")
        var production = TransactionPayload(bundleId: newBundle)
        production.environment = "Production"
        XCTAssertEqual(try otherAPI.postReceipt(tenant.publicKey, try production.mint()).status, 201)

        // Keys rotated with grace 0 and a deleted project are refused by the other process.
        let rotate = try api.client.post("/v1/admin/projects/\(tenant.id)/rotate-keys", json: ["grace_seconds": 0],
                                         headers: E2E.admin)
        XCTAssertEqual(rotate.status, 200)
        let newKey = try XCTUnwrap(rotate.json()["public_key"]?.stringValue)
        XCTAssertTrue(try E2E.eventually { try otherAPI.user(tenant.publicKey, "u").status == 401 })
        assertError(try otherAPI.user(tenant.publicKey, "u"), 401, "AUTH_INVALID_PUBLIC_KEY")
        XCTAssertEqual(try otherAPI.user(newKey, "u").status, 200)
        XCTAssertEqual(try api.client.delete("/v1/admin/projects/\(tenant.id)", headers: E2E.admin).status, 204)
        XCTAssertTrue(try E2E.eventually { try otherAPI.user(newKey, "u").status == 401 })
        assertError(try otherAPI.user(newKey, "u"), 401, "AUTH_INVALID_PUBLIC_KEY")
        assertError(try otherAPI.postReceipt(newKey, try production.mint()), 401, "AUTH_INVALID_PUBLIC_KEY")
    }
}

extension ContractE2ETests {
    /// SDKs reuse connections: successes and every kind of 4xx in sequence on one keep-alive connection.
    func testOneKeepAliveConnectionCarriesSuccessesAndErrors() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let connection = try KeepAliveConnection(port: try server.port, timeout: 15)
        let json = ["Content-Type": "application/json"]
        let path = "/v1/receipts/\(tenant.publicKey)"
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let good = Array(E2E.receiptBody(try payload.mint(), user: "kept").serializedString().utf8)
        let steps: [(String, String, [String: String], [UInt8]?, Int)] = [
            ("POST", path, json, good, 201),
            ("POST", path, json, Array(#"{"signed_transaction_info":"#.utf8), 400),
            ("POST", path, ["Content-Type": "text/plain"], good, 415),
            ("POST", path, json, Array(#"{"signed_transaction_info":"a.b"}"#.utf8), 400),
            ("POST", "/v1/receipts/pk_nope", json, good, 401),
            ("GET", "/v1/subscriptions/\(tenant.publicKey)/kept", [:], nil, 200),
            ("GET", "/v1/admin/projects", [:], nil, 401),
            ("POST", path, json, good, 201),
            ("GET", "/v1/nope", [:], nil, 404),
            ("GET", "/v1/subscriptions/\(tenant.publicKey)/kept", [:], nil, 200),
        ]
        var bodies: [Int: [UInt8]] = [:]
        for (i, step) in steps.enumerated() {
            let r = try connection.request(step.0, step.1, headers: step.2, body: step.3)
            XCTAssertEqual(r.status, step.4, "step \(i) \(step.0) \(step.1): \(r)")
            XCTAssertNotEqual(r.header("Connection")?.lowercased(), "close", "step \(i)")
            XCTAssertNotNil(try? r.json(), "step \(i)")
            bodies[i] = r.body
        }
        XCTAssertEqual(bodies[0], bodies[7], "the same receipt gives the same answer")
        XCTAssertEqual(try JSONParser.parse(bodies[9] ?? [])["entitlements"], ["pro"])
    }
}
