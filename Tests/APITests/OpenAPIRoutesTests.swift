import Foundation
import XCTest

/// The router and `openapi.yaml` name the same operations, in both directions: a route nobody documented is a
/// contract hole, and a documented operation nobody serves is a promise clients are generated from and then 404 on.
final class OpenAPIRoutesTests: XCTestCase {
    /// Documented operations the executable registers itself (`ServeCommand`, `MetricsRoute`), not `Routes`.
    /// The console's `/admin/…` files are outside the API (the document's description says so).
    static let servedByTheExecutable: Set<String> = ["GET /healthz", "GET /readyz", "GET /metrics"]

    func testEveryRouteIsDocumentedAndEveryDocumentedOperationIsRouted() throws {
        let text = try String(contentsOf: ContractTests.openAPIURL, encoding: .utf8)
        let documented = try Self.operations(inOpenAPI: text)
        XCTAssertGreaterThan(documented.count, 40, "the parser found the document's operations: \(documented.sorted())")
        let router = Harness().router
        let routed = Set(router.registeredRoutes.map { Self.operation($0.method.rawValue, $0.pattern) })
            .union(Self.servedByTheExecutable)
        let undocumented = routed.subtracting(documented).sorted()
        let unrouted = documented.subtracting(routed).sorted()
        XCTAssertTrue(undocumented.isEmpty && unrouted.isEmpty, """
            router and openapi.yaml disagree:
            routed but not in openapi.yaml (document them under paths:, in block style):
            \(undocumented.map { "  + " + $0 }.joined(separator: "\n"))
            in openapi.yaml but not routed (declare them in the resource's controller, Sources/API/, or drop them from the document):
            \(unrouted.map { "  - " + $0 }.joined(separator: "\n"))
            """)
    }

    func testTheParserReadsBlockStylePathsAndRejectsWhatItCannotRead() throws {
        let yaml = """
            openapi: 3.1.0
            paths:
              /v1/things/{id}:
                parameters:
                  - { name: id, in: path }
                get:
                  responses: {}
                delete:
                  summary: "post: not a method"
              /v1/other:
                post: {}
            components:
              schemas:
                X:
                  get:
            """
        XCTAssertEqual(try Self.operations(inOpenAPI: yaml), ["GET /v1/things/{id}", "DELETE /v1/things/{id}",
                                                              "POST /v1/other"])
        XCTAssertEqual(Self.operation("PUT", "/v1/a/:id/b/:productId"), "PUT /v1/a/{id}/b/{productId}")
        XCTAssertThrowsError(try Self.operations(inOpenAPI: "paths:\n  /v1/flow: { get: {} }\n"))
        XCTAssertThrowsError(try Self.operations(inOpenAPI: "openapi: 3.1.0\n"))
    }

    /// `METHOD /path/{param}` for a router pattern (`/path/:param`): the spelling of the document.
    static func operation(_ method: String, _ pattern: String) -> String {
        let path = pattern.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
        }.joined(separator: "/")
        return method.uppercased() + " " + path
    }

    struct UnreadablePaths: Error, CustomStringConvertible {
        var description: String
    }

    /// `METHOD /path/{param}` for every operation under `paths:`. Not a YAML parser: the paths are the keys
    /// indented by 2 under `paths:`, their methods the keys indented by 4. A path written any other way (a flow
    /// mapping) is an error rather than silently missing.
    static func operations(inOpenAPI text: String) throws -> Set<String> {
        let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
        var operations: Set<String> = []
        var inPaths = false
        var sawPaths = false
        var currentPath: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty || line.allSatisfy({ $0 == " " }) || line.drop(while: { $0 == " " }).hasPrefix("#") { continue }
            if !line.hasPrefix(" ") {
                inPaths = line == "paths:"
                sawPaths = sawPaths || inPaths
                currentPath = nil
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /") {
                guard line.hasSuffix(":") else {
                    throw UnreadablePaths(description: "write the path in block style: \(line)")
                }
                currentPath = String(line.dropFirst(2).dropLast())
            } else if let path = currentPath, line.hasPrefix("    "), !line.hasPrefix("     ") {
                let key = line.dropFirst(4).prefix { $0 != ":" }
                if methods.contains(String(key)) { operations.insert(key.uppercased() + " " + path) }
            }
        }
        guard sawPaths else { throw UnreadablePaths(description: "no top-level paths: key") }
        return operations
    }
}
