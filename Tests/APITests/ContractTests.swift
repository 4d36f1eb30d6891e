import API
import Domain
import Foundation
import HTTPCore
import XCTest

/// The routes and error codes agree with `openapi.yaml`, the contract clients are generated from.
final class ContractTests: XCTestCase {
    static let openAPIURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("openapi.yaml")

    /// (METHOD, /path/:param) for every operation in the document, from its indentation-structured YAML.
    static func documentedOperations() throws -> Set<String> {
        let text = try String(contentsOf: openAPIURL, encoding: .utf8)
        var operations: Set<String> = []
        var currentPath: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                currentPath = String(line.dropFirst(2).dropLast())
                    .replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: "")
            } else if !line.hasPrefix(" "), !line.isEmpty {
                currentPath = nil
            } else if let path = currentPath {
                for method in ["get", "post", "put", "patch", "delete"] where line == "    \(method):" {
                    operations.insert(method.uppercased() + " " + path)
                }
            }
        }
        return operations
    }

    func testEveryDocumentedAPIOperationIsRegisteredAndNothingElse() throws {
        let h = Harness()
        let registered = Set(h.router.registeredRoutes.map { $0.method.rawValue + " " + $0.pattern })
        let documented = try Self.documentedOperations().filter {
            !$0.hasSuffix("/healthz") && !$0.hasSuffix("/readyz") && !$0.hasSuffix("/metrics")  // served by the executable
        }
        XCTAssertEqual(documented.count, 13)
        XCTAssertEqual(registered, documented)
    }

    func testEveryErrorCodeTheAPIProducesIsInTheDocumentedEnum() throws {
        let text = try String(contentsOf: Self.openAPIURL, encoding: .utf8)
        let produced = [
            "VALIDATION_ERROR", "INVALID_JSON", "INVALID_JWS_FORMAT", "JWS_UNSUPPORTED_ALGORITHM",
            "JWS_VERIFICATION_FAILED", "BUNDLE_ID_MISMATCH", "ENVIRONMENT_NOT_ALLOWED", "APP_APPLE_ID_MISMATCH",
            "AUTH_INVALID_PUBLIC_KEY", "AUTH_INVALID_SECRET_KEY", "AUTH_SECRET_KEY_REQUIRED",
            "AUTH_INVALID_ADMIN_TOKEN", "ADMIN_API_DISABLED", "PURCHASE_OWNED_BY_ANOTHER_USER", "PROJECT_NOT_FOUND",
            "PRODUCT_NOT_FOUND", "CONFLICT", "SERVICE_UNAVAILABLE", "INTERNAL_ERROR",
        ]
        for code in produced {
            XCTAssertTrue(text.contains("            - \(code)\n"), "\(code) missing from the Error.code enum")
        }
    }
}
