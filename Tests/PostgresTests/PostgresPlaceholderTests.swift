import XCTest
@testable import Postgres

final class PostgresPlaceholderTests: XCTestCase {
    func testModuleLinks() { XCTAssertEqual(1 + 1, 2) }
}
