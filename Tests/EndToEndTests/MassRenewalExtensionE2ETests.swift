import Foundation
import JSON
import Postgres
import XCTest

/// The mass renewal extension (`POST /v1/admin/projects/{id}/products/{productId}/extend` and its status) over the
/// real `bouncer serve`, real PostgreSQL and the fake Apple over TLS serving both endpoints as Apple documents them.
final class MassRenewalExtensionE2ETests: AppleConnectedTestCase {
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "massext", overrides: ["BOUNCER_APPLE_API_TIMEOUT_SECONDS": "3"])
    }

    private static let product = "com.e2e.pro.monthly"

    private func tenant() throws -> Tenant { try Self.fixture.get().createProject(keyId: "MASSEXT001").0 }

    private func extend(_ t: Tenant, _ body: JSONValue, product: String = product) throws -> HTTPResponse {
        try api.client.post("/v1/admin/projects/\(t.id)/products/\(product)/extend", json: body, headers: E2E.admin)
    }

    private func status(_ t: Tenant, _ id: String, product: String = product) throws -> HTTPResponse {
        try api.client.get("/v1/admin/projects/\(t.id)/products/\(product)/extend/\(id)", headers: E2E.admin)
    }

    private func row(_ t: Tenant, _ id: String) throws -> String? {
        try db.query("""
            SELECT concat_ws(' ', environment, product_id, extend_by_days, reason_code, coalesce(storefronts::text, '-'),
                coalesce(accepted::text, '-'), coalesce(apple_error_code::text, '-'), complete,
                coalesce(succeeded_count::text, '-'), coalesce(failed_count::text, '-'), checked_at IS NOT NULL) AS r
            FROM mass_renewal_extensions WHERE project_id = \(t.id)::uuid AND request_identifier = \(id)::uuid
            """).first?.decode("r", as: String.self)
    }

    func testApplesRequestIsRecordedAndItsStatusFollowedUntilComplete() throws {
        let t = try tenant()
        try apple.allowMassExtension(productId: Self.product, environment: .production)
        try apple.inject(.rateLimited(retryAfter: 1), on: .massExtendRenewalDate)   // waited for, then sent again

        let r = try extend(t, ["extend_by_days": 3, "reason_code": 3, "storefronts": ["USA", "FRA"]])
        XCTAssertEqual(r.status, 200, r.description)
        let body = try r.json()
        let id = try XCTUnwrap(body["request_identifier"]?.stringValue)
        XCTAssertEqual(body, [
            "request_identifier": .string(id), "product_id": .string(Self.product), "environment": "Production",
            "extend_by_days": 3, "reason_code": 3, "storefronts": ["USA", "FRA"], "complete": false,
            "complete_date": nil, "succeeded_count": nil, "failed_count": nil,
            "created_at": try XCTUnwrap(body["created_at"]), "checked_at": nil,
        ])
        let sent = try apple.requests.filter {
            $0.endpoint == .massExtendRenewalDate && $0.jsonBody?["requestIdentifier"] == .string(id)
        }
        XCTAssertEqual(sent.count, 2)
        XCTAssertEqual(sent.last?.jsonBody, [
            "requestIdentifier": .string(id), "extendByDays": 3, "extendReasonCode": 3,
            "productId": .string(Self.product), "storefrontCountryCodes": ["USA", "FRA"],
        ])
        XCTAssertEqual(try row(t, id), "Production \(Self.product) 3 3 {USA,FRA} true - f - - f")
        XCTAssertEqual(try db.query("""
            SELECT count(*)::int8 AS n FROM audit_log WHERE project_id = \(t.id)::uuid AND action = 'product.extend_renewals'
              AND target = \("product:" + Self.product)
            """).first?.decode("n", as: Int64.self), 1)

        let pending = try status(t, id)
        XCTAssertEqual(pending.status, 200, pending.description)
        XCTAssertEqual(try pending.json()["complete"], false)
        XCTAssertEqual(try row(t, id), "Production \(Self.product) 3 3 {USA,FRA} true - f - - t")

        try apple.completeMassExtension(try XCTUnwrap(UUID(uuidString: id)), succeeded: 40, failed: 2,
                                        at: 1_800_000_000_000, environment: .production)
        let done = try status(t, id)
        XCTAssertEqual(try done.json()["complete"], true)
        XCTAssertEqual(try done.json()["complete_date"], "2027-01-15T08:00:00.000Z")
        XCTAssertEqual(try done.json()["succeeded_count"], 40)
        XCTAssertEqual(try done.json()["failed_count"], 2)
        XCTAssertEqual(try row(t, id), "Production \(Self.product) 3 3 {USA,FRA} true - t 40 2 t")
        // Complete is final: no more calls to Apple.
        let asked = try apple.requests.filter { $0.endpoint == .massExtendRenewalDateStatus }.count
        XCTAssertEqual(try status(t, id).status, 200)
        XCTAssertEqual(try apple.requests.filter { $0.endpoint == .massExtendRenewalDateStatus }.count, asked)
        // Another product's path does not reach it.
        assertError(try status(t, id, product: "com.e2e.other"), 404, "RENEWAL_EXTENSION_NOT_FOUND")
    }

    func testApplesRefusalIsRecordedAndTheStatusOfAnUnknownIdIs404() throws {
        let t = try tenant()
        // Mapped here, unknown to Apple: 400 4000023.
        let r = try extend(t, ["extend_by_days": 3, "reason_code": 1])
        XCTAssertEqual(r.status, 502, r.description)
        XCTAssertEqual(try r.json()["code"], "APPLE_REQUEST_REJECTED")
        let recorded = try db.query("""
            SELECT request_identifier::text AS id FROM mass_renewal_extensions WHERE project_id = \(t.id)::uuid
            """).map { try $0.decode("id", as: String.self) }
        XCTAssertEqual(recorded.count, 1)
        XCTAssertEqual(try row(t, recorded[0]), "Production \(Self.product) 3 1 - false 4000023 f - - f")
        assertError(try status(t, recorded[0]), 404, "RENEWAL_EXTENSION_NOT_FOUND")
        assertError(try status(t, UUID().uuidString), 404, "RENEWAL_EXTENSION_NOT_FOUND")
    }

    func testInputsAreCheckedBeforeAppleIsAsked() throws {
        let t = try tenant()
        let before = try apple.requests.filter { $0.endpoint == .massExtendRenewalDate }.count
        let bad = try extend(t, ["extend_by_days": 91, "reason_code": 4, "storefronts": ["usa"]])
        XCTAssertEqual(bad.status, 400, bad.description)
        XCTAssertEqual(try bad.json()["details"], [
            ["path": ["extend_by_days"], "message": "Number must be less than or equal to 90"],
            ["path": ["reason_code"], "message": "Number must be less than or equal to 3"],
            ["path": ["storefronts", "0"], "message": "Must be an ISO 3166-1 alpha-3 storefront code (e.g. USA)"],
        ])
        assertError(try extend(t, ["extend_by_days": 3, "reason_code": 1], product: "com.e2e.unmapped"), 404,
                    "PRODUCT_NOT_FOUND")
        XCTAssertEqual(try apple.requests.filter { $0.endpoint == .massExtendRenewalDate }.count, before)
    }
}
