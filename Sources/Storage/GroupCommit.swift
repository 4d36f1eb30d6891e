import Dispatch
import Synchronization

/// Runs the work of concurrent callers together: one call of `run` (one database transaction, one durable
/// commit) for a batch of items, each caller answered with its own item's outcome once `run` has returned.
///
/// Natural batching, no timer: a caller that finds fewer than `maxConcurrentBatches` batches running leads a batch
/// of its own item at once, so a lone request waits for nothing. Callers that arrive while the batches are running
/// queue up; when a batch ends, its leader hands the queue's first `maxBatch` items to the first of their callers,
/// who leads them as the next batch (the caller's own thread runs it: no extra thread, no hand-off to a pool).
/// Items are handed to `run` in arrival order.
///
/// Callers block (our own worker threads, like every database call).
final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    /// One item's result.
    typealias Outcome = Result<Output, any Error>

    /// A queued caller. `outcome` is written before `semaphore` is signalled and read after the wait; `batch` is
    /// written under the state's lock before the signal.
    private final class Ticket: @unchecked Sendable {
        let item: Item
        let semaphore = DispatchSemaphore(value: 0)
        var outcome: Outcome?
        var batch: [Ticket] = []

        init(_ item: Item) { self.item = item }
    }

    private struct State: ~Copyable {
        var queue: [Ticket] = []
        var running = 0
        var counts = Counts()
    }

    /// What the batches did so far (monotonic counters; sampled by the metrics and the derived work's yield).
    struct Counts: Sendable, Equatable {
        /// Items submitted.
        var items = 0
        /// Items that found every batch slot taken and queued (the write path was saturated when they came).
        var waited = 0
        /// Batches run.
        var batches = 0
        /// Nanoseconds spent in `run`, summed over the batches that ended (monotonic clock): with `batches`, how long
        /// a batch takes to write, from its statement sent to its commit acknowledged.
        var writingNanoseconds: UInt64 = 0
    }

    /// Most items in one batch.
    let maxBatch: Int
    /// Most batches running at once (each on its own connection).
    let maxConcurrentBatches: Int
    private let run: @Sendable ([Item]) -> [Outcome]
    private let state = Mutex(State())

    /// `run` receives 1…`maxBatch` items and returns exactly one outcome per item, in order.
    init(maxBatch: Int, maxConcurrentBatches: Int, run: @escaping @Sendable ([Item]) -> [Outcome]) {
        self.maxBatch = max(1, maxBatch)
        self.maxConcurrentBatches = max(1, maxConcurrentBatches)
        self.run = run
    }

    /// Callers waiting for a batch now.
    var queued: Int { state.withLock { $0.queue.count } }

    /// The counters so far.
    var counts: Counts { state.withLock { $0.counts } }

    /// Runs `item` in a batch and returns its output (or throws its error) after that batch's `run` returned.
    func submit(_ item: Item) throws -> Output {
        let ticket = Ticket(item)
        let leads = state.withLock { s in
            s.counts.items &+= 1
            // The queue is empty whenever a batch slot is free: a finishing leader passes the queue on before
            // giving its slot back.
            if s.running < maxConcurrentBatches {
                s.running += 1
                s.counts.batches &+= 1
                return true
            }
            s.queue.append(ticket)
            s.counts.waited &+= 1
            return false
        }
        var batch = [ticket]
        if !leads {
            ticket.semaphore.wait()
            if let outcome = ticket.outcome { return try outcome.get() }
            // Woken without an outcome: this caller leads `ticket.batch` (which holds the ticket itself: emptied,
            // so the two do not keep each other alive).
            batch = ticket.batch
            ticket.batch = []
        }
        execute(batch)
        guard let outcome = ticket.outcome else { preconditionFailure("GroupCommit: a batch left its leader unanswered") }
        return try outcome.get()
    }

    /// Runs `batch` (led by its first ticket's caller), answers the others, and passes the queue on.
    private func execute(_ batch: [Ticket]) {
        let started = DispatchTime.now().uptimeNanoseconds
        let outcomes = run(batch.map(\.item))
        let writing = DispatchTime.now().uptimeNanoseconds &- started
        precondition(outcomes.count == batch.count, "GroupCommit: run returned \(outcomes.count) outcomes for \(batch.count)")
        for (ticket, outcome) in zip(batch, outcomes) { ticket.outcome = outcome }
        let next: Ticket? = state.withLock { s in
            s.counts.writingNanoseconds &+= writing
            guard !s.queue.isEmpty else {
                s.running -= 1
                return nil
            }
            let taken = Array(s.queue.prefix(maxBatch))
            s.queue.removeFirst(taken.count)
            s.counts.batches &+= 1
            taken[0].batch = taken
            return taken[0]
        }
        next?.semaphore.signal()
        for ticket in batch.dropFirst() { ticket.semaphore.signal() }
    }
}
