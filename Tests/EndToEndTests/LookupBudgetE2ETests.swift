import Foundation
import JSON
import XCTest

/// Lookups by transaction id cannot burn a project's App Store Server API quota: every call to Apple takes a token per
/// client address and per project (429 `APPLE_LOOKUP_RATE_LIMITED` + `Retry-After` before Apple is called), and
/// Apple's "not found" is remembered per project, environment and id. Real `bouncer serve`, real PostgreSQL, the fake
/// Apple counting calls; client addresses are chosen with `X-Forwarded-For` from a trusted 127.0.0.1.
final class LookupBudgetE2ETests: AppleConnectedTestCase {
    /// Buckets of 4 calls per client and 10 per project that refill one call per 10,000 s: the `Retry-After` of an
    /// empty bucket is 10000 s for the whole test, whatever the machine's speed.
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "lookup_budget", overrides: [
            "BOUNCER_TRUSTED_PROXIES": "127.0.0.1/32",
            "BOUNCER_APPLE_LOOKUP_RATE_CLIENT": "0.0001", "BOUNCER_APPLE_LOOKUP_RATE_CLIENT_BURST": "4",
            "BOUNCER_APPLE_LOOKUP_RATE_PROJECT": "0.0001", "BOUNCER_APPLE_LOOKUP_RATE_PROJECT_BURST": "10",
        ])
    }

    /// A fresh IPv4 client address (24 random bits: a collision among a class's few dozen is about 1 in 10^5).
    private func newClient() -> String {
        "10.\(Int.random(in: 0...255)).\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
    }

    private func tenant() throws -> Tenant { try Self.fixture.get().createProject(keyId: "BUDGET0001").0 }

    private func lookup(_ tenant: Tenant, _ transactionId: String, from client: String) throws -> HTTPResponse {
        try api.client.post("/v1/receipts/\(tenant.publicKey)", json: ["transaction_id": .string(transactionId)],
                            headers: ["X-Forwarded-For": client])
    }

    private func calls(_ id: String) throws -> [FakeAppleServer.Environment?] {
        try apple.requests.filter { $0.id == id }.map(\.environment)
    }

    private func rows(_ tenant: Tenant) throws -> Int {
        try db.count("transactions", project: tenant.id) + db.count("purchases", project: tenant.id)
    }

    private func assertRateLimited(_ r: HTTPResponse, perClient: Bool, file: StaticString = #filePath, line: UInt = #line) {
        let whose = perClient ? "from your address" : "for this project"
        assertError(r, 429, "APPLE_LOOKUP_RATE_LIMITED", error: "Too many lookups by transaction id \(whose).",
                    suggestion: "Retry after the number of seconds in Retry-After, or send the StoreKit 2 signed transaction "
                        + "as signed_transaction_info instead (it needs no call to Apple). Lookups by transaction_id are "
                        + "limited because each costs calls to Apple with the project's key.", file: file, line: line)
        XCTAssertEqual(r.header("Retry-After"), "10000", file: file, line: line)
        XCTAssertNil((try? r.json())?["details"], file: file, line: line)
    }

    // MARK: - Remembering "not found"

    func testAnUnknownIdCostsTwoCallsOnceThenNone() throws {
        let tenant = try tenant()
        let client = newClient()
        let id = E2E.uniqueId()
        for _ in 0..<3 {
            assertError(try lookup(tenant, id, from: client), 404, "TRANSACTION_NOT_FOUND",
                        error: "Apple does not know this transaction id.")
        }
        XCTAssertEqual(try calls(id), [.production, .sandbox])
        // Remembered answers take no token: this client still has 2 of its 4.
        let other = E2E.uniqueId()
        assertError(try lookup(tenant, other, from: client), 404, "TRANSACTION_NOT_FOUND")
        XCTAssertEqual(try calls(other), [.production, .sandbox])
        XCTAssertEqual(try rows(tenant), 0)
    }

    func testProductionsNotFoundIsRememberedPerEnvironment() throws {
        let tenant = try tenant()
        let client = newClient()
        let payload = TransactionPayload(bundleId: tenant.bundleId)   // Sandbox only
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .sandbox)
        XCTAssertEqual(try lookup(tenant, payload.transactionId, from: client).status, 201)
        XCTAssertEqual(try lookup(tenant, payload.transactionId, from: client).status, 201)
        XCTAssertEqual(try calls(payload.transactionId), [.production, .sandbox, .sandbox])
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 1)
    }

    func testNotFoundIsRememberedPerProject() throws {
        let id = E2E.uniqueId()
        let first = try tenant()
        assertError(try lookup(first, id, from: newClient()), 404, "TRANSACTION_NOT_FOUND")
        let second = try tenant()   // the fake now expects the second project's key
        assertError(try lookup(second, id, from: newClient()), 404, "TRANSACTION_NOT_FOUND")
        XCTAssertEqual(try calls(id), [.production, .sandbox, .production, .sandbox])
    }

    /// An outage, Apple's rate limit or a refused key says nothing about the id: the next lookup asks Apple again.
    func testFailuresOtherThanNotFoundAreNotRemembered() throws {
        let tenant = try tenant()
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        try apple.setTransaction(payload.transactionId, signed: try payload.mint(), environment: .production)

        try apple.inject(.rateLimited(retryAfter: .appleMilliseconds(fromNow: 60_000)), on: .transactionInfo)
        let limited = try lookup(tenant, payload.transactionId, from: newClient())
        assertError(limited, 503, "APPLE_UNAVAILABLE")
        // Apple's UNIX time in milliseconds, 60 s ahead, passed on (was the 30 s default).
        XCTAssertEqual(limited.header("Retry-After"), "60")

        try apple.inject(.unauthorized, on: .transactionInfo)
        assertError(try lookup(tenant, payload.transactionId, from: newClient()), 502, "APP_STORE_AUTH_FAILED")

        try apple.inject(.serverError(), on: .transactionInfo, times: 3)
        assertError(try lookup(tenant, payload.transactionId, from: newClient()), 503, "APPLE_UNAVAILABLE")
        XCTAssertEqual(try rows(tenant), 0)

        XCTAssertEqual(try lookup(tenant, payload.transactionId, from: newClient()).status, 201)
        XCTAssertEqual(try calls(payload.transactionId), Array(repeating: .production, count: 1 + 1 + 3 + 1))
    }

    // MARK: - Budgets

    func testAClientAddressHasItsOwnBudget() throws {
        let tenant = try tenant()
        let client = newClient()
        let ids = (0..<3).map { _ in E2E.uniqueId() }
        assertError(try lookup(tenant, ids[0], from: client), 404, "TRANSACTION_NOT_FOUND")
        assertError(try lookup(tenant, ids[1], from: client), 404, "TRANSACTION_NOT_FOUND")
        assertRateLimited(try lookup(tenant, ids[2], from: client), perClient: true)
        XCTAssertEqual(try calls(ids[2]), [])
        XCTAssertEqual(try apple.requests.filter { ids.contains($0.id ?? "") }.count, 4)
        // Another address, same project: its own bucket.
        assertError(try lookup(tenant, ids[2], from: newClient()), 404, "TRANSACTION_NOT_FOUND")
        XCTAssertEqual(try calls(ids[2]), [.production, .sandbox])
        XCTAssertEqual(try rows(tenant), 0)
    }

    func testAProjectHasABudgetWhateverTheAddresses() throws {
        let tenant = try tenant()
        // 10 calls: five unknown ids from three addresses (2 + 2 + 1 lookups).
        var asked: [String] = []
        for (client, count) in [(newClient(), 2), (newClient(), 2), (newClient(), 1)] {
            for _ in 0..<count {
                let id = E2E.uniqueId()
                asked.append(id)
                assertError(try lookup(tenant, id, from: client), 404, "TRANSACTION_NOT_FOUND")
            }
        }
        let refused = E2E.uniqueId()
        assertRateLimited(try lookup(tenant, refused, from: newClient()), perClient: false)
        XCTAssertEqual(try calls(refused), [])
        XCTAssertEqual(try apple.requests.filter { asked.contains($0.id ?? "") }.count, 10)
        // Posting the signed transaction needs no call to Apple and is not limited.
        var payload = TransactionPayload(bundleId: tenant.bundleId)
        payload.environment = "Production"
        XCTAssertEqual(try Self.fixture.get().postTransaction(tenant, payload).status, 201)
        // Another project is not affected.
        let other = try self.tenant()
        assertError(try lookup(other, refused, from: newClient()), 404, "TRANSACTION_NOT_FOUND")
        XCTAssertEqual(try calls(refused), [.production, .sandbox])
    }
}
