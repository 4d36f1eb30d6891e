import XCTest
@testable import Domain

final class DomainPlaceholderTests: XCTestCase {
    func testModuleLinks() { XCTAssertEqual(1 + 1, 2) }
}
