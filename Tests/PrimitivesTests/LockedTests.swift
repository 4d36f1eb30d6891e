import Dispatch
import Primitives
import XCTest

final class LockedTests: XCTestCase {
    func testConcurrentIncrementsAreNeverLost() {
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        XCTAssertEqual(counter.withLock { $0 }, 80_000)
    }

    func testReturnsAndRethrows() {
        struct Failure: Error, Equatable {}
        let list = Locked([1, 2])
        XCTAssertEqual(list.withLock { value -> Int in value.append(3); return value.count }, 3)
        XCTAssertThrowsError(try list.withLock { value -> Void in value.append(4); throw Failure() }) {
            XCTAssertEqual($0 as? Failure, Failure())
        }
        // A throwing body keeps what it wrote and releases the lock (the next call would deadlock otherwise).
        XCTAssertEqual(list.withLock { $0 }, [1, 2, 3, 4])
    }
}
