import Domain
import Foundation
import Specification
import Synchronization

/// Not SHA-256, but deterministic, collision-free for the test keys, and never equal to its input.
struct FakeHasher: SecretKeyHashing {
    func hash(_ secret: String) -> [UInt8] { Array(("digest:" + secret).utf8.reversed()) }
}

/// Fails every call the way the database adapter does when PostgreSQL is unreachable, or with a bug-like error.
enum StoreFailure: Sendable {
    case none
    case unavailable
    case internalBug
    /// What `PostgresPurchaseStore` throws when signed data disagrees with a stored transaction's identity.
    case transactionConflict
}

struct SecretThatMustNotLeak: Error, CustomDebugStringConvertible {
    var debugDescription: String { "SQLSTATE 42P01 relation \"purchases\" does not exist at /srv/secret/path" }
}

func failIfNeeded(_ failure: StoreFailure) throws {
    switch failure {
    case .none: return
    case .unavailable:
        throw DomainError(.serviceUnavailable, "The database is unreachable.", underlying: "connection refused")
    case .internalBug: throw SecretThatMustNotLeak()
    case .transactionConflict:
        throw DomainError(
            .transactionConflict, "This transaction id is already recorded with a different identity; nothing was written.",
            underlying: "transaction conflict: project 00000000-0000-0000-0000-000000000001, environment Production, "
                + "transaction 2000, differing fields: product_id")
    }
}

/// An in-memory `ProjectStore` with deterministic ids (…0001, …0002) and the documented semantics.
final class FakeProjectStore: ProjectStore, Sendable {
    struct Stored: Sendable {
        var project: Project
        var keys: [StoredProjectKey]
        var products: [String: [String]] = [:]
    }

    struct State: Sendable {
        var projects: [Stored] = []
        var failure: StoreFailure = .none
        var nextId = 1
    }

    let state = Mutex(State())

    var failure: StoreFailure {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    static func uuid(_ n: Int) -> UUID {
        let suffix = String(n)
        return UUID(uuidString: "00000000-0000-0000-0000-" + String(repeating: "0", count: 12 - suffix.count) + suffix)
            ?? UUID()
    }

    /// Seeds a project directly (as the CLI would).
    @discardableResult
    func seed(_ project: Project, secretKey: String, products: [String: [String]] = [:]) -> Project {
        // Normalized as the real store does (sorted, unique).
        let normalized = products.mapValues { ProductMapping(productId: "", entitlements: $0).entitlements }
        let keys: [StoredProjectKey] = [
            .current(publicKey: project.publicKey, at: project.createdAt),
            .current(secretKey: secretKey, hash: FakeHasher().hash(secretKey), at: project.createdAt),
        ]
        state.withLock { $0.projects.append(Stored(project: project, keys: keys, products: normalized)) }
        return project
    }

    func project(publicKey: String, at now: Date) throws -> Project? {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.projects.first { stored in
                stored.keys.contains { $0.publicKey == publicKey && $0.isLive(at: now) }
            }?.project
        }
    }

    func project(id: UUID) throws -> Project? {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.projects.first { $0.project.id == id }?.project
        }
    }

    func allProjects() throws -> [Project] {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.projects.map(\.project)
        }
    }

    func createProject(_ new: NewProject, keys: [StoredProjectKey], now: Date) throws -> Project {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            let project = Project(
                id: Self.uuid(s.nextId), name: new.name, bundleId: new.bundleId, appAppleId: new.appAppleId,
                environments: new.environments, transferPolicy: new.transferPolicy, allowXcode: new.allowXcode,
                requireSecretKeyForReads: new.requireSecretKeyForReads,
                appAccountTokenPolicy: new.appAccountTokenPolicy,
                publicKey: keys.first { $0.kind == .public && $0.expiresAt == nil }?.publicKey ?? "",
                createdAt: now, updatedAt: now)
            s.nextId += 1
            s.projects.append(Stored(project: project, keys: keys))
            return project
        }
    }

    func updateProject(id: UUID, _ changes: ProjectChanges, now: Date) throws -> Project? {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            guard let i = s.projects.firstIndex(where: { $0.project.id == id }) else { return nil }
            var p = changes.applied(to: s.projects[i].project)
            p.updatedAt = now
            s.projects[i].project = p
            return p
        }
    }

    func deleteProject(id: UUID) throws -> Bool {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            let before = s.projects.count
            s.projects.removeAll { $0.project.id == id }
            return s.projects.count != before
        }
    }

    func rotateKeys(id: UUID, _ replacements: [KeyReplacement], now: Date) throws -> Project? {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            guard let i = s.projects.firstIndex(where: { $0.project.id == id }) else { return nil }
            let keys = KeyRotationRules.apply(replacements, to: s.projects[i].keys, now: now)
            s.projects[i].keys = keys
            if let current = keys.first(where: { $0.kind == .public && $0.expiresAt == nil })?.publicKey {
                s.projects[i].project.publicKey = current
            }
            s.projects[i].project.updatedAt = now
            return s.projects[i].project
        }
    }

    func keys(projectId: UUID) throws -> [StoredProjectKey] {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return (s.projects.first { $0.project.id == projectId }?.keys ?? []).sorted { $0.createdAt > $1.createdAt }
        }
    }

    func setProduct(projectId: UUID, _ mapping: ProductMapping, now: Date) throws -> ProductMapping {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            guard let i = s.projects.firstIndex(where: { $0.project.id == projectId }) else {
                throw DomainError(.projectNotFound, "No such project.")
            }
            s.projects[i].products[mapping.productId] = mapping.entitlements
            return mapping
        }
    }

    func products(projectId: UUID) throws -> [ProductMapping] {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            let products = s.projects.first { $0.project.id == projectId }?.products ?? [:]
            return products.keys.sorted().map { ProductMapping(productId: $0, entitlements: products[$0] ?? []) }
        }
    }

    func deleteProduct(projectId: UUID, productId: String) throws -> Bool {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            guard let i = s.projects.firstIndex(where: { $0.project.id == projectId }) else { return false }
            return s.projects[i].products.removeValue(forKey: productId) != nil
        }
    }

    func entitlements(projectId: UUID, productId: String) -> [String] {
        state.withLock { s in s.projects.first { $0.project.id == projectId }?.products[productId] ?? [] }
    }
}

