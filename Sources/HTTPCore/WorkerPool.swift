import Foundation

/// Per-worker-thread state handed to each job (no sharing, so no lock per response).
struct WorkerContext {
    var date = DateCache()
}

/// A fixed set of threads draining a bounded FIFO of jobs; `trySubmit` refuses when it is full,
/// so overload becomes a 503 instead of unbounded memory.
final class WorkerPool: @unchecked Sendable {
    typealias Job = @Sendable (inout WorkerContext) -> Void

    // @unchecked: `jobs` and `stopping` are only touched while holding `condition`.
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var head = 0
    private var stopping = false
    private let capacity: Int
    private let finished = DispatchSemaphore(value: 0)
    private let threadCount: Int

    init(threads: Int, capacity: Int) {
        self.threadCount = max(1, threads)
        self.capacity = max(1, capacity)
        jobs.reserveCapacity(self.capacity)
    }

    func start() {
        for index in 0..<threadCount {
            let thread = Thread { [self] in
                run()
                finished.signal()
            }
            thread.name = "bouncer-worker-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Enqueues `job`; false when the queue is full or the pool is stopping.
    func trySubmit(_ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, jobs.count - head < capacity else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    private func run() {
        var context = WorkerContext()
        while true {
            condition.lock()
            while head == jobs.count && !stopping { condition.wait() }
            if head == jobs.count {
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1024, head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job(&context)
        }
    }

    /// Lets queued jobs finish, then stops the threads; waits until `deadline` (monotonic ns) at most.
    /// Returns false when a handler was still running at the deadline.
    @discardableResult
    func shutdown(deadline: UInt64) -> Bool {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        for _ in 0..<threadCount {
            let now = monotonicNanos()
            let remaining = deadline > now ? deadline - now : 0
            if finished.wait(timeout: .now() + .nanoseconds(Int(min(remaining, UInt64(Int.max))))) == .timedOut {
                return false
            }
        }
        return true
    }
}
