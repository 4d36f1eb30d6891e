public import Foundation

/// One call of Extend Subscription Renewal Dates for All Active Subscribers, as recorded (and its latest status).
public struct MassRenewalExtensionRecord: Sendable, Equatable {
    /// The tenant.
    public var projectId: UUID
    /// Ours, fresh per call; Apple deduplicates by it and reports under it.
    public var requestIdentifier: UUID
    /// Which Apple server was asked.
    public var environment: StoreEnvironment
    /// The auto-renewable subscription.
    public var productId: String
    /// 1…90.
    public var extendByDays: Int
    /// 0…3.
    public var reasonCode: Int
    /// ISO 3166-1 alpha-3 storefronts (nil: all).
    public var storefronts: [String]?
    /// Whether Apple accepted the request (nil: no answer yet, or an error).
    public var accepted: Bool?
    /// Apple's `errorCode`, when Apple refused.
    public var appleErrorCode: Int?
    /// What went wrong (safe to show).
    public var error: String?
    /// Apple's latest status: complete, when, and the counts.
    public var status = MassRenewalExtensionStatus.pending
    /// When asked.
    public var createdAt: Date
    /// When Apple's status was last read.
    public var checkedAt: Date?

    /// Creates a value (not yet answered).
    public init(projectId: UUID, requestIdentifier: UUID, environment: StoreEnvironment, productId: String,
                extendByDays: Int, reasonCode: Int, storefronts: [String]?, createdAt: Date) {
        self.projectId = projectId
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.productId = productId
        self.extendByDays = extendByDays
        self.reasonCode = reasonCode
        self.storefronts = storefronts
        self.createdAt = createdAt
    }
}

/// Extend the renewal date of every eligible active subscriber of a product (`POST
/// /v1/admin/projects/:id/products/:productId/extend`) and follow Apple's progress (`GET …/extend/:requestId`),
/// recorded like single extensions: written before Apple is asked, completed with Apple's answer (audited) or error,
/// refreshed by each status check. Apple then sends RENEWAL_EXTENDED per subscriber and RENEWAL_EXTENSION when done,
/// which the notification webhook applies like any other.
///
/// Throws `DomainError` (`.invalidInput`, `.projectNotFound`, `.productNotFound`, `.renewalExtensionNotFound`,
/// `.appStoreCredentialsMissing`, the stores') and `AppStoreAPIError`.
public struct MassRenewalExtensions: Sendable {
    private let actions: AppStoreActions

    /// The use case over the operator helpers' ports.
    public init(actions: AppStoreActions) { self.actions = actions }

    /// At most this many storefronts per request (there are about 175).
    public static let maxStorefronts = 250

    /// The rules of a request, as field problems (empty: fine).
    public static func problems(extendByDays: Int?, reasonCode: Int?, storefronts: [String]?) -> [FieldProblem] {
        var out = AppStoreActions.problems(extendByDays: extendByDays, reasonCode: reasonCode)
        if let storefronts {
            if storefronts.isEmpty || storefronts.count > maxStorefronts {
                out.append(FieldProblem(path: ["storefronts"], message: "Must list 1 to \(maxStorefronts) storefronts (omit it for all)"))
            }
            for (index, code) in storefronts.enumerated()
            where code.utf8.count != 3 || !code.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) {
                out.append(FieldProblem(path: ["storefronts", String(index)],
                                        message: "Must be an ISO 3166-1 alpha-3 storefront code (e.g. USA)"))
            }
        }
        return out
    }

    /// Asks Apple to extend every eligible subscriber of `productId`; the request is recorded whatever Apple answers.
    public func extend(projectId: UUID, productId: String, extendByDays: Int, reasonCode: Int, storefronts: [String]?,
                       environment asked: StoreEnvironment?) throws -> MassRenewalExtensionRecord {
        let problems = Self.problems(extendByDays: extendByDays, reasonCode: reasonCode, storefronts: storefronts)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid extension.", details: problems) }
        let project = try actions.project(projectId)
        guard try actions.projects.products(projectId: project.id).contains(where: { $0.productId == productId }) else {
            throw DomainError(.productNotFound, "No product \(productId) in project \(project.id.lowercasedText).")
        }
        let environment = try AppStoreActions.testEnvironment(asked, project: project)
        let signing = try actions.credentials.appStoreAPICredentials(for: project)
        let client = try actions.client()
        var record = MassRenewalExtensionRecord(
            projectId: project.id, requestIdentifier: actions.newIdentifier(), environment: environment,
            productId: productId, extendByDays: extendByDays, reasonCode: reasonCode, storefronts: storefronts,
            createdAt: actions.now())
        try actions.store.startMassRenewalExtension(record)
        let request = MassRenewalExtensionRequest(requestIdentifier: record.requestIdentifier, extendByDays: extendByDays,
                                                  reasonCode: reasonCode, productId: productId, storefronts: storefronts)
        let answer = Result { () throws(AppStoreAPIError) -> UUID in
            try client.extendRenewalDatesForAll(request, environment: environment, credentials: signing)
        }
        switch answer {
        case .success:
            record.accepted = true
            try actions.store.completeMassRenewalExtension(record)
            return record
        case .failure(let error):
            record.accepted = false
            record.appleErrorCode = error.appleErrorCode
            record.error = error.description
            try actions.store.completeMassRenewalExtension(record)
            throw error
        }
    }

    /// Apple's status of a request this project made, stored and returned.
    public func status(projectId: UUID, productId: String, requestIdentifier: UUID) throws -> MassRenewalExtensionRecord {
        let project = try actions.project(projectId)
        guard var record = try actions.store.massRenewalExtension(projectId: project.id, requestIdentifier: requestIdentifier),
              record.accepted == true, record.productId == productId
        else {
            throw DomainError(.renewalExtensionNotFound,
                              "No accepted renewal extension \(requestIdentifier.lowercasedText) in this project.")
        }
        if record.status.complete { return record }   // final: Apple's counts do not change
        let signing = try actions.credentials.appStoreAPICredentials(for: project)
        record.status = try actions.client().massRenewalExtensionStatus(
            productId: record.productId, requestIdentifier: requestIdentifier, environment: record.environment,
            credentials: signing)
        record.checkedAt = actions.now()
        try actions.store.updateMassRenewalExtensionStatus(record)
        return record
    }
}
