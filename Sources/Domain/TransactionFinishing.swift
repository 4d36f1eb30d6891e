public import Foundation

/// One queued Finish Transaction (schema/0047), as a worker claimed it.
public struct TransactionFinish: Sendable, Equatable {
    /// The project.
    public var projectId: UUID
    /// Production or Sandbox.
    public var environment: StoreEnvironment
    /// The consumable's or non-consumable's transaction.
    public var transactionId: String
    /// Attempts so far, this claim included.
    public var attempts: Int
    /// The claim's lease token (its outcome is recorded only while the token holds the row).
    public var leaseToken: UUID

    /// Creates a value.
    public init(projectId: UUID, environment: StoreEnvironment, transactionId: String, attempts: Int, leaseToken: UUID) {
        self.projectId = projectId
        self.environment = environment
        self.transactionId = transactionId
        self.attempts = attempts
        self.leaseToken = leaseToken
    }
}

/// What became of one claimed Finish Transaction.
public enum TransactionFinishOutcome: Sendable, Equatable {
    /// Apple took it: `finished_at` is set.
    case finished
    /// Try again at `at` (Apple busy or down, a 429's `Retry-After`, credentials missing for now).
    case retry(at: Date, reason: String)
    /// Final: Apple refused it (its code kept), the attempts ran out, or the project no longer finishes.
    case failed(reason: String, appleErrorCode: Int?)

    /// `finished`, `pending` (a retry) or `failed`: the queue row's status.
    public var status: String {
        switch self {
        case .finished: return "finished"
        case .retry: return "pending"
        case .failed: return "failed"
        }
    }
}

/// The Finish Transaction queue: claims with a lease (`FOR UPDATE SKIP LOCKED`, so workers never share a row) and
/// outcomes.
public protocol TransactionFinishQueue: Sendable {
    /// Claims up to `limit` pending rows due at `now` whose lease lapsed: one more attempt each, a new lease token.
    func claimDue(now: Date, leaseSeconds: Int, limit: Int) throws -> [TransactionFinish]
    /// Records `outcome` while the claim's token still holds the row (false: another worker took it over).
    func complete(_ item: TransactionFinish, outcome: TransactionFinishOutcome, now: Date) throws -> Bool
}

/// Reports claimed transactions finished to Apple: reads the project at call time (the setting turned off since
/// the row was queued: nothing is sent), signs with its credentials, and turns Apple's answer into an outcome.
/// Never throws.
public struct TransactionFinisher: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let appStore: (any AppleServerAPI)?
    private let retryBase: TimeInterval
    private let retryMaximum: TimeInterval
    private let maxAttempts: Int

    /// A finisher; retries wait `retryBase` doubling up to `retryMaximum`, jittered; after `maxAttempts` a row fails.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, appStore: (any AppleServerAPI)?,
                retryBase: TimeInterval, retryMaximum: TimeInterval = 3600, maxAttempts: Int = 20) {
        self.projects = projects
        self.credentials = credentials
        self.appStore = appStore
        self.retryBase = retryBase
        self.retryMaximum = retryMaximum
        self.maxAttempts = max(1, maxAttempts)
    }

    /// The outcome of finishing `item` at `now`; `random` (0..<1) jitters a retry.
    public func finish(_ item: TransactionFinish, now: Date, random: Double) -> TransactionFinishOutcome {
        func retry(_ reason: String, retryAfter: Int? = nil) -> TransactionFinishOutcome {
            guard item.attempts < maxAttempts else {
                return .failed(reason: "gave up after \(item.attempts) attempts; last error: \(reason)", appleErrorCode: nil)
            }
            let delay = ConsumptionRules.retryDelay(attempt: item.attempts, base: retryBase, maximum: retryMaximum,
                                                    random: random, retryAfter: retryAfter.map(TimeInterval.init))
            return .retry(at: now.addingTimeInterval(delay), reason: reason)
        }
        let project: Project
        do {
            guard let found = try projects.project(id: item.projectId) else {
                return .failed(reason: "the project no longer exists", appleErrorCode: nil)
            }
            project = found
        } catch {
            return retry("the project could not be read: \(error)")
        }
        guard project.finishTransactions else {
            return .failed(reason: "finish_transactions was turned off before it was sent", appleErrorCode: nil)
        }
        guard let appStore else { return retry("the App Store Server API client is not configured") }
        let signing: AppStoreAPICredentials
        do {
            signing = try credentials.appStoreAPICredentials(for: project)
        } catch let error as DomainError {
            return retry("\(error.code): \(error.message)")
        } catch {
            return retry("credentials: \(error)")
        }
        let answer = Result { () throws(AppStoreAPIError) in
            try appStore.finishTransaction(transactionId: item.transactionId, environment: item.environment,
                                           credentials: signing)
        }
        switch answer {
        case .success:
            return .finished
        case .failure(let error):
            switch error.kind {
            case .unavailable, .invalidResponse:
                // A 429's Retry-After is Apple's word; a 5xx or a timeout backs off on our schedule.
                return retry(error.description, retryAfter: error.httpStatus == 429 ? error.retryAfterSeconds : nil)
            case .unauthorized:
                // The key is the operator's to fix: keep trying.
                return retry(error.description)
            case .notFound, .rejected, .invalidRequest:
                return .failed(reason: error.description, appleErrorCode: error.appleErrorCode)
            }
        }
    }
}
