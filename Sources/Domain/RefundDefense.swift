public import Foundation

/// Whether Bouncer answers Apple's CONSUMPTION_REQUEST notifications.
public enum ConsumptionResponse: String, Sendable, CaseIterable {
    /// Never answered (the default): the request is recorded as `skipped_off`.
    case off
    /// Answered with Send Consumption Information, when the customer consented.
    case auto
}

/// Apple's `refundPreference`: what the developer would like Apple to decide.
public enum RefundPreference: String, Sendable, CaseIterable {
    /// Prefer that Apple declines the refund.
    case decline = "DECLINE"
    /// Prefer a full refund.
    case grantFull = "GRANT_FULL"
    /// Prefer a prorated refund.
    case grantProrated = "GRANT_PRORATED"
}

/// A project's refund defense settings.
public struct ConsumptionSettings: Sendable, Equatable {
    /// `off` (default) or `auto`.
    public var response: ConsumptionResponse
    /// The operator declares that the app collects the customer's consent to share consumption data. Apple refuses
    /// any `customerConsented` other than `true`, so while this is `false` nothing is sent (`skipped_no_consent`).
    public var customerConsented: Bool
    /// Sent as `sampleContentProvided`: the app offers a free sample or trial.
    public var sampleContentProvided: Bool
    /// Sent as `refundPreference`; `nil` sends none.
    public var refundPreference: RefundPreference?

    /// Creates settings; the defaults answer nothing.
    public init(response: ConsumptionResponse = .off, customerConsented: Bool = false,
                sampleContentProvided: Bool = false, refundPreference: RefundPreference? = nil) {
        self.response = response
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
    }

    /// A partial update; `nil` leaves a field as it is.
    public struct Changes: Sendable, Equatable {
        /// New `response`.
        public var response: ConsumptionResponse?
        /// New `customerConsented`.
        public var customerConsented: Bool?
        /// New `sampleContentProvided`.
        public var sampleContentProvided: Bool?
        /// New `refundPreference`: `.some(nil)` clears it.
        public var refundPreference: RefundPreference??

        /// No change.
        public init() {}

        /// `settings` with these changes.
        public func applied(to settings: ConsumptionSettings) -> ConsumptionSettings {
            var s = settings
            if let response { s.response = response }
            if let customerConsented { s.customerConsented = customerConsented }
            if let sampleContentProvided { s.sampleContentProvided = sampleContentProvided }
            if let refundPreference { s.refundPreference = refundPreference }
            return s
        }
    }
}

/// Where a CONSUMPTION_REQUEST's answer stands, as the notification log shows it.
public enum ConsumptionStatus: String, Sendable, CaseIterable {
    /// Queued or waiting for a retry.
    case pending
    /// Apple accepted the answer (`202`).
    case sent
    /// The project's `consumption_response` was `off` when the request was answered.
    case skippedOff = "skipped_off"
    /// `consumption_customer_consented` was `false`: Apple accepts only consented data, so nothing was sent.
    case skippedNoConsent = "skipped_no_consent"
    /// Apple refused the answer (a `4xx`); Apple's `errorCode` is kept. Final.
    case rejected
    /// Apple's 12-hour window passed before an answer got through. Final.
    case expired
    /// The request cannot be answered (it named no transaction, or the key does not load). Final.
    case failed
}

/// A CONSUMPTION_REQUEST's answer status, for the notification log.
public struct ConsumptionAnswer: Sendable, Equatable {
    /// Where it stands.
    public var status: ConsumptionStatus
    /// Attempts to answer so far (claims by a responder).
    public var attempts: Int
    /// Why the last attempt did not send (safe to show: our words and Apple's error code and message).
    public var lastError: String?
    /// When Apple accepted it.
    public var sentAt: Date?

    /// Creates a value.
    public init(status: ConsumptionStatus, attempts: Int, lastError: String? = nil, sentAt: Date? = nil) {
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.sentAt = sentAt
    }
}

