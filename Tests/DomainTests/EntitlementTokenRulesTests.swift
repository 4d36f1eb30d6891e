@testable import Domain
import Foundation
import XCTest

/// `EntitlementTokenRules` as tables: exp, per-entitlement ends, TTL bounds, which keys the JWKS publishes.
final class EntitlementTokenRulesTests: XCTestCase {
    let now = Date(timeIntervalSince1970: 1_800_000_000.75)
    let project: Project = {
        var p = Project(id: UUID(uuidString: "6F3B1C2A-0000-4000-8000-000000000001") ?? UUID(), name: "App",
                        bundleId: "com.example", publicKey: "pk_x", createdAt: Date(), updatedAt: Date())
        p.entitlementTokens = true
        p.entitlementTokenTTLSeconds = 600
        return p
    }()

    func owned(_ product: String, _ entitlements: [String], expires: Date?, type: ProductType = .autoRenewable)
        -> OwnedPurchase
    {
        OwnedPurchase(purchase: PurchaseState(
            originalTransactionId: product, latestTransactionId: product, productId: product, type: type,
            environment: .sandbox, purchaseDate: now.addingTimeInterval(-3600), expiresDate: expires,
            latestSignedDate: now.addingTimeInterval(-3600)), entitlements: entitlements)
    }

    func claims(_ purchases: [OwnedPurchase]) -> EntitlementTokenClaims {
        EntitlementTokenRules.claims(issuer: "iss", userId: "u", project: project,
                                     summary: UserEntitlementSummary.summarize(purchases, at: now), at: now)
    }

    func testExpIsTheTTLOrTheEarliestEntitlementEndRoundedDown() {
        let iat: Int64 = 1_800_000_000
        // Nothing: empty list, full TTL; the audience is the lowercase project id.
        let none = claims([])
        XCTAssertEqual(none, EntitlementTokenClaims(issuer: "iss", subject: "u", audience: "6f3b1c2a-0000-4000-8000-000000000001",
                                                    issuedAt: iat, expiresAt: iat + 600, entitlements: []))
        // A long subscription: TTL wins.
        let long = claims([owned("a", ["pro"], expires: now.addingTimeInterval(86_400))])
        XCTAssertEqual(long.expiresAt, iat + 600)
        XCTAssertEqual(long.entitlements, [TokenEntitlement(id: "pro", expiresAt: iat + 86_400)])
        // One ending in 100.5 s: exp is its end, rounded down (never past it).
        let short = claims([owned("a", ["pro"], expires: now.addingTimeInterval(86_400)),
                            owned("b", ["basic"], expires: now.addingTimeInterval(99.75))])
        XCTAssertEqual(short.expiresAt, iat + 100)
        XCTAssertEqual(short.entitlements, [TokenEntitlement(id: "basic", expiresAt: iat + 100),
                                            TokenEntitlement(id: "pro", expiresAt: iat + 86_400)])
        // Expired purchases grant nothing and do not cap exp.
        let expired = claims([owned("c", ["old"], expires: now.addingTimeInterval(-10))])
        XCTAssertEqual(expired.entitlements, [])
        XCTAssertEqual(expired.expiresAt, iat + 600)
    }

    func testAnEntitlementEndsWithTheLastPurchaseGrantingItAndNeverWhenOneHasNoEnd() {
        let iat: Int64 = 1_800_000_000
        let two = claims([owned("a", ["pro"], expires: now.addingTimeInterval(1000)),
                          owned("b", ["pro"], expires: now.addingTimeInterval(5000))])
        XCTAssertEqual(two.entitlements, [TokenEntitlement(id: "pro", expiresAt: iat + 5000)])
        XCTAssertEqual(two.expiresAt, iat + 600)
        let lifetime = claims([owned("a", ["pro"], expires: now.addingTimeInterval(100)),
                               owned("b", ["pro"], expires: nil, type: .nonConsumable)])
        XCTAssertEqual(lifetime.entitlements, [TokenEntitlement(id: "pro", expiresAt: nil)])
        XCTAssertEqual(lifetime.expiresAt, iat + 600, "an entitlement without end does not cap exp")
    }

    func testTTLBounds() {
        XCTAssertEqual(EntitlementTokenRules.problems(ttlSeconds: 30), [])
        XCTAssertEqual(EntitlementTokenRules.problems(ttlSeconds: 86_400), [])
        XCTAssertEqual(EntitlementTokenRules.problems(ttlSeconds: 29), [FieldProblem(
            path: ["entitlement_token_ttl_seconds"], message: "Number must be greater than or equal to 30")])
        XCTAssertEqual(EntitlementTokenRules.problems(ttlSeconds: 86_401), [FieldProblem(
            path: ["entitlement_token_ttl_seconds"], message: "Number must be less than or equal to 86400")])
        var changes = ProjectChanges()
        changes.entitlementTokenTTLSeconds = 0
        XCTAssertEqual(ProjectRules.problems(in: changes).map(\.path), [["entitlement_token_ttl_seconds"]])
    }

    func testSecondsClampInsteadOfTrapping() {
        XCTAssertEqual(EntitlementTokenRules.seconds(Date(timeIntervalSince1970: 1e30)), Int64.max)
        XCTAssertEqual(EntitlementTokenRules.seconds(Date(timeIntervalSince1970: -1e30)), Int64.min)
        XCTAssertEqual(EntitlementTokenRules.seconds(Date(timeIntervalSince1970: -0.5)), -1)
    }

    func testTheJWKSPublishesCurrentPreviousAndKeysRetiredWithinTheLongestTTL() {
        func key(_ kid: String, retiredHoursAgo: Double?) -> SigningKey {
            SigningKey(kid: kid, x: "x", y: "y", createdAt: now,
                       retiredAt: retiredHoursAgo.map { now.addingTimeInterval(-$0 * 3600) })
        }
        let keys = [key("d", retiredHoursAgo: nil), key("c", retiredHoursAgo: 30), key("b", retiredHoursAgo: 40),
                    key("a", retiredHoursAgo: 50)]
        XCTAssertEqual(EntitlementTokenRules.published(keys, at: now).map(\.kid), ["d", "c"],
                       "the previous key stays however old; older ones go after 24 h")
        let recent = [key("d", retiredHoursAgo: nil), key("c", retiredHoursAgo: 1), key("b", retiredHoursAgo: 23),
                      key("a", retiredHoursAgo: 25)]
        XCTAssertEqual(EntitlementTokenRules.published(recent, at: now).map(\.kid), ["d", "c", "b"])
        XCTAssertEqual(EntitlementTokenRules.published([], at: now), [])
    }
}
