import HTTPCore
import XCTest

@testable import Console

/// The console's embedded files: present, typed, and the ETag/304 rule, without a server.
final class ConsoleRoutesTests: XCTestCase {
    func testEveryFileIsEmbeddedWithItsType() throws {
        XCTAssertEqual(ConsoleRoutes.assetNames, ["charts.js", "console.css", "console.js", "favicon.svg", "index.html", "revenue.js"])
        for name in ConsoleRoutes.assetNames {
            let asset = try XCTUnwrap(ConsoleRoutes.assets[name])
            XCTAssertFalse(asset.body.isEmpty, name)
            XCTAssertTrue(asset.etag.hasPrefix("\"") && asset.etag.utf8.count == 18, asset.etag)
        }
        XCTAssertEqual(ConsoleRoutes.assets["console.js"]?.contentType, "text/javascript; charset=utf-8")
        XCTAssertEqual(ConsoleRoutes.assets["index.html"]?.contentType, "text/html; charset=utf-8")
    }

    func testIfNoneMatchAnswers304OnlyForTheCurrentETag() throws {
        let etag = try XCTUnwrap(ConsoleRoutes.assets["console.css"]?.etag)
        let fresh = try ConsoleRoutes.serve("console.css", Request(method: .get, path: "/admin/console.css"))
        XCTAssertEqual(fresh.status, 200)
        XCTAssertEqual(fresh.headers["X-Frame-Options"], "DENY")
        XCTAssertEqual(fresh.headers["Content-Security-Policy"], ConsoleRoutes.contentSecurityPolicy)
        XCTAssertTrue(ConsoleRoutes.contentSecurityPolicy.hasPrefix("default-src 'self';"))
        let cached = try ConsoleRoutes.serve("console.css", Request(
            method: .get, path: "/admin/console.css", headers: ["If-None-Match": "\"x\", \(etag)"]))
        XCTAssertEqual(cached.status, 304)
        XCTAssertEqual(cached.body, [])
        XCTAssertEqual(cached.headers["ETag"], etag)
        let stale = try ConsoleRoutes.serve("console.css", Request(
            method: .get, path: "/admin/console.css", headers: ["If-None-Match": "\"0000000000000000\""]))
        XCTAssertEqual(stale.status, 200)
    }

    func testUnknownFilesAre404() {
        XCTAssertThrowsError(try ConsoleRoutes.serve("../Package.swift", Request(method: .get, path: "/admin/x"))) { error in
            XCTAssertEqual((error as? HTTPError)?.status, 404)
            XCTAssertEqual((error as? HTTPError)?.code, "NOT_FOUND")
        }
    }

    func testFNV1aMatchesTheReferenceVectors() {
        XCTAssertEqual(ConsoleRoutes.fnv1a64Hex([]), "cbf29ce484222325")
        XCTAssertEqual(ConsoleRoutes.fnv1a64Hex(Array("a".utf8)), "af63dc4c8601ec8c")
    }
}
