public import Domain
import Foundation
import JSON

/// The Finish Transaction worker: the worker over `transaction_finishes` that reports each claimed row finished
/// through `TransactionFinisher`, records the outcome and logs one line per call (never a key or a token).
public typealias TransactionFinisherService = LeasedQueueWorker<TransactionFinish>

extension LeasedQueueWorker where Item == TransactionFinish {
    /// A worker over `queue`, named `transaction-finisher`, looking every `pollInterval` while nothing is due; a
    /// claim's lease is `leaseSeconds` (above the Apple call budget, so no call outlives its lease). `start` starts
    /// its thread.
    public convenience init(queue: any TransactionFinishQueue, finisher: TransactionFinisher,
                            pollInterval: Duration = .seconds(1), leaseSeconds: Int,
                            log: @escaping @Sendable (String) -> Void) {
        self.init(name: "transaction-finisher", threadName: "bouncer-finish", event: "finish_transaction",
                  pollInterval: pollInterval,
                  claim: { try queue.claimDue(now: Date(), leaseSeconds: leaseSeconds, limit: $0) },
                  handle: { item in
                      let outcome = finisher.finish(item, now: Date(), random: Double.random(in: 0..<1))
                      var fields: JSONObject = [
                          "event": "finish_transaction",
                          "project_id": .string(item.projectId.lowercasedText),
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
                          if try !queue.complete(item, outcome: outcome, now: Date()) {
                              fields["superseded"] = .bool(true)
                          }
                      } catch {
                          fields["error"] = .string("recording the outcome failed: \(error)")
                      }
                      log(JSONValue.object(fields).serializedString())
                  },
                  log: log)
    }
}
