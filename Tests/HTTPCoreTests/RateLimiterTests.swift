import Synchronization
import XCTest
@testable import HTTPCore

/// A clock the test moves by hand (monotonic nanoseconds).
final class FakeClock: Sendable {
    private let nanos = Atomic<UInt64>(1_000_000_000)
    var now: UInt64 { nanos.load(ordering: .relaxed) }
    func advance(milliseconds: UInt64) { nanos.wrappingAdd(milliseconds * 1_000_000, ordering: .relaxed) }
}

final class RateLimiterTests: XCTestCase {
    func testBurstThenExactly429WithRetryAfter() {
        let clock = FakeClock()
        let limiter = RateLimiter(clock: { clock.now })
        let limit = RateLimit(rate: 2, burst: 3)
        let first = (0..<3).map { _ in limiter.acquire("k", limit: limit) }
        XCTAssertEqual(first.map(\.allowed), [true, true, true])
        XCTAssertEqual(first.map(\.remaining), [2, 1, 0])
        XCTAssertEqual(first.map(\.limit), [3, 3, 3])
        XCTAssertEqual(first.map(\.retryAfterSeconds), [0, 0, 0])
        XCTAssertEqual(first.map(\.resetSeconds), [1, 1, 2], "0.5 s, 1 s, 1.5 s until full, rounded up")
        let denied = limiter.acquire("k", limit: limit)
        XCTAssertEqual(denied, RateLimitDecision(allowed: false, limit: 3, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1))
    }

    func testRefillAtTheConfiguredRate() {
        let clock = FakeClock()
        let limiter = RateLimiter(clock: { clock.now })
        let limit = RateLimit(rate: 2, burst: 3)
        for _ in 0..<3 { XCTAssertTrue(limiter.acquire("k", limit: limit).allowed) }
        XCTAssertFalse(limiter.acquire("k", limit: limit).allowed)
        clock.advance(milliseconds: 499)
        XCTAssertFalse(limiter.acquire("k", limit: limit).allowed, "0.998 tokens is not a token")
        clock.advance(milliseconds: 1)
        XCTAssertTrue(limiter.acquire("k", limit: limit).allowed, "one token after 500 ms at 2/s")
        XCTAssertFalse(limiter.acquire("k", limit: limit).allowed)
        clock.advance(milliseconds: 60_000)
        let afterIdle = (0..<4).map { _ in limiter.acquire("k", limit: limit).allowed }
        XCTAssertEqual(afterIdle, [true, true, true, false], "refill stops at the burst")
    }

    func testSustainedRateOverTenSecondsIsExact() {
        let clock = FakeClock()
        let limiter = RateLimiter(clock: { clock.now })
        let limit = RateLimit(rate: 5, burst: 5)
        var allowed = 0
        // 100 attempts per second over 9.99 s: the burst of 5 plus 5/s × 9.99 s refill = 54.95 tokens.
        for _ in 0..<1000 {
            if limiter.acquire("k", limit: limit).allowed { allowed += 1 }
            clock.advance(milliseconds: 10)
        }
        XCTAssertEqual(allowed, 54)
    }

    func testRetryAfterForSlowRatesRoundsUp() {
        let clock = FakeClock()
        let limiter = RateLimiter(clock: { clock.now })
        let limit = RateLimit(rate: 0.1, burst: 1)  // one request per 10 s
        XCTAssertTrue(limiter.acquire("k", limit: limit).allowed)
        XCTAssertEqual(limiter.acquire("k", limit: limit).retryAfterSeconds, 10)
        clock.advance(milliseconds: 2_500)
        let d = limiter.acquire("k", limit: limit)
        XCTAssertFalse(d.allowed)
        XCTAssertEqual(d.retryAfterSeconds, 8, "7.5 s rounded up")
    }

    func testKeysAreIndependent() {
        let clock = FakeClock()
        let limiter = RateLimiter(clock: { clock.now })
        let limit = RateLimit(rate: 1, burst: 1)
        XCTAssertTrue(limiter.acquire("a", limit: limit).allowed)
        XCTAssertFalse(limiter.acquire("a", limit: limit).allowed)
        XCTAssertTrue(limiter.acquire("b", limit: limit).allowed)
    }

    func testMemoryIsBoundedAndIdleBucketsGoFirst() {
        let clock = FakeClock()
        let limiter = RateLimiter(maxKeys: 160, clock: { clock.now })  // 10 per shard
        let limit = RateLimit(rate: 1, burst: 2)
        for i in 0..<10_000 { _ = limiter.acquire("key-\(i)", limit: limit) }
        XCTAssertLessThanOrEqual(limiter.keyCount, 160)
        XCTAssertGreaterThan(limiter.keyCount, 80)
        // After every bucket has refilled, new keys evict the idle ones without losing anything.
        clock.advance(milliseconds: 5_000)
        for i in 0..<1000 { _ = limiter.acquire("fresh-\(i)", limit: limit) }
        XCTAssertLessThanOrEqual(limiter.keyCount, 160)
    }

    func testZeroRateMeansUnlimited() {
        let limiter = RateLimiter()
        for _ in 0..<100 { XCTAssertTrue(limiter.acquire("k", limit: RateLimit(rate: 0, burst: 1)).allowed) }
        XCTAssertEqual(RateLimit(rate: 1, burst: 0).burst, 1, "burst is at least 1")
    }
}
