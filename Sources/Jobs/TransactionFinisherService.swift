public import Domain
import Foundation
import JSON

/// The Finish Transaction worker: one thread per `bouncer serve` that claims due rows of `transaction_finishes`
/// (the lease and `SKIP LOCKED` keep instances apart), reports each finished through `TransactionFinisher`, records
/// the outcome and logs one line per call (never a key or a token).
public final class TransactionFinisherService: Service {
    private let job: Job

    /// Rows claimed per look (each sent in turn before the next look).
    public static let batch = 16

    /// A worker over `queue`, looking every `pollInterval` while nothing is due; a claim's lease is `leaseSeconds`
    /// (above the Apple call budget, so no call outlives its lease). `start` starts its thread.
    public init(queue: any TransactionFinishQueue, finisher: TransactionFinisher, pollInterval: Duration = .seconds(1),
                leaseSeconds: Int, log: @escaping @Sendable (String) -> Void) {
        job = Job(name: "bouncer-finish", interval: pollInterval) { _ in
            Self.pass(queue: queue, finisher: finisher, leaseSeconds: leaseSeconds, log: log) ? .again : .wait
        }
    }

    /// `transaction-finisher`.
    public var name: String { "transaction-finisher" }

    /// Starts the thread.
    public func start() { job.start() }

    /// Stops claiming; waits for a call in flight (the Apple call budget bounds it): `grace` is not used.
    public func stop(grace: Duration) { job.stop(grace: nil) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }

    /// One look at the queue; whether it sent anything.
    private static func pass(queue: any TransactionFinishQueue, finisher: TransactionFinisher, leaseSeconds: Int,
                             log: @Sendable (String) -> Void) -> Bool {
        let claimed: [TransactionFinish]
        do {
            claimed = try queue.claimDue(now: Date(), leaseSeconds: leaseSeconds, limit: Self.batch)
        } catch {
            log(Self.line(["event": "finish_transaction", "error": .string("claim failed: \(error)")]))
            return false
        }
        for item in claimed {
            let outcome = finisher.finish(item, now: Date(), random: Double.random(in: 0..<1))
            var fields: JSONObject = [
                "event": "finish_transaction",
                "project_id": .string(item.projectId.uuidString.lowercased()),
                "environment": .string(item.environment.rawValue),
                "transaction_id": .string(item.transactionId),
                "attempt": JSONValue(Int64(item.attempts)),
                "status": .string(outcome.status),
            ]
            switch outcome {
            case .finished: break
            case .retry(_, let reason), .failed(let reason, _): fields["reason"] = .string(reason)
            }
            do {
                // The lease lapses if this fails, and the row is sent again: Apple takes a repeated finish.
                if try !queue.complete(item, outcome: outcome, now: Date()) { fields["superseded"] = .bool(true) }
            } catch {
                fields["error"] = .string("recording the outcome failed: \(error)")
            }
            log(Self.line(fields))
        }
        return !claimed.isEmpty
    }

    private static func line(_ fields: JSONObject) -> String { JSONValue.object(fields).serializedString() }
}
