@testable import API
import Foundation
import HTTPCore
import XCTest

/// The overview's query parsing and the console cookie reader, without a server.
final class OverviewQueryTests: XCTestCase {
    func testParseDayAcceptsOnlyRealCalendarDates() {
        for (text, expected) in [
            ("1970-01-01", Int64(0)), ("1970-01-02", 1), ("2000-03-01", 11_017), ("2024-02-29", 19_782),
            ("2026-11-24", 20_781),
        ] as [(String, Int64)] {
            XCTAssertEqual(MetricsController.parseDay(text), expected, text)
        }
        for text in ["2023-02-29", "2026-13-01", "2026-00-10", "2026-04-31", "1969-12-31", "2026-1-01", "2026/01/01",
                     "2026-01-01T00:00:00Z", "", "２０２６-01-01", "+026-01-01"] {
            XCTAssertNil(MetricsController.parseDay(text), text)
        }
    }

    func testDefaultsAndLimits() throws {
        let now = Date(timeIntervalSince1970: 20_781 * 86_400 + 3_600)  // 2026-11-24T01:00Z
        let (range, env) = try MetricsController.overviewQuery(Request(method: .get, path: "/"), now: now)
        XCTAssertEqual(env, .production, "test purchases stay out unless asked")
        XCTAssertEqual(range.days, 30)
        XCTAssertNil(try MetricsController.overviewQuery(
            Request(method: .get, path: "/", query: "environment=all"), now: now).1, "every environment")
        XCTAssertEqual(MetricsController.dayString(range.from), "2026-10-26")
        XCTAssertEqual(MetricsController.dayString(range.to), "2026-11-25")
        let max = try MetricsController.overviewQuery(
            Request(method: .get, path: "/", query: "from=2025-11-24&to=2026-11-24&interval=day&environment=Sandbox"), now: now)
        XCTAssertEqual(max.0.days, 366)
        XCTAssertEqual(max.1?.rawValue, "Sandbox")
        XCTAssertThrowsError(try MetricsController.overviewQuery(
            Request(method: .get, path: "/", query: "from=2025-11-23&to=2026-11-24"), now: now)) { error in
            XCTAssertEqual((error as? HTTPError)?.details.map(\.path), [["to"]])
        }
    }

    func testSessionCookieIsFoundAmongOthersAndMustHaveTheTokenShape() {
        let token = "cs_" + String(repeating: "ab", count: 32)
        func cookie(_ headers: [(String, String)]) -> String? {
            AdminAuth.sessionCookie(Request(method: .get, path: "/", headers: HTTPHeaders(headers)))
        }
        XCTAssertEqual(cookie([("Cookie", "a=1; bouncer_session=\(token); b=2")]), token)
        XCTAssertEqual(cookie([("Cookie", "a=1"), ("Cookie", "bouncer_session=\(token)")]), token)
        XCTAssertNil(cookie([("Cookie", "bouncer_session=cs_short")]))
        XCTAssertNil(cookie([("Cookie", "xbouncer_session=\(token)")]))
        XCTAssertNil(cookie([]))
    }
}
