import XCTest
@testable import AppStoreJWS

final class AppStoreJWSPlaceholderTests: XCTestCase {
    func testModuleLinks() { XCTAssertEqual(1 + 1, 2) }
}
