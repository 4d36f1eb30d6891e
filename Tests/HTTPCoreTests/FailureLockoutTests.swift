import XCTest
@testable import HTTPCore

final class FailureLockoutTests: XCTestCase {
    func fail(_ lockout: FailureLockout, _ key: String, times: Int) -> [Int?] {
        (0..<times).map { _ in lockout.recordFailure(key) }
    }

    func testTenFailuresLockForAMinuteThenEachLockoutDoubles() {
        let clock = FakeClock()
        let lockout = FailureLockout(clock: { clock.now })
        XCTAssertEqual(fail(lockout, "a", times: 9), Array(repeating: nil, count: 9))
        XCTAssertNil(lockout.check("a"), "nine failures are allowed")
        XCTAssertEqual(lockout.recordFailure("a"), 60, "the tenth locks for a minute")
        XCTAssertEqual(lockout.check("a"), 60)
        XCTAssertNil(lockout.check("b"), "per key")
        clock.advance(milliseconds: 59_500)
        XCTAssertEqual(lockout.check("a"), 1, "rounded up, at least 1")
        clock.advance(milliseconds: 500)
        XCTAssertNil(lockout.check("a"), "the lockout is over")
        XCTAssertEqual(fail(lockout, "a", times: 10).last, 120, "the next lockout doubles")
        clock.advance(milliseconds: 120_000)
        XCTAssertEqual(fail(lockout, "a", times: 10).last, 240)
        var current = 240
        for next in [480, 960, 1920, 3600, 3600] {
            clock.advance(milliseconds: UInt64(current) * 1000)
            XCTAssertEqual(fail(lockout, "a", times: 10).last, next)
            current = next
        }
        XCTAssertEqual(lockout.check("a"), 3600, "capped at an hour")
    }

    func testFailuresOutsideTheWindowAndASuccessAreForgotten() {
        let clock = FakeClock()
        let lockout = FailureLockout(clock: { clock.now })
        _ = fail(lockout, "a", times: 9)
        clock.advance(milliseconds: 60_000)
        XCTAssertEqual(fail(lockout, "a", times: 9), Array(repeating: nil, count: 9), "a new window")
        lockout.recordSuccess("a")
        XCTAssertEqual(lockout.keyCount, 0)
        XCTAssertEqual(fail(lockout, "a", times: 10).last, 60, "a success also forgets the doubling")
        lockout.recordSuccess("a")
        XCTAssertEqual(fail(lockout, "a", times: 10).last, 60)
        // Quiet for the longest lockout: the doubling starts over.
        clock.advance(milliseconds: 60_000 + 3_600_000)
        XCTAssertEqual(fail(lockout, "a", times: 10).last, 60)
    }

    func testMemoryIsBoundedAndLockedKeysSurviveEviction() {
        let clock = FakeClock()
        let lockout = FailureLockout(maxKeys: 8, clock: { clock.now })
        _ = fail(lockout, "locked", times: 10)
        clock.advance(milliseconds: 61_000)
        _ = fail(lockout, "locked", times: 10)
        for n in 0..<100 {
            lockout.recordFailure("k\(n)")
            clock.advance(milliseconds: 1_000)
        }
        XCTAssertLessThanOrEqual(lockout.keyCount, 8)
        XCTAssertNotNil(lockout.check("locked"), "a locked key is kept over idle ones")
    }
}
