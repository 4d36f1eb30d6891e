@testable import API
import Domain
import Foundation
import HTTPCore
import Synchronization
import XCTest

/// `LookupBudget` without sockets: the order of the buckets, the 429, and the "not found" memory's bounds in entries
/// and time, on an injected clock.
final class LookupBudgetTests: XCTestCase {
    private final class FakeClock: Sendable {
        let nanos = Mutex<UInt64>(1_000)
        func advance(seconds: UInt64) { nanos.withLock { $0 += seconds * 1_000_000_000 } }
        var read: @Sendable () -> UInt64 { { self.nanos.withLock { $0 } } }
    }

    private let project = UUID()

    private func budget(_ settings: LookupBudget.Settings, _ clock: FakeClock) -> LookupBudget {
        LookupBudget(settings: settings, clock: clock.read)
    }

    private func assert429(_ body: () throws -> Void, retryAfter: String, perClient: Bool, line: UInt = #line) {
        XCTAssertThrowsError(try body(), line: line) { error in
            guard let error = error as? HTTPError else { return XCTFail("\(error)", line: line) }
            XCTAssertEqual(error.status, 429, line: line)
            XCTAssertEqual(error.code, "APPLE_LOOKUP_RATE_LIMITED", line: line)
            XCTAssertEqual(error.headers["Retry-After"], retryAfter, line: line)
            XCTAssertTrue(error.message.hasSuffix(perClient ? "from your address." : "for this project."), line: line)
        }
    }

    func testTheClientBucketIsSpentBeforeTheProjectsAndRefills() throws {
        let clock = FakeClock()
        let budget = budget(.init(perProject: RateLimit(rate: 1, burst: 3), perClient: RateLimit(rate: 0.5, burst: 2)), clock)
        let a = budget.forClient("192.0.2.1"), b = budget.forClient("192.0.2.2")
        try a.spend(projectId: project)
        try a.spend(projectId: project)
        assert429({ try a.spend(projectId: project) }, retryAfter: "2", perClient: true)   // 1 token at 0.5/s
        try b.spend(projectId: project)                                                      // the project's third
        assert429({ try b.spend(projectId: project) }, retryAfter: "1", perClient: false)
        try budget.forClient("192.0.2.3").spend(projectId: UUID())                            // another project
        clock.advance(seconds: 2)
        try a.spend(projectId: project)
    }

    func testNilLimitsAreUnlimited() throws {
        let budget = budget(.init(perProject: nil, perClient: nil), FakeClock())
        for _ in 0..<1000 { try budget.forClient("192.0.2.1").spend(projectId: project) }
    }

    func testNotFoundIsKeyedByProjectEnvironmentAndIdAndExpires() {
        let clock = FakeClock()
        let budget = budget(.init(notFoundTTL: .seconds(120)), clock)
        let view = budget.forClient("192.0.2.1")
        view.rememberMissing(projectId: project, environment: .production, transactionId: "1")
        XCTAssertTrue(view.isKnownMissing(projectId: project, environment: .production, transactionId: "1"))
        // Any client sees it; another environment, project or id does not.
        XCTAssertTrue(budget.forClient("192.0.2.9").isKnownMissing(projectId: project, environment: .production, transactionId: "1"))
        XCTAssertFalse(view.isKnownMissing(projectId: project, environment: .sandbox, transactionId: "1"))
        XCTAssertFalse(view.isKnownMissing(projectId: UUID(), environment: .production, transactionId: "1"))
        XCTAssertFalse(view.isKnownMissing(projectId: project, environment: .production, transactionId: "11"))
        clock.advance(seconds: 119)
        XCTAssertTrue(view.isKnownMissing(projectId: project, environment: .production, transactionId: "1"))
        clock.advance(seconds: 1)
        XCTAssertFalse(view.isKnownMissing(projectId: project, environment: .production, transactionId: "1"))
        XCTAssertEqual(budget.rememberedCount, 0)
    }

    func testTheMemoryIsBoundedOldestFirst() {
        let clock = FakeClock()
        let budget = budget(.init(notFoundTTL: .seconds(120), maxRemembered: 3), clock)
        let view = budget.forClient("192.0.2.1")
        for id in 1...5 {
            view.rememberMissing(projectId: project, environment: .production, transactionId: String(id))
            clock.advance(seconds: 1)
        }
        XCTAssertEqual(budget.rememberedCount, 3)
        XCTAssertEqual((1...5).map { view.isKnownMissing(projectId: project, environment: .production, transactionId: String($0)) },
                       [false, false, true, true, true])
    }

    func testExpiredEntriesAreDroppedOnTheNextInsert() {
        var memory = NotFoundMemory(capacity: 100)
        for id in 0..<50 { memory.insert(String(id), expiry: 10, now: 0) }
        memory.insert("late", expiry: 30, now: 20)
        XCTAssertEqual(memory.count(now: 0), 1)
        XCTAssertTrue(memory.contains("late", now: 29))
        XCTAssertFalse(memory.contains("late", now: 30))
    }

    func testAZeroTTLRemembersNothing() {
        let budget = budget(.init(notFoundTTL: .zero), FakeClock())
        let view = budget.forClient("192.0.2.1")
        view.rememberMissing(projectId: project, environment: .production, transactionId: "1")
        XCTAssertFalse(view.isKnownMissing(projectId: project, environment: .production, transactionId: "1"))
    }
}
