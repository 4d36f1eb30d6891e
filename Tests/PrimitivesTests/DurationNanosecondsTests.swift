import Primitives
import XCTest

/// `Duration.nanoseconds` / `nonNegativeNanoseconds`: truncation toward zero and saturation at both ends.
final class DurationNanosecondsTests: XCTestCase {
    func testWholeNanoseconds() {
        XCTAssertEqual(Duration.seconds(2).nanoseconds, 2_000_000_000)
        XCTAssertEqual(Duration.milliseconds(250).nanoseconds, 250_000_000)
        XCTAssertEqual(Duration.nanoseconds(7).nanoseconds, 7)
        XCTAssertEqual(Duration.nanoseconds(-7).nanoseconds, -7)
        XCTAssertEqual(Duration.zero.nanoseconds, 0)
    }

    func testSaturatesInsteadOfOverflowing() {
        XCTAssertEqual(Duration.seconds(Int64.max).nanoseconds, Int64.max)
        XCTAssertEqual(Duration.seconds(Int64.min).nanoseconds, Int64.min)
        XCTAssertEqual(Duration.seconds(9_223_372_036).nanoseconds, 9_223_372_036_000_000_000)
        XCTAssertEqual((Duration.seconds(9_223_372_036) + .nanoseconds(999_999_999)).nanoseconds, Int64.max)
    }

    func testNonNegative() {
        XCTAssertEqual(Duration.seconds(-1).nonNegativeNanoseconds, 0)
        XCTAssertEqual(Duration.milliseconds(3).nonNegativeNanoseconds, 3_000_000)
        XCTAssertEqual(Duration.seconds(Int64.max).nonNegativeNanoseconds, UInt64(Int64.max))
    }
}
