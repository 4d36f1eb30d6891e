public import Domain
import Foundation
import JSON

/// How `bouncer serve` answers CONSUMPTION_REQUESTs (`BOUNCER_CONSUMPTION_*`).
public struct ConsumptionSettingsOfServe: Sendable {
    /// Seconds between looks at the queue when it had nothing due. `BOUNCER_CONSUMPTION_POLL_SECONDS`, default 5.
    public var pollInterval: Duration = .seconds(5)
    /// Seconds a claimed row stays reserved for its responder; another instance takes it over after that (a crashed
    /// responder). Kept above the Apple call budget. `BOUNCER_CONSUMPTION_LEASE_SECONDS`, default 120.
    public var leaseSeconds = 120
    /// First retry delay after Apple failed; doubles per attempt up to an hour, jittered.
    /// `BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS`, default 60.
    public var retryBase: Duration = .seconds(60)

    /// The defaults.
    public init() {}
}

/// The refund defense responder: the worker over the CONSUMPTION_REQUEST queue that answers each claimed request
/// through `ConsumptionResponder`, records the outcome and logs one line per answer (never a key or a token).
public typealias ConsumptionResponderService = LeasedQueueWorker<ConsumptionRequest>

extension LeasedQueueWorker where Item == ConsumptionRequest {
    /// A responder over `queue`, named `consumption-responder`; `start` starts its thread.
    public convenience init(queue: any ConsumptionQueue, responder: ConsumptionResponder,
                            settings: ConsumptionSettingsOfServe, log: @escaping @Sendable (String) -> Void) {
        self.init(name: "consumption-responder", threadName: "bouncer-consumption", event: "consumption",
                  pollInterval: settings.pollInterval,
                  claim: { try queue.claimDue(now: Date(), leaseSeconds: settings.leaseSeconds, limit: $0) },
                  handle: { request in
                      let outcome = responder.answer(request, now: Date(), random: Double.random(in: 0..<1))
                      do {
                          let written = try queue.complete(request, outcome: outcome, now: Date())
                          log(Self.describe(request, outcome, written: written))
                      } catch {
                          // The lease lapses and the row is answered again: Apple takes a repeated answer.
                          log(Self.line([
                              "event": "consumption",
                              "notification_uuid": .string(request.notificationUUID.lowercasedText),
                              "error": .string("recording the outcome failed: \(error)"),
                          ]))
                      }
                  },
                  log: log)
    }

    /// The log line of one answer: project, notification, environment, attempt, status and why.
    public static func describe(_ request: ConsumptionRequest, _ outcome: ConsumptionOutcome, written: Bool) -> String {
        var fields: JSONObject = [
            "event": "consumption",
            "project_id": .string(request.projectId.lowercasedText),
            "notification_uuid": .string(request.notificationUUID.lowercasedText),
            "environment": .string(request.environment.rawValue),
            "attempt": JSONValue(Int64(request.attempts)),
            "status": .string(outcome.status.rawValue),
        ]
        switch outcome {
        case .sent: break
        case .skipped(_, let reason), .expired(let reason), .failed(let reason), .rejected(let reason, _):
            fields["reason"] = .string(reason)
        case .retry(let at, let reason):
            fields["reason"] = .string(reason)
            fields["next_attempt_in_seconds"] = JSONValue(Int64(max(0, at.timeIntervalSinceNow).rounded()))
        }
        if !written { fields["superseded"] = .bool(true) }
        return line(fields)
    }

    private static func line(_ fields: JSONObject) -> String { JSONValue.object(fields).serializedString() }
}
