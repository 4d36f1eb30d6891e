public import Foundation

/// What the operator helpers need stored: whether a notification arrived, where a purchase lives, and the record of
/// renewal-date extensions.
public protocol AppStoreActionStore: Sendable {
    /// When this Bouncer stored the notification `notificationUUID` of the project in `environment` (`nil`: one
    /// that named no environment), or `nil`.
    func notificationReceivedAt(projectId: UUID, environment: StoreEnvironment?, notificationUUID: UUID) throws -> Date?
    /// The environments in which the project has the purchase `originalTransactionId` (empty: unknown).
    func purchaseEnvironments(projectId: UUID, originalTransactionId: String) throws -> [StoreEnvironment]
    /// Records a renewal extension about to be asked (its result fields empty).
    func startRenewalExtension(_ record: RenewalExtensionRecord) throws
    /// Records its result (by project and request identifier).
    func completeRenewalExtension(_ record: RenewalExtensionRecord) throws
    /// Records that Apple was asked for a test notification in `environment` (its audit entry: nothing else is kept).
    func recordTestNotificationRequest(projectId: UUID, environment: StoreEnvironment) throws
    /// Records that Apple set `token` on the purchase (its audit entry, in a transaction of its own).
    func recordAppAccountTokenSet(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String,
                                  token: UUID) throws
    /// Records a mass renewal extension about to be asked.
    func startMassRenewalExtension(_ record: MassRenewalExtensionRecord) throws
    /// Records Apple's acceptance (audited) or the failure.
    func completeMassRenewalExtension(_ record: MassRenewalExtensionRecord) throws
    /// Records Apple's latest status.
    func updateMassRenewalExtensionStatus(_ record: MassRenewalExtensionRecord) throws
    /// The project's record of `requestIdentifier`, or nil.
    func massRenewalExtension(projectId: UUID, requestIdentifier: UUID) throws -> MassRenewalExtensionRecord?
}

/// One call of Extend a Subscription Renewal Date, as recorded.
public struct RenewalExtensionRecord: Sendable, Equatable {
    /// The tenant.
    public var projectId: UUID
    /// The fresh UUID Apple deduplicates by.
    public var requestIdentifier: UUID
    /// The purchase's environment (which Apple server was asked).
    public var environment: StoreEnvironment
    /// The purchase.
    public var originalTransactionId: String
    /// 1…90.
    public var extendByDays: Int
    /// 0…3.
    public var reasonCode: Int
    /// Whether Apple extended it (`nil`: no answer, or an error).
    public var success: Bool?
    /// The new renewal date.
    public var effectiveDate: Date?
    /// The period's web order line item id.
    public var webOrderLineItemId: String?
    /// Apple's `errorCode`, when Apple refused.
    public var appleErrorCode: Int?
    /// What went wrong (safe to show).
    public var error: String?
    /// When asked.
    public var createdAt: Date
    /// When the answer (or failure) was recorded.
    public var completedAt: Date?
}

/// What Get Test Notification Status says, checked against this Bouncer's notification log.
public struct TestNotificationReport: Sendable, Equatable {
    /// The token asked about.
    public var token: String
    /// The environment asked.
    public var environment: StoreEnvironment
    /// The test notification's id, from its verified signed payload.
    public var notificationUUID: UUID
    /// Apple's delivery attempts, in order.
    public var sendAttempts: [TestNotificationStatus.Attempt]
    /// When this Bouncer stored that notification (`nil`: Apple has not reached this Bouncer's webhook).
    public var receivedAt: Date?
}

/// The operator helpers (the setup check with a test notification, extending a subscription's renewal date),
/// shared by the admin API and any other front end.
///
/// Throws `DomainError` (`.projectNotFound`, `.invalidInput`, `.appStoreCredentialsMissing`, `.purchaseNotFound`,
/// `.testNotificationNotFound`, `.subscriptionExtensionIneligible`, `.subscriptionExtensionLimitReached`, the
/// stores'), `AppStoreAPIError` and `VerificationFailure` (Apple's signed test notification did not verify).
public struct AppStoreActions: Sendable {
    let projects: any ProjectStore
    let credentials: CredentialAdministration
    let appStore: (any AppleServerAPI)?
    let verifier: any SignedDataVerifying
    let store: any AppStoreActionStore
    let now: @Sendable () -> Date
    let newIdentifier: @Sendable () -> UUID

