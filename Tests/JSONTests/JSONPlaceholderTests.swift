import XCTest
@testable import JSON

final class JSONPlaceholderTests: XCTestCase {
    func testModuleLinks() { XCTAssertEqual(1 + 1, 2) }
}
