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

/// The refund defense responder: one thread per `bouncer serve` that claims due CONSUMPTION_REQUESTs (the queue's
/// lease and `SKIP LOCKED` keep instances apart), answers each through `ConsumptionResponder`, records the outcome
/// and logs one line per answer (never a key or a token).
public final class ConsumptionResponderService: Service {
    private let job: Job

    /// Rows claimed per look (each answered in turn before the next look).
    public static let batch = 16

    /// A responder over `queue`; `start` starts its thread.
    public init(queue: any ConsumptionQueue, responder: ConsumptionResponder, settings: ConsumptionSettingsOfServe,
                log: @escaping @Sendable (String) -> Void) {
        job = Job(name: "bouncer-consumption", interval: settings.pollInterval) { _ in
            Self.pass(queue: queue, responder: responder, settings: settings, log: log) ? .again : .wait
        }
    }

    /// `consumption-responder`.
    public var name: String { "consumption-responder" }

    /// Starts the thread.
    public func start() { job.start() }

    /// Stops claiming; waits for an answer in flight, without a bound of its own (the Apple call budget bounds it):
    /// `grace` is not used.
    public func stop(grace: Duration) { job.stop(grace: nil) }

    /// Whether the thread runs.
    public var isRunning: Bool { job.isRunning }

    /// One look at the queue; whether it answered anything.
    private static func pass(queue: any ConsumptionQueue, responder: ConsumptionResponder,
                             settings: ConsumptionSettingsOfServe, log: @Sendable (String) -> Void) -> Bool {
        let claimed: [ConsumptionRequest]
        do {
            claimed = try queue.claimDue(now: Date(), leaseSeconds: settings.leaseSeconds, limit: Self.batch)
        } catch {
            log(Self.line(["event": "consumption", "error": .string("claim failed: \(error)")]))
            return false
        }
        for request in claimed {
            let outcome = responder.answer(request, now: Date(), random: Double.random(in: 0..<1))
            do {
                let written = try queue.complete(request, outcome: outcome, now: Date())
                log(Self.describe(request, outcome, written: written))
            } catch {
                // The lease lapses and the row is answered again: Apple takes a repeated answer.
                log(Self.line(["event": "consumption", "notification_uuid": .string(request.notificationUUID.uuidString.lowercased()),
                               "error": .string("recording the outcome failed: \(error)")]))
            }
        }
        return !claimed.isEmpty
    }

    /// The log line of one answer: project, notification, environment, attempt, status and why.
    public static func describe(_ request: ConsumptionRequest, _ outcome: ConsumptionOutcome, written: Bool) -> String {
        var fields: JSONObject = [
            "event": "consumption",
            "project_id": .string(request.projectId.uuidString.lowercased()),
            "notification_uuid": .string(request.notificationUUID.uuidString.lowercased()),
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