    /// The use cases.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, appStore: (any AppleServerAPI)?,
                verifier: any SignedDataVerifying, store: any AppStoreActionStore,
                now: @escaping @Sendable () -> Date, newIdentifier: @escaping @Sendable () -> UUID = { UUID() }) {
        self.projects = projects
        self.credentials = credentials
        self.appStore = appStore
        self.verifier = verifier
        self.store = store
        self.now = now
        self.newIdentifier = newIdentifier
    }

    /// Apple's extension limits: 1…90 days, reason 0…3.
    public static let extendDays = 1...90
    /// See `extendDays`.
    public static let reasonCodes = 0...3
    /// Apple's test tokens are a UUID, `_` and a timestamp; the bound keeps hostile input small.
    public static let maxTokenLength = 128

    /// Apple's error codes for a subscription that cannot be extended: 4030004 (ineligible: not active, a free
    /// trial, a billing retry…), 4030007 (Family Sharing).
    public static let ineligibleErrorCodes: Set<Int> = [4030004, 4030007]
    /// 4030005: the purchase was already extended twice this year (Apple's limit).
    public static let limitErrorCode = 4030005

    /// The environment of a test notification: the one asked (it must be Production or Sandbox and allowed by the
    /// project), else Production when the project allows it, else Sandbox.
    public static func testEnvironment(_ asked: StoreEnvironment?, project: Project) throws -> StoreEnvironment {
        if let asked {
            guard asked == .production || asked == .sandbox else {
                throw DomainError(.invalidInput, "Invalid environment.", details: [
                    FieldProblem(path: ["environment"], message: "Invalid enum value. Expected 'Production' | 'Sandbox'"),
                ])
            }
            guard project.environments.contains(asked) else {
                throw DomainError(.invalidInput, "The project does not accept that environment.", details: [
                    FieldProblem(path: ["environment"], message: "The project's environments do not include \(asked)"),
                ])
            }
            return asked
        }
        if project.environments.contains(.production) { return .production }
        if project.environments.contains(.sandbox) { return .sandbox }
        throw DomainError(.invalidInput, "The project accepts neither Production nor Sandbox.", details: [
            FieldProblem(path: ["environment"], message: "The project's environments include neither Production nor Sandbox"),
        ])
    }

    /// Request a Test Notification: Apple's token and the environment asked.
    public func requestTestNotification(projectId: UUID, environment asked: StoreEnvironment?) throws
        -> (token: String, environment: StoreEnvironment)
    {
        let project = try project(projectId)
        let environment = try Self.testEnvironment(asked, project: project)
        let signing = try credentials.appStoreAPICredentials(for: project)
        let token = try client().requestTestNotification(environment: environment, credentials: signing)
        try store.recordTestNotificationRequest(projectId: project.id, environment: environment)
        return (token, environment)
    }

    /// Get Test Notification Status, its signed payload verified like a posted notification, and whether this
    /// Bouncer stored that notification (Apple reached the webhook).
    public func testNotificationStatus(projectId: UUID, token: String, environment asked: StoreEnvironment?) throws
        -> TestNotificationReport
    {
        let project = try project(projectId)
        guard !token.isEmpty, token.utf8.count <= Self.maxTokenLength,
              token.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                  || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                  || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) })
        else {
            throw DomainError(.invalidInput, "Invalid test notification token.", details: [
                FieldProblem(path: ["token"], message: "Must be 1 to \(Self.maxTokenLength) letters, digits, '-', '_' or '.'"),
            ])
        }
        let environment = try Self.testEnvironment(asked, project: project)
        let signing = try credentials.appStoreAPICredentials(for: project)
        let client = try client()
        let answer = Result { () throws(AppStoreAPIError) -> TestNotificationStatus in
            try client.testNotificationStatus(token: token, environment: environment, credentials: signing)
        }
        let status: TestNotificationStatus
        switch answer {
        case .success(let value):
            status = value
        case .failure(let error) where error.kind == .notFound:
            throw DomainError(.testNotificationNotFound, "Apple does not know this test notification token.",
                              underlying: error.description)
        case .failure(let error):
            throw error
        }
        let facts = try verifier.verifyNotification(status.signedPayload, for: project)
        let receivedAt = try store.notificationReceivedAt(projectId: project.id, environment: facts.environment,
                                                          notificationUUID: facts.notificationUUID)
        return TestNotificationReport(token: token, environment: environment, notificationUUID: facts.notificationUUID,
                                      sendAttempts: status.sendAttempts, receivedAt: receivedAt)
    }

    /// The rules of an extension request, as field problems (empty: fine).
    public static func problems(extendByDays: Int?, reasonCode: Int?) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if let days = extendByDays, !extendDays.contains(days) {
            out.append(FieldProblem(path: ["extend_by_days"], message: days < extendDays.lowerBound
                ? "Number must be greater than or equal to 1" : "Number must be less than or equal to 90"))
        }
        if let reason = reasonCode, !reasonCodes.contains(reason) {
            out.append(FieldProblem(path: ["reason_code"], message: reason < reasonCodes.lowerBound
                ? "Number must be greater than or equal to 0" : "Number must be less than or equal to 3"))
        }
        return out
    }

    /// Extend a Subscription Renewal Date for a purchase this project knows, in its environment (Production first
    /// when known in both), with a fresh request identifier. The call and its result are recorded whatever Apple
    /// answers; Apple's refusals for an ineligible purchase or the yearly limit become their own errors.
    public func extendRenewal(projectId: UUID, originalTransactionId: String, extendByDays: Int, reasonCode: Int)
        throws -> RenewalExtensionRecord
    {
        let problems = Self.problems(extendByDays: extendByDays, reasonCode: reasonCode)
            + TransactionLookup.problems(transactionId: originalTransactionId, path: ["originalTransactionId"])
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid extension.", details: problems) }
        let project = try project(projectId)
        let known = try store.purchaseEnvironments(projectId: project.id, originalTransactionId: originalTransactionId)
        guard let environment = [StoreEnvironment.production, .sandbox].first(where: { known.contains($0) }) else {
            throw DomainError(.purchaseNotFound,
                              "No Production or Sandbox purchase \(originalTransactionId) in this project.")
        }
        let signing = try credentials.appStoreAPICredentials(for: project)
        let client = try client()
        var record = RenewalExtensionRecord(
            projectId: project.id, requestIdentifier: newIdentifier(), environment: environment,
            originalTransactionId: originalTransactionId, extendByDays: extendByDays, reasonCode: reasonCode,
            createdAt: now())
        try store.startRenewalExtension(record)
        let request = RenewalExtensionRequest(extendByDays: extendByDays, reasonCode: reasonCode,
                                              requestIdentifier: record.requestIdentifier)
        let answer = Result { () throws(AppStoreAPIError) -> RenewalExtensionResult in
            try client.extendRenewalDate(originalTransactionId: originalTransactionId, request,
                                         environment: environment, credentials: signing)
        }
        switch answer {
        case .success(let result):
            record.success = result.success
            record.effectiveDate = result.effectiveDate
            record.webOrderLineItemId = result.webOrderLineItemId
            record.completedAt = now()
            try store.completeRenewalExtension(record)
            return record
        case .failure(let error):
            record.success = false
            record.appleErrorCode = error.appleErrorCode
            record.error = error.description
            record.completedAt = now()
            try store.completeRenewalExtension(record)
            if let code = error.appleErrorCode, Self.ineligibleErrorCodes.contains(code) {
                throw DomainError(.subscriptionExtensionIneligible,
                                  "Apple says this subscription cannot be extended.", underlying: error.description)
            }
            if error.appleErrorCode == Self.limitErrorCode {
                throw DomainError(.subscriptionExtensionLimitReached,
                                  "This subscription was already extended the most times Apple allows in a year.",
                                  underlying: error.description)
            }
            throw error
        }
    }

    func project(_ id: UUID) throws -> Project {
        let project = try projects.existingProject(id: id)
        return project
    }

    func client() throws -> any AppleServerAPI {
        guard let appStore else {
            throw AppStoreAPIError(.unavailable, reason: "the App Store Server API client is not configured",
                                   retryAfterSeconds: 60)
        }
        return appStore
    }
}
