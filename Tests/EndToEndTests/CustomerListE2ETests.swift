import Foundation
import JSON
import XCTest

/// `GET /v1/admin/projects/:id/customers` (issue 26, item 5) against the real `bouncer serve`: a known set of
/// customers (active, expired in another currency, refunded, active without a rate and with a grant), every sort,
/// every filter, pages walked to the end without loss or duplicates (also while customers arrive), and tenants apart.
final class CustomerListE2ETests: SharedServerTestCase {
    override class var serverLabel: String { "customer_list" }

    /// `2025-01-05T12:00:00.000Z` for milliseconds since 1970, as the API writes instants.
    static func iso(_ ms: Int64) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    struct Period {
        var start: Int64
        var end: Int64
        var price: Int64
        var currency = "USD"
        var product = "com.e2e.pro.monthly"
        var refund: Int64?
    }

    /// Posts one purchase's transactions in order (the first is the original), as `user`.
    static func post(_ api: API, _ tenant: Tenant, _ user: String, _ periods: [Period]) throws {
        var original: String?
        for period in periods {
            var p = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: original)
            original = original ?? p.transactionId
            p.productId = period.product
            p.purchaseDate = period.start
            p.originalPurchaseDate = periods[0].start
            p.expiresDate = period.end
            p.extra = [("price", JSONValue(period.price)), ("currency", .string(period.currency))]
            if let refund = period.refund {
                p.revocationDate = refund
                p.revocationReason = 0
                p.revocationType = "REFUND_FULL"
            }
            let r = try api.postReceipt(tenant.publicKey, try p.mint(), user: user)
            XCTAssertEqual(r.status, 201, r.description)
        }
    }

    /// Sets when each user was first bound (the server's clock wrote now), so the days and the order are known.
    private func bind(_ tenant: Tenant, _ firstSeen: [String: String]) throws {
        for (user, at) in firstSeen {
            _ = try db.query("""
                UPDATE subscriptions SET bound_at = \(at)::timestamptz
                WHERE project_id = \(tenant.id)::uuid AND user_id = \(user) RETURNING 1
                """)
        }
    }

    private func list(_ tenant: Tenant, _ query: String = "") throws -> JSONValue {
        let r = try api.client.get("/v1/admin/projects/\(tenant.id)/customers\(query.isEmpty ? "" : "?" + query)",
                                   headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        return try r.json()
    }

    private func users(_ json: JSONValue) -> [String] {
        (json["customers"]?.arrayValue ?? []).compactMap { $0["user_id"]?.stringValue }
    }

    /// Every page of `query` at `limit`, following next_cursor; the users in order.
    private func walk(_ tenant: Tenant, _ query: String, limit: Int, between: (Int) throws -> Void = { _ in })
        throws -> [String]
    {
        var out: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            var q = query + (query.isEmpty ? "" : "&") + "limit=\(limit)"
            if let cursor { q += "&cursor=" + cursor }
            let page = try list(tenant, q)
            XCTAssertLessThanOrEqual(users(page).count, limit)
            out += users(page)
            cursor = page["next_cursor"]?.stringValue
            try between(pages)
            pages += 1
        } while cursor != nil && pages < 50
        return out
    }

    /// The known set: every column exact, then each sort and filter.
    func testKnownCustomersSortedFilteredAndPaged() throws {
        let api = try api
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        try api.mapProduct(tenant, "com.e2e.pro.yearly", ["pro", "extra"])
        let r = try api.client.send("PUT", "/v1/admin/exchange-rates",
                                    json: ["date": "2025-01-01", "base": "EUR", "rates": ["USD": "1.1"]], headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        let day: Int64 = 86_400_000
        let now = E2E.ms(0) / 1000 * 1000
        let jan5 = ChartsE2ETests.at("2025-01-05T12:00:00Z")
        // alice: USD monthly, renewed and active now: proceeds 6993 twice.
        try Self.post(api, tenant, "alice", [Period(start: jan5, end: jan5 + 31 * day, price: 9990),
                                             Period(start: now - 5 * day, end: now + 25 * day, price: 9990)])
        // bob: 4.990 EUR in January 2025, expired: proceeds 3493 × 1.1 = 3842.3 → 3842 USD.
        let jan10 = ChartsE2ETests.at("2025-01-10T12:00:00Z")
        try Self.post(api, tenant, "bob", [Period(start: jan10, end: jan10 + 31 * day, price: 4990, currency: "EUR")])
        // carol: refunded in full: 6993 − 6993.
        let mar5 = ChartsE2ETests.at("2025-03-05T12:00:00Z")
        try Self.post(api, tenant, "carol", [Period(start: mar5, end: mar5 + 31 * day, price: 9990,
                                                    refund: mar5 + 5 * day)])
        // dave: the yearly plan in GBP (no rate: apart, proceeds 27993), active, and a grant.
        try Self.post(api, tenant, "dave", [Period(start: now - day, end: now + 364 * day, price: 39990, currency: "GBP",
                                                   product: "com.e2e.pro.yearly")])
        let grant = try api.client.send("POST", "/v1/admin/projects/\(tenant.id)/users/dave/grants",
                                        json: ["entitlement": "support", "reason": "ticket 7"], headers: E2E.admin)
        XCTAssertEqual(grant.status, 201, grant.description)
        try bind(tenant, ["alice": "2025-01-05T12:00:00Z", "bob": "2025-01-10T12:00:00Z",
                          "carol": "2025-03-05T12:00:00Z", "dave": "2025-06-01T08:30:00.250Z"])
        XCTAssertTrue(try E2E.eventually { try db.count("purchase_changes", project: tenant.id) == 0 })

        func customer(_ user: String, _ status: String, _ entitlements: [String], _ firstSeen: String,
                      _ last: Int64, _ net: Int64, _ unconverted: JSONValue = .object([:])) -> JSONValue {
            ["user_id": .string(user), "status": .string(status), "entitlements": .array(entitlements.map { .string($0) }),
             "first_seen": .string(firstSeen), "last_purchase": .string(Self.iso(last)), "net_milli": JSONValue(net),
             "unconverted": unconverted]
        }
        let alice = customer("alice", "active", ["pro"], "2025-01-05T12:00:00.000Z", now - 5 * day, 13_986)
        let bob = customer("bob", "expired", [], "2025-01-10T12:00:00.000Z", jan10, 3842)
        let carol = customer("carol", "revoked", [], "2025-03-05T12:00:00.000Z", mar5, 0)
        let dave = customer("dave", "active", ["extra", "pro", "support"], "2025-06-01T08:30:00.250Z", now - day, 0,
                            ["GBP": 27_993])
        XCTAssertEqual(try list(tenant), ["project_id": .string(tenant.id), "currency": "USD", "proceeds_basis": "before_tax",
                                          "customers": [dave, carol, bob, alice], "next_cursor": .null])

        // Each sort, both ways (ties by user id in the same direction).
        let orders: [(String, [String])] = [
            ("first_seen", ["alice", "bob", "carol", "dave"]), ("-first_seen", ["dave", "carol", "bob", "alice"]),
            ("last_purchase", ["bob", "carol", "alice", "dave"]), ("-last_purchase", ["dave", "alice", "carol", "bob"]),
            ("net", ["carol", "dave", "bob", "alice"]), ("-net", ["alice", "bob", "dave", "carol"]),
        ]
        for (sort, expected) in orders {
            XCTAssertEqual(users(try list(tenant, "sort=" + sort)), expected, sort)
            // Walking one customer a page finds each once, in the same order.
            XCTAssertEqual(try walk(tenant, "sort=" + sort, limit: 1), expected, sort)
            XCTAssertEqual(try walk(tenant, "sort=" + sort, limit: 3), expected, sort)
        }

        // Filters.
        let filters: [(String, [String])] = [
            ("status=active", ["dave", "alice"]), ("status=expired", ["bob"]), ("status=revoked", ["carol"]),
            ("product_id=com.e2e.pro.yearly", ["dave"]), ("product_id=com.e2e.none", []),
            ("country=USA", ["dave", "carol", "bob", "alice"]), ("country=FRA", []),
            ("environment=Sandbox", ["dave", "carol", "bob", "alice"]), ("environment=Production", []),
            ("first_seen_from=2025-01-06&first_seen_to=2025-03-05", ["carol", "bob"]),
            ("first_seen_from=2025-06-01", ["dave"]), ("first_seen_to=2025-01-05", ["alice"]),
            ("min_net=3842", ["bob", "alice"]), ("min_net=3843", ["alice"]),
            ("status=active&min_net=1&sort=net", ["alice"]),
        ]
        for (filter, expected) in filters {
            XCTAssertEqual(users(try list(tenant, filter)), expected, filter)
        }
        XCTAssertEqual(try list(tenant, "status=revoked"), ["project_id": .string(tenant.id), "currency": "USD", "proceeds_basis": "before_tax",
                                                             "customers": [carol], "next_cursor": .null])

        // The reporting currency: EUR (USD at 1 / 1.1; bob's EUR as signed).
        let euro = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/revenue-settings",
                                       json: ["small_business_program": false, "reporting_currency": "EUR"],
                                       headers: E2E.admin)
        XCTAssertEqual(euro.status, 200, euro.description)
        let inEuro = try list(tenant, "sort=-net")
        XCTAssertEqual(inEuro["currency"], "EUR")
        // alice: 6993 / 1.1 = 6357.27 → 6357, twice.
        XCTAssertEqual(inEuro["customers"]?.arrayValue?.compactMap { $0["net_milli"]?.description }, ["12714", "3493", "0", "0"])
    }

    /// Customers bound while a client pages through the list neither repeat nor push others out: the cursor is a
    /// position in the order, not an offset.
    func testPagesAreStableWhileCustomersArrive() throws {
        let api = try api
        let tenant = try api.createProject()
        let names = (0..<7).map { "u\($0)" }
        for name in names { try Self.post(api, tenant, name, [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)]) }
        try bind(tenant, Dictionary(uniqueKeysWithValues: names.enumerated().map {
            ($1, "2025-02-0\($0 + 1)T00:00:00Z")
        }))
        var arrived = 0
        let seen = try walk(tenant, "sort=first_seen", limit: 2) { page in
            guard page < 3 else { return }
            // Before the walk's position (never seen) and after it (seen once, in order).
            let early = "early\(page)", late = "late\(page)"
            try Self.post(api, tenant, early, [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)])
            try Self.post(api, tenant, late, [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)])
            try self.bind(tenant, [early: "2025-01-01T00:00:00Z", late: "2025-03-0\(page + 1)T00:00:00Z"])
            arrived += 2
        }
        XCTAssertEqual(arrived, 6)
        XCTAssertEqual(seen, names + ["late0", "late1", "late2"])
        XCTAssertEqual(Set(seen).count, seen.count)
    }

    /// One project's customers never appear in another's list, whoever asks; a member of another account is refused.
    func testTenantsAreApart() throws {
        let api = try api
        let one = try api.createProject()
        let two = try api.createProject()
        try Self.post(api, one, "same", [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)])
        try Self.post(api, one, "only-one", [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)])
        try Self.post(api, two, "same", [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 4990)])
        XCTAssertTrue(try E2E.eventually {
            try db.count("purchase_changes", project: one.id) == 0 && db.count("purchase_changes", project: two.id) == 0
        })
        XCTAssertEqual(Set(users(try list(one))), ["same", "only-one"])
        let other = try list(two)
        XCTAssertEqual(users(other), ["same"])
        XCTAssertEqual(other["customers"]?[0]?["net_milli"], 3493)
        // A cursor of one project is only a position: in the other it skips nothing of its own.
        let first = try list(one, "sort=first_seen&limit=1")
        let cursor = try XCTUnwrap(first["next_cursor"]?.stringValue)
        XCTAssertLessThanOrEqual(users(try list(two, "sort=first_seen&cursor=" + cursor)).count, 1)
        assertError(try api.client.get("/v1/admin/projects/\(UUID())/customers", headers: E2E.admin), 404,
                    "PROJECT_NOT_FOUND")
    }

    func testEveryParameterIsValidated() throws {
        let api = try api
        let tenant = try api.createProject()
        let bad = try api.client.get("/v1/admin/projects/\(tenant.id)/customers?status=gone&product_id=&country=fr"
            + "&environment=prod&first_seen_from=2025-02-30&first_seen_to=x&min_net=1.5&sort=price&limit=201&cursor=zz",
            headers: E2E.admin)
        assertError(bad, 400, "VALIDATION_ERROR")
        XCTAssertEqual(try bad.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue },
                       ["status", "product_id", "country", "environment", "first_seen_from", "first_seen_to", "min_net",
                        "sort", "limit", "cursor"])
        let order = try api.client.get("/v1/admin/projects/\(tenant.id)/customers?first_seen_from=2025-02-02"
            + "&first_seen_to=2025-02-01&limit=0", headers: E2E.admin)
        XCTAssertEqual(try order.json()["details"]?.arrayValue?.compactMap { $0["path"]?[0]?.stringValue },
                       ["limit", "first_seen_from"])
        // A cursor made for one sort is refused under another.
        try Self.post(api, tenant, "a", [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)])
        try Self.post(api, tenant, "b", [Period(start: E2E.ms(-60), end: E2E.ms(86_400), price: 990)])
        let page = try list(tenant, "sort=net&limit=1")
        let cursor = try XCTUnwrap(page["next_cursor"]?.stringValue)
        XCTAssertEqual(users(try list(tenant, "sort=net&limit=1&cursor=" + cursor)).count, 1)
        assertError(try api.client.get("/v1/admin/projects/\(tenant.id)/customers?sort=-net&cursor=" + cursor,
                                       headers: E2E.admin), 400, "VALIDATION_ERROR")
        assertError(try api.client.get("/v1/admin/projects/not-a-uuid/customers", headers: E2E.admin), 400,
                    "VALIDATION_ERROR")
    }
}
