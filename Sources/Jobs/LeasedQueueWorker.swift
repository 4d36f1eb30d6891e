import Foundation
import JSON

/// The one shape of a worker over a leased queue (the refund defense responder, the Finish Transaction worker): a
/// thread that claims due rows (the queue's lease and `SKIP LOCKED` keep instances apart), handles each in turn, and
/// looks again at once when it claimed any, after the poll interval when none was due.
public final class LeasedQueueWorker<Item: Sendable>: Service {
    /// Rows claimed per look (each handled in turn before the next look).
    public static var batch: Int { 16 }

    /// The name in the lifecycle's log lines.
    public let name: String
    private let job: Job

    /// - Parameters:
    ///   - threadName: the thread's name (`ps -L`).
    ///   - event: the `event` of the log line when a claim fails.
    ///   - claim: claims up to `batch` due rows.
    ///   - handle: handles one claimed row: calls Apple, records the outcome, logs its line.
    public init(name: String, threadName: String, event: String, pollInterval: Duration,
                claim: @escaping @Sendable (_ limit: Int) throws -> [Item], handle: @escaping @Sendable (Item) -> Void,
                log: @escaping @Sendable (String) -> Void) {
        self.name = name
        job = Job(name: threadName, interval: pollInterval) { _ in
            let claimed: [Item]
            do {
                claimed = try claim(Self.batch)
            } catch {
                log(JSONValue.object(["event": .string(event), "error": .string("claim failed: \(error)")])
                    .serializedString())
                return .wait
            }
            for item in claimed { handle(item) }
            return claimed.isEmpty ? .wait : .again
        }
    }

    /// Starts the thread.
    public func start() { job.start() }

    /// Stops claiming; waits for the row in hand, without a bound of its own (the Apple call budget bounds it):
    /// `grace` is not used.
    public func stop(grace: Duration) { job.stop(grace: nil) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }
}
