import Foundation
import Synchronization

/// Runs `body(i)` on `count` real threads released together (not `concurrentPerform`, which caps parallelism at the
/// core count), and returns each result in index order.
public func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T?] {
    let results = Mutex<[T?]>(Array(repeating: nil, count: count))
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread {
            start.wait()
            let value = body(i)
            results.withLock { $0[i] = value }
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return results.withLock { $0 }
}
