import Foundation
import Synchronization

/// Keep-alive TLS clients sending requests in a loop, one background thread each, until `finish()`: for reloads
/// under load. Counts the answered requests and keeps every failure (a wrong answer, or an error, which ends that
/// client's loop).
public final class TLSClientLoad: Sendable {
    private let failureList = Mutex<[String]>([])
    private let servedCount = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let group = DispatchGroup()

    /// Starts a loop per client: `send(index, n, client)` sends request `n` (from 1) of client `index` and returns
    /// a failure description, or nil when the answer is the expected one.
    public init(_ clients: [TLSTestClient], send: @escaping @Sendable (Int, Int, TLSTestClient) throws -> String?) {
        for (index, client) in clients.enumerated() {
            // Each client is used by its own thread only, until `finish()` has waited for that thread.
            nonisolated(unsafe) let client = client
            DispatchQueue.global().async(group: group) { [self] in
                var n = 0
                while !stopped.load(ordering: .relaxed) {
                    n += 1
                    do {
                        if let failure = try send(index, n, client) { failureList.withLock { $0.append(failure) } }
                        servedCount.wrappingAdd(1, ordering: .relaxed)
                    } catch {
                        failureList.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
        }
    }

    /// Requests answered so far.
    public var served: Int { servedCount.load(ordering: .relaxed) }

    /// Failures so far.
    public var failures: [String] { failureList.withLock { $0 } }

    /// Waits until `total` requests were answered, or (with `unlessFailed`) until the first failure.
    public func wait(untilServed total: Int, unlessFailed: Bool = false) {
        while served < total && !(unlessFailed && !failures.isEmpty) { usleep(5_000) }
    }

    /// Stops every loop and waits for the threads; the failures.
    public func finish() -> [String] {
        stopped.store(true, ordering: .relaxed)
        group.wait()
        return failures
    }
}
