import Dispatch
import Domain
import Foundation
import JSON
import Synchronization

/// How `bouncer serve` answers CONSUMPTION_REQUESTs (`BOUNCER_CONSUMPTION_*`).
struct ConsumptionSettingsOfServe: Sendable {
    /// Seconds between looks at the queue when it had nothing due. `BOUNCER_CONSUMPTION_POLL_SECONDS`, default 5.
    var pollInterval: Duration = .seconds(5)
    /// Seconds a claimed row stays reserved for its responder; another instance takes it over after that (a crashed
    /// responder). Kept above the Apple call budget. `BOUNCER_CONSUMPTION_LEASE_SECONDS`, default 120.
    var leaseSeconds = 120
    /// First retry delay after Apple failed; doubles per attempt up to an hour, jittered.
    /// `BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS`, default 60.
    var retryBase: Duration = .seconds(60)
}

extension ServeSettings {
    static let consumptionVariables: [Variable] = [
        Variable(name: "BOUNCER_CONSUMPTION_POLL_SECONDS",
                 help: "seconds between looks at the CONSUMPTION_REQUEST queue when idle (default 5)") { s, v in
            guard let x = Double(v), x.isFinite, x > 0, x <= 3600 else { return "must be a number of seconds in (0, 3600]" }
            s.consumption.pollInterval = .milliseconds(Int64((x * 1000).rounded(.up)))
            return nil
        },
        Variable(name: "BOUNCER_CONSUMPTION_LEASE_SECONDS",
                 help: "seconds a responder holds a claimed CONSUMPTION_REQUEST before another may take it (default 120)") {
            s, v in
            guard let n = Int(v), (1...3600).contains(n) else { return "must be an integer in 1...3600" }
            s.consumption.leaseSeconds = n
            return nil
        },
        Variable(name: "BOUNCER_CONSUMPTION_RETRY_BASE_SECONDS",
                 help: "first retry delay when Apple is unavailable, doubling up to 1 h, jittered (default 60)") { s, v in
            guard let x = Double(v), x.isFinite, x > 0, x <= 3600 else { return "must be a number of seconds in (0, 3600]" }
            s.consumption.retryBase = .milliseconds(Int64((x * 1000).rounded(.up)))
            return nil
        },
    ]
}

/// The refund defense responder: one thread per `bouncer serve` that claims due CONSUMPTION_REQUESTs (the queue's
/// lease and `SKIP LOCKED` keep instances apart), answers each through `ConsumptionResponder`, records the outcome
/// and logs one line per answer (never a key or a token).
final class ConsumptionResponderService: Sendable {
    private let queue: any ConsumptionQueue
    private let responder: ConsumptionResponder
    private let settings: ConsumptionSettingsOfServe
    private let log: @Sendable (String) -> Void
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Rows claimed per look (each answered in turn before the next look).
    static let batch = 16

    init(queue: any ConsumptionQueue, responder: ConsumptionResponder, settings: ConsumptionSettingsOfServe,
         log: @escaping @Sendable (String) -> Void) {
        self.queue = queue
        self.responder = responder
        self.settings = settings
        self.log = log
    }

    /// Starts the thread.
    func run() {
        let thread = Thread { [self] in
            defer { done.signal() }
            while !stopped.load(ordering: .acquiring) {
                let worked = pass()
                if worked { continue }
                _ = wake.wait(timeout: .now() + .milliseconds(Int(settings.pollInterval / .milliseconds(1))))
            }
        }
        thread.name = "bouncer-consumption"
        thread.start()
    }

    /// Stops claiming; waits for an answer in flight (bounded by the Apple call budget).
    func shutdown() {
        stopped.store(true, ordering: .releasing)
        wake.signal()
        done.wait()
    }

    /// One look at the queue; whether it answered anything.
    private func pass() -> Bool {
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

    static func describe(_ request: ConsumptionRequest, _ outcome: ConsumptionOutcome, written: Bool) -> String {
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
