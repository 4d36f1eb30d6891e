public import Foundation

/// A project's users as support sees them: manual grants, everything stored about a user, and erasure.
///
/// Throws `DomainError` (`.serviceUnavailable` when the store cannot be reached, `.projectNotFound` for a grant in
/// a project that does not exist).
public protocol CustomerStore: Sendable {
    /// Stores `grant` and its `entitlement.granted` webhook event in one database transaction.
    func createGrant(_ grant: Grant, projectId: UUID) throws -> Grant
    /// Marks the user's grant removed at `now` (and its `entitlement.revoked` event) in one database transaction;
    /// an already removed grant is returned unchanged; nil when the user has no such grant.
    func revokeGrant(projectId: UUID, userId: String, grantId: UUID, now: Date) throws -> Grant?
    /// Everything stored about the user, read in one consistent snapshot.
    func facts(projectId: UUID, userId: String) throws -> CustomerFacts
    /// Erases the user (see README "Export and erase"): in one database transaction, afterwards no row holds the
    /// user id.
    func erase(projectId: UUID, userId: String, now: Date) throws -> ErasureSummary
    /// The recorded transaction `transactionId` of the project and the users currently bound to its purchase (at
    /// most `TransactionHolders.maxUserIds`), in one indexed read; nil when the project recorded no such
    /// transaction. An id recorded in several environments answers the first of Production, Sandbox, Xcode,
    /// LocalTesting.
    func transactionHolders(projectId: UUID, transactionId: String) throws -> TransactionHolders?
    /// The users currently bound to each of the project's purchases `originalTransactionIds` in `environment` (at
    /// most `TransactionHolders.maxUserIds` each, sorted), in one indexed read; a purchase nobody holds is absent.
    func purchaseHolders(projectId: UUID, environment: StoreEnvironment, originalTransactionIds: [String]) throws
        -> [String: [String]]
}

/// A recorded transaction and who holds its purchase: support's search by transaction id.
public struct TransactionHolders: Sendable, Equatable {
    /// The most user ids an answer lists (a shared purchase may have many holders).
    public static let maxUserIds = 1_000

    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var environment: StoreEnvironment
    /// How the transaction reached Bouncer (`receipt`, `transaction`, `lookup`, `notification`, `reconcile`).
    public var source: String
    /// The users currently bound to the purchase (not moved away by a transfer), sorted.
    public var userIds: [String]

    public init(transactionId: String, originalTransactionId: String, productId: String, environment: StoreEnvironment,
                source: String, userIds: [String]) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.environment = environment
        self.source = source
        self.userIds = userIds
    }
}

/// The support use cases, shared by the admin API and the `bouncer user` CLI.
public struct CustomerSupport: Sendable {
    /// Where users' data lives.
    public var store: any CustomerStore
    /// Projects (existence, and the app-purchase setting the timeline needs).
    public var projects: any ProjectStore
    /// The clock.
    public var now: @Sendable () -> Date
    /// Makes grant ids.
    public var makeId: @Sendable () -> UUID

    /// Creates the use cases.
    public init(store: any CustomerStore, projects: any ProjectStore, now: @escaping @Sendable () -> Date,
                makeId: @escaping @Sendable () -> UUID = { UUID() }) {
        self.store = store
        self.projects = projects
        self.now = now
        self.makeId = makeId
    }

    /// Gives `new.entitlement` to `new.userId`; `.invalidInput` names each broken rule.
    public func grant(projectId: UUID, _ new: NewGrant) throws -> Grant {
        let at = now()
        let problems = GrantRules.problems(in: new, at: at)
        guard problems.isEmpty else {
            throw DomainError(.invalidInput, "The grant breaks a rule.", details: problems)
        }
        _ = try project(projectId)
        let grant = Grant(id: makeId(), userId: new.userId, entitlement: new.entitlement, expiresAt: new.expiresAt,
                          reason: new.reason, createdAt: at)
        return try store.createGrant(grant, projectId: projectId)
    }

    /// Removes a grant (kept, marked removed); `.grantNotFound` when the user has no such grant.
    public func revokeGrant(projectId: UUID, userId: String, grantId: UUID) throws -> Grant {
        try checkUser(userId)
        _ = try project(projectId)
        guard let grant = try store.revokeGrant(projectId: projectId, userId: userId, grantId: grantId, now: now()) else {
            throw DomainError(.grantNotFound, "The user has no grant with that id.")
        }
        return grant
    }

    /// The user's timeline and the explanation of each entitlement, at this instant.
    public func timeline(projectId: UUID, userId: String) throws -> CustomerTimeline {
        try checkUser(userId)
        let project = try project(projectId)
        let facts = try store.facts(projectId: projectId, userId: userId)
        return CustomerTimeline.build(facts, setting: project.appPurchaseEntitlements, sandbox: project.sandbox, at: now())
    }

    /// Everything stored about the user, with the timeline built from it.
    public func export(projectId: UUID, userId: String) throws -> (facts: CustomerFacts, timeline: CustomerTimeline) {
        try checkUser(userId)
        let project = try project(projectId)
        let facts = try store.facts(projectId: projectId, userId: userId)
        return (facts, CustomerTimeline.build(facts, setting: project.appPurchaseEntitlements, sandbox: project.sandbox, at: now()))
    }

    /// Erases the user (idempotent: erasing an unknown user changes nothing and reports zeros).
    public func erase(projectId: UUID, userId: String) throws -> ErasureSummary {
        try checkUser(userId)
        _ = try project(projectId)
        return try store.erase(projectId: projectId, userId: userId, now: now())
    }

    /// The recorded transaction `transactionId` and the users bound to its purchase: `.invalidInput` for an id that
    /// is not an App Store transaction id, `.projectNotFound`, `.transactionNotFound` when the project recorded none.
    public func holders(projectId: UUID, transactionId: String) throws -> TransactionHolders {
        let problems = TransactionLookup.problems(transactionId: transactionId, path: ["transactionId"])
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid transaction id.", details: problems) }
        _ = try project(projectId)
        guard let found = try store.transactionHolders(projectId: projectId, transactionId: transactionId) else {
            throw DomainError(.transactionNotFound, "No transaction with that id in the project.")
        }
        return found
    }

    private func checkUser(_ userId: String) throws {
        let problems = GrantRules.problems(userId: userId)
        guard problems.isEmpty else { throw DomainError(.invalidInput, "Invalid user id.", details: problems) }
    }

    private func project(_ id: UUID) throws -> Project {
        guard let project = try projects.project(id: id) else {
            throw DomainError(.projectNotFound, "No project with that id.")
        }
        return project
    }
}