/// One queued CONSUMPTION_REQUEST, claimed by a responder under a lease.
public struct ConsumptionRequest: Sendable, Equatable {
    /// The tenant.
    public var projectId: UUID
    /// Production or Sandbox: which Apple server answers.
    public var environment: StoreEnvironment
    /// The notification that asked.
    public var notificationUUID: UUID
    /// The transaction Apple asks about, from the notification's verified `signedTransactionInfo`.
    public var transactionId: String?
    /// Its purchase.
    public var originalTransactionId: String?
    /// When Apple asked (the notification's `signedDate`).
    public var requestedAt: Date
    /// `requestedAt` + 12 hours: Apple ignores answers after this.
    public var deadline: Date
    /// Attempts including this one.
    public var attempts: Int
    /// What the claim holds: only the holder of this token may complete the row.
    public var leaseToken: UUID
    /// The stored transaction's type (e.g. `Auto-Renewable Subscription`), when known.
    public var productType: String?
    /// The stored transaction's purchase date, when known.
    public var purchaseDate: Date?
    /// The stored transaction's expiry, when it has one.
    public var expiresDate: Date?

    /// Creates a value.
    public init(projectId: UUID, environment: StoreEnvironment, notificationUUID: UUID, transactionId: String?,
                originalTransactionId: String?, requestedAt: Date, deadline: Date, attempts: Int, leaseToken: UUID,
                productType: String? = nil, purchaseDate: Date? = nil, expiresDate: Date? = nil) {
        self.projectId = projectId
        self.environment = environment
        self.notificationUUID = notificationUUID
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.requestedAt = requestedAt
        self.deadline = deadline
        self.attempts = attempts
        self.leaseToken = leaseToken
        self.productType = productType
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
    }
}

/// What became of one attempt to answer.
public enum ConsumptionOutcome: Sendable, Equatable {
    /// Apple accepted this body.
    case sent(ConsumptionInformation)
    /// Not sent on purpose (`skipped_off`, `skipped_no_consent`), with the reason logged.
    case skipped(ConsumptionStatus, reason: String)
    /// Apple refused it (final).
    case rejected(reason: String, appleErrorCode: Int?)
    /// Apple's window passed (final).
    case expired(reason: String)
    /// Cannot be answered (final).
    case failed(reason: String)
    /// Try again at `at` (before the deadline).
    case retry(at: Date, reason: String)

    /// The status the row takes.
    public var status: ConsumptionStatus {
        switch self {
        case .sent: return .sent
        case .skipped(let status, _): return status
        case .rejected: return .rejected
        case .expired: return .expired
        case .failed: return .failed
        case .retry: return .pending
        }
    }
}

/// The durable queue of CONSUMPTION_REQUESTs (rows are written with the notification, in its transaction).
public protocol ConsumptionQueue: Sendable {
    /// Claims up to `limit` pending rows due at `now` whose lease (if any) has lapsed: each gets a new lease token,
    /// `lease_until = now + leaseSeconds` and one more attempt. Two responders never hold the same row at once.
    func claimDue(now: Date, leaseSeconds: Int, limit: Int) throws -> [ConsumptionRequest]
    /// Records `outcome` for a claimed row, if the claim's lease token still holds it (false: another responder
    /// took it over; nothing written).
    func complete(_ request: ConsumptionRequest, outcome: ConsumptionOutcome, now: Date) throws -> Bool
}

/// Refund defense rules: pure functions of the project's settings, the queued request and `now`.
public enum ConsumptionRules {
    /// Apple's window to answer a CONSUMPTION_REQUEST.
    public static let window: TimeInterval = 12 * 3600
    /// Apple's `consumptionPercentage` unit: 100000 is 100 %.
    public static let fullConsumption = 100_000
    /// The type Apple gives auto-renewable subscriptions.
    public static let autoRenewableType = "Auto-Renewable Subscription"

    /// What to do with a claimed request.
    public enum Decision: Sendable, Equatable {
        /// Send this body about this transaction.
        case send(transactionId: String, ConsumptionInformation)
        /// Record this outcome without calling Apple.
        case finish(ConsumptionOutcome)
    }

