import Foundation
import JSON
import TestSupport
import XCTest

/// BouncerClient ships inside apps: it must build with Foundation alone, without libpq, OpenSSL or any server module.
final class DependencyGraphTests: XCTestCase {
    /// SwiftPM's own view of the package (`swift package describe`, in a scratch directory of its own so it never
    /// waits on the build's lock): the library product is the one target, and that target depends on nothing.
    func testTheLibraryTargetDependsOnNothing() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("client-describe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let run = try ProcessRun.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["swift", "package", "--package-path", TestPaths.repoRoot.path, "--scratch-path", scratch.path,
             "describe", "--type", "json"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let json = try JSONParser.parse(Array(run.stdout))
        let products = json["products"]?.arrayValue ?? []
        let product = try XCTUnwrap(products.first { $0["name"] == "BouncerClient" }, "no BouncerClient product")
        XCTAssertEqual(product["targets"], ["BouncerClient"])
        XCTAssertEqual(product["type"]?["library"], ["automatic"])
        let targets = json["targets"]?.arrayValue ?? []
        let target = try XCTUnwrap(targets.first { $0["name"] == "BouncerClient" }, "no BouncerClient target")
        XCTAssertEqual(target["target_dependencies"] ?? [], [], "BouncerClient must not depend on other targets")
        XCTAssertEqual(target["product_dependencies"] ?? [], [], "BouncerClient must not depend on packages")
        XCTAssertEqual(json["dependencies"] ?? [], [], "the package has no Swift package dependencies")
    }

    /// The sources import Foundation (and FoundationNetworking on Linux) only.
    func testTheSourcesImportFoundationOnly() throws {
        let dir = TestPaths.repoRoot.appendingPathComponent("Sources/BouncerClient")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".swift") }
        XCTAssertFalse(files.isEmpty)
        var imports = Set<String>()
        for file in files {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                if let index = words.firstIndex(of: "import"), index + 1 < words.count,
                   words[..<index].allSatisfy({ ["@testable", "@_exported", "public", "internal", "private"].contains($0) }) {
                    imports.insert(String(words[index + 1]))
                }
            }
        }
        XCTAssertEqual(imports, ["Foundation", "FoundationNetworking"])
    }
}