/// An in-memory `PurchaseStore` applying `PurchaseState.applying` and `OwnershipRules` as the real one does.
final class FakePurchaseStore: PurchaseStore, Sendable {
    struct Key: Hashable, Sendable {
        var project: UUID
        var originalTransactionId: String
    }

    struct State: Sendable {
        var transactions: [String: TransactionFacts] = [:]
        var purchases: [Key: PurchaseState] = [:]
        var owners: [Key: [String]] = [:]
        var failure: StoreFailure = .none
    }

    let state = Mutex(State())
    let projects: FakeProjectStore

    init(projects: FakeProjectStore) { self.projects = projects }

    var failure: StoreFailure {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    var transactionCount: Int { state.withLock { $0.transactions.count } }

    func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction {
        let entitlements = projects.entitlements(projectId: project.id, productId: transaction.productId)
        return try state.withLock { s in
            try failIfNeeded(s.failure)
            let key = Key(project: project.id, originalTransactionId: transaction.originalTransactionId)
            var decision: OwnershipDecision?
            if let userId {
                let d = OwnershipRules.decide(currentOwners: s.owners[key] ?? [], user: userId,
                                              policy: project.transferPolicy)
                if case .block = d { throw DomainError(.purchaseOwnedByAnotherUser, "Owned by another user.") }
                decision = d
            }
            s.transactions[project.id.uuidString + "/" + transaction.transactionId] = transaction
            let purchase: PurchaseState
            if let known = s.purchases[key] {
                purchase = known.applying(transaction) ?? known
            } else {
                purchase = PurchaseState(first: transaction)
            }
            s.purchases[key] = purchase
            switch decision {
            case .bind?, .share?: s.owners[key, default: []].append(userId ?? "")
            case .transfer?: s.owners[key] = [userId ?? ""]
            default: break
            }
            return RecordedTransaction(transaction: transaction, purchase: purchase, entitlements: entitlements,
                                       ownership: decision)
        }
    }

    func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] {
        let snapshot = try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.owners.filter { $0.key.project == project.id && $0.value.contains(userId) }
                .compactMap { s.purchases[$0.key] }
        }
        return snapshot.map {
            OwnedPurchase(purchase: $0, entitlements: projects.entitlements(projectId: project.id, productId: $0.productId))
        }
    }

    /// Seeds a purchase state and its owner directly (for read-side tests with renewal info).
    func seed(_ purchase: PurchaseState, owner: String, project: Project) {
        state.withLock { s in
            let key = Key(project: project.id, originalTransactionId: purchase.originalTransactionId)
            s.purchases[key] = purchase
            s.owners[key, default: []].append(owner)
        }
    }
}

/// Maps test JWS strings to facts or failures; anything else fails verification like a forged signature.
final class FakeVerifier: SignedDataVerifying, Sendable {
    let table: Mutex<[String: Result<TransactionFacts, VerificationFailure>]> = Mutex([:])

    func register(_ jws: String, _ result: Result<TransactionFacts, VerificationFailure>) {
        table.withLock { $0[jws] = result }
    }

    func verifyTransaction(_ jws: String, for project: Project) throws -> TransactionFacts {
        guard let result = table.withLock({ $0[jws] }) else {
            throw VerificationFailure(code: .jwsVerificationFailed, reason: "signature does not verify")
        }
        let facts = try result.get()
        guard project.accepts(facts.environment) else {
            throw VerificationFailure(code: .environmentNotAllowed, reason: "Sandbox is not enabled for this project")
        }
        return facts
    }

    func verifyNotification(_ jws: String, for project: Project) throws -> NotificationFacts {
        throw VerificationFailure(code: .jwsVerificationFailed, reason: "not used by these tests")
    }

    func verifyAppTransaction(_ jws: String, for project: Project) throws -> AppTransactionFacts {
        throw VerificationFailure(code: .jwsVerificationFailed, reason: "not used by these tests")
    }

    /// StoreKit 1 receipts this fake accepts, by their base64 text.
    let receipts: Mutex<[String: ReceiptFacts]> = Mutex([:])

    func verifyReceipt(_ base64: String, for project: Project) throws -> ReceiptFacts {
        guard let facts = receipts.withLock({ $0[base64] }) else {
            throw VerificationFailure(code: .receiptVerificationFailed, reason: "the receipt's signature does not verify",
                                      step: "signature", field: "receipt_data")
        }
        return facts
    }
}

/// Collects log lines.
final class LogSink: Sendable {
    let lines = Mutex<[String]>([])
    func write(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