    /// The decision for `request` under `settings` at `now`, in this order: `off` skips, missing consent skips,
    /// a passed deadline expires, no transaction fails; otherwise the body to send.
    public static func decide(_ settings: ConsumptionSettings, _ request: ConsumptionRequest, now: Date) -> Decision {
        guard settings.response == .auto else {
            return .finish(.skipped(.skippedOff, reason: "consumption_response is off"))
        }
        guard settings.customerConsented else {
            return .finish(.skipped(.skippedNoConsent, reason: "consumption_customer_consented is false: Apple accepts "
                + "consumption information only with the customer's consent, so nothing was sent"))
        }
        guard now < request.deadline else {
            return .finish(.expired(reason: "Apple's 12-hour window to answer had passed"))
        }
        guard let transactionId = request.transactionId, !transactionId.isEmpty else {
            return .finish(.failed(reason: "the notification carried no signed transaction"))
        }
        return .send(transactionId: transactionId, information(settings, request))
    }

    /// The body: `deliveryStatus` is always `DELIVERED` (Bouncer has no evidence of a failed delivery: it only
    /// sees purchases Apple completed), `consumptionPercentage` per `consumptionPercentage(…)`, the rest from the
    /// settings. `customerConsented: true` is added by the client (the value carries none).
    public static func information(_ settings: ConsumptionSettings, _ request: ConsumptionRequest) -> ConsumptionInformation {
        ConsumptionInformation(
            deliveryStatus: "DELIVERED",
            consumptionPercentage: consumptionPercentage(
                productType: request.productType, purchaseDate: request.purchaseDate,
                expiresDate: request.expiresDate, at: request.requestedAt),
            sampleContentProvided: settings.sampleContentProvided,
            refundPreference: settings.refundPreference?.rawValue)
    }

    /// What Bouncer can know of consumption: for an auto-renewable subscription, the share of the transaction's
    /// period (purchase date to expiry) elapsed when Apple asked, in Apple's milli-units (0…100000, clamped).
    /// `nil` (omitted) for every other type — consumables, non-consumables, non-renewing subscriptions: how much of
    /// those the customer used happens inside the app — and when the dates are unknown or make no period.
    public static func consumptionPercentage(productType: String?, purchaseDate: Date?, expiresDate: Date?,
                                             at requestedAt: Date) -> Int? {
        guard productType == autoRenewableType, let start = purchaseDate, let end = expiresDate, end > start else {
            return nil
        }
        let share = requestedAt.timeIntervalSince(start) / end.timeIntervalSince(start)
        guard share.isFinite else { return nil }
        let clamped = min(max(share, 0), 1)
        return Int((clamped * Double(fullConsumption)).rounded())
    }

    /// The delay before attempt `attempt + 1` after a retryable failure: exponential from `base` (doubling per
    /// attempt, at most `maximum`), with jitter (`random` in 0..<1 picks between half and the whole delay), and
    /// never shorter than Apple's `Retry-After`.
    public static func retryDelay(attempt: Int, base: TimeInterval, maximum: TimeInterval, random: Double,
                                  retryAfter: TimeInterval? = nil) -> TimeInterval {
        let exponent = min(max(attempt - 1, 0), 20)
        let full = min(base * Double(1 << exponent), maximum)
        let jittered = full * (0.5 + 0.5 * min(max(random, 0), 1))
        return max(jittered, retryAfter ?? 0)
    }

    /// The outcome of a failed call to Apple: `4xx` answers are final (`rejected`, Apple's code kept); an unusable
    /// request `failed`; anything retryable is tried again after `delay` unless that passes the deadline (`expired`).
    public static func outcome(of error: AppStoreAPIError, _ request: ConsumptionRequest, now: Date,
                               delay: TimeInterval) -> ConsumptionOutcome {
        switch error.kind {
        case .notFound, .unauthorized, .rejected:
            return .rejected(reason: error.description, appleErrorCode: error.appleErrorCode)
        case .invalidRequest:
            return .failed(reason: error.description)
        case .unavailable, .invalidResponse:
            let next = now.addingTimeInterval(delay)
            guard next < request.deadline else {
                return .expired(reason: "Apple's 12-hour window passes before the next try; last error: \(error)")
            }
            return .retry(at: next, reason: error.description)
        }
    }
}

