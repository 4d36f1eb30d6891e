import XCTest
@testable import HTTPCore

final class HTTPCorePlaceholderTests: XCTestCase {
    func testModuleLinks() { XCTAssertEqual(1 + 1, 2) }
}
