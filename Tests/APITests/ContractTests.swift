import API
import Domain
import Foundation
import HTTPCore
import XCTest

/// The error codes and rate limits agree with `openapi.yaml`, the contract clients are generated from (the routes:
/// `OpenAPIRoutesTests`).
final class ContractTests: XCTestCase {
    static let openAPIURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("openapi.yaml")

    func testEveryErrorCodeTheAPIProducesIsInTheDocumentedEnum() throws {
        let text = try String(contentsOf: Self.openAPIURL, encoding: .utf8)
        let produced = [
            "VALIDATION_ERROR", "INVALID_JSON", "INVALID_JWS_FORMAT", "JWS_UNSUPPORTED_ALGORITHM",
            "JWS_VERIFICATION_FAILED", "BUNDLE_ID_MISMATCH", "ENVIRONMENT_NOT_ALLOWED", "APP_APPLE_ID_MISMATCH",
            "AUTH_INVALID_PUBLIC_KEY", "AUTH_INVALID_SECRET_KEY", "AUTH_SECRET_KEY_REQUIRED",
            "AUTH_INVALID_ADMIN_TOKEN", "CONSOLE_SESSION_INVALID", "CSRF_TOKEN_INVALID", "ADMIN_API_DISABLED", "PURCHASE_OWNED_BY_ANOTHER_USER", "PROJECT_NOT_FOUND",
            "PRODUCT_NOT_FOUND", "APP_STORE_CREDENTIALS_NOT_FOUND", "APP_STORE_CREDENTIALS_MISSING", "ENCRYPTION_KEY_MISSING", "CONFLICT", "SERVICE_UNAVAILABLE", "INTERNAL_ERROR", "UNSUPPORTED_MEDIA_TYPE",
        ]
        for code in produced {
            XCTAssertTrue(text.contains("            - \(code)\n"), "\(code) missing from the Error.code enum")
        }
    }

    /// Every `code: "…"` an `HTTPError` is built with anywhere in the server, and every verifier code, is documented:
    /// found by scanning the sources, so a new code cannot be forgotten.
    func testEveryErrorCodeInTheSourcesIsInTheDocumentedEnum() throws {
        let text = try String(contentsOf: Self.openAPIURL, encoding: .utf8)
        let sources = Self.openAPIURL.deletingLastPathComponent().appendingPathComponent("Sources")
        let pattern = try NSRegularExpression(pattern: #"(?:code: |Code\(rawValue: )"([A-Z][A-Z_]+)""#)
        var found: Set<String> = []
        for module in ["HTTPCore", "API", "Bouncer", "Commands", "Jobs", "Verification", "AppStoreJWS"] {
            let dir = sources.appendingPathComponent(module)
            let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
            for file in files {
                let source = try String(contentsOf: file, encoding: .utf8)
                for match in pattern.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
                    if let range = Range(match.range(at: 1), in: source) { found.insert(String(source[range])) }
                }
            }
        }
        // The verifier's codes are the port's table (`VerificationFailure.Code`, which AppStoreJWS reads).
        found.formUnion(VerificationFailure.Code.known.map(\.rawValue))
        XCTAssertTrue(found.isSuperset(of: ["UNSUPPORTED_MEDIA_TYPE", "RATE_LIMITED", "NOT_FOUND", "JWS_VERIFICATION_FAILED"]),
                      "the scan finds codes: \(found.sorted())")
        for code in found.sorted() {
            XCTAssertTrue(text.contains("            - \(code)\n"), "\(code) missing from the Error.code enum")
        }
    }

    /// Rate limits are declared with the routes: the app routes by client and key, the webhook by client only,
    /// admin by client and the admin bucket (one per presented credential).
    func testEveryAPIRouteDeclaresItsRateLimitScopes() {
        let h = Harness()
        let app: RateLimitScopes = [.client, .publicKey]
        XCTAssertEqual(h.router.rateLimits(.post, "/v1/receipts/:publicKey"), app)
        XCTAssertEqual(h.router.rateLimits(.get, "/v1/subscriptions/:publicKey/:userId"), app.union(.secretKey))
        XCTAssertEqual(h.router.rateLimits(.post, "/v1/offers/:publicKey/signatures"), app)
        XCTAssertEqual(h.router.rateLimits(.post, "/v1/offers/:publicKey/introductory-eligibility"), app.union(.secretKey))
        XCTAssertEqual(h.router.rateLimits(.post, "/v1/notifications/:publicKey"), [.client])
        let adminRoutes = h.router.registeredRoutes.filter { $0.pattern.hasPrefix("/v1/admin/") }
        XCTAssertEqual(adminRoutes.count, 80)
        for route in adminRoutes {
            XCTAssertEqual(h.router.rateLimits(route.method, route.pattern), [.client, .admin], route.pattern)
        }
    }
}