/// Answers claimed CONSUMPTION_REQUESTs: reads the project's settings at answer time, decides
/// (`ConsumptionRules`), and calls Send Consumption Information when the rules say so. Never throws: every
/// failure becomes an outcome the queue records.
public struct ConsumptionResponder: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let appStore: (any AppleServerAPI)?
    private let retryBase: TimeInterval
    private let retryMaximum: TimeInterval

    /// A responder; retries wait `retryBase` doubling up to `retryMaximum`, jittered.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, appStore: (any AppleServerAPI)?,
                retryBase: TimeInterval, retryMaximum: TimeInterval = 3600) {
        self.projects = projects
        self.credentials = credentials
        self.appStore = appStore
        self.retryBase = retryBase
        self.retryMaximum = retryMaximum
    }

    /// The outcome of answering `request` at `now`; `random` (0..<1) jitters a retry.
    public func answer(_ request: ConsumptionRequest, now: Date, random: Double) -> ConsumptionOutcome {
        let delay = ConsumptionRules.retryDelay(attempt: request.attempts, base: retryBase, maximum: retryMaximum,
                                                random: random)
        func retryOrExpire(_ reason: String) -> ConsumptionOutcome {
            let next = now.addingTimeInterval(delay)
            return next < request.deadline ? .retry(at: next, reason: reason)
                : .expired(reason: "Apple's 12-hour window passes before the next try; last error: \(reason)")
        }
        let project: Project
        do {
            guard let found = try projects.project(id: request.projectId) else {
                return .failed(reason: "the project no longer exists")
            }
            project = found
        } catch {
            return retryOrExpire("the project could not be read: \(error)")
        }
        let body: ConsumptionInformation
        let transactionId: String
        switch ConsumptionRules.decide(project.consumption, request, now: now) {
        case .finish(let outcome):
            return outcome
        case .send(let id, let information):
            transactionId = id
            body = information
        }
        guard let appStore else { return retryOrExpire("the App Store Server API client is not configured") }
        let signing: AppStoreAPICredentials
        do {
            signing = try credentials.appStoreAPICredentials(for: project)
        } catch let error as DomainError {
            // Missing or unopenable credentials are the operator's to fix: keep trying within the window.
            return retryOrExpire("\(error.code): \(error.message)")
        } catch {
            return retryOrExpire("credentials: \(error)")
        }
        let answer = Result { () throws(AppStoreAPIError) in
            try appStore.sendConsumptionInformation(transactionId: transactionId, body, environment: request.environment,
                                                    credentials: signing)
        }
        switch answer {
        case .success:
            return .sent(body)
        case .failure(let error):
            // Apple's own Retry-After (429) is honoured; the client's estimate for a 5xx or a timeout is not
            // (our backoff is already jittered and the 12-hour window is what matters).
            let wait = error.httpStatus == 429 ? max(delay, TimeInterval(error.retryAfterSeconds ?? 0)) : delay
            return ConsumptionRules.outcome(of: error, request, now: now, delay: wait)
        }
    }
}

extension CredentialAdministration {
    /// The project's opened credentials for signing Apple's JWT; none stored → `.appStoreCredentialsMissing`.
    public func appStoreAPICredentials(for project: Project) throws -> AppStoreAPICredentials {
        do {
            return AppStoreAPICredentials(credentials: try unsealedCredentials(projectId: project.id),
                                          bundleId: project.bundleId, projectId: project.id)
        } catch let error as DomainError where error.code == .appStoreCredentialsNotFound {
            throw DomainError(.appStoreCredentialsMissing, "The project has no App Store Server API credentials.",
                              underlying: error.message)
        }
    }
}
