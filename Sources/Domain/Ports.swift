public import Foundation

/// Verifies signed App Store data for a project (implemented over `AppStoreJWS` by the executable).
public protocol SignedDataVerifying: Sendable {
    /// Verifies a signed transaction (JWS) against the project's bundle, app id and environments.
    /// - Throws: `VerificationFailure`.
    func verifyTransaction(_ jws: String, for project: Project) throws -> TransactionFacts
    /// Verifies a signed App Store Server Notification V2 and every signed value nested in it.
    /// - Throws: `VerificationFailure`.
    func verifyNotification(_ jws: String, for project: Project) throws -> NotificationFacts
    /// Verifies a signed app transaction (StoreKit `AppTransaction.jwsRepresentation`); its chain is judged at its
    /// `receiptCreationDate`. One without `appTransactionId` (it cannot be stored) fails like a malformed one.
    /// - Throws: `VerificationFailure`.
    func verifyAppTransaction(_ jws: String, for project: Project) throws -> AppTransactionFacts
    /// Verifies signed renewal info (JWS), e.g. from Get All Subscription Statuses, against the project's rules.
    /// - Throws: `VerificationFailure`.
    func verifyRenewalInfo(_ jws: String, for project: Project) throws -> RenewalFacts
    /// Verifies a StoreKit 1 app receipt (base64, as `SKReceipt` SDKs send it) locally: PKCS#7 signature, chain to
    /// Apple Inc. Root at the receipt's creation date, bundle id and environment; every in-app record becomes
    /// `TransactionFacts` by `ReceiptRules`.
    /// - Throws: `VerificationFailure` (`field` is `receipt_data`).
    func verifyReceipt(_ base64: String, for project: Project) throws -> ReceiptFacts
    /// Verifies a Retention Messaging real-time request's `signedPayload` like a notification (chain, `appAppleId`,
    /// environment); freshness and replays are the use case's (`RetentionMessaging`).
    /// - Throws: `VerificationFailure`.
    func verifyRetentionRequest(_ jws: String, for project: Project) throws -> RetentionRequest
}

extension SignedDataVerifying {
    /// Verifiers that cannot check real-time retention requests refuse them.
    public func verifyRetentionRequest(_ jws: String, for project: Project) throws -> RetentionRequest {
        throw VerificationFailure(code: .jwsVerificationFailed, reason: "this verifier cannot check retention requests",
                                  step: "format")
    }

    /// Verifiers that cannot check renewal info refuse it: nothing unverified is ever applied.
    public func verifyRenewalInfo(_ jws: String, for project: Project) throws -> RenewalFacts {
        throw VerificationFailure(code: .jwsVerificationFailed, reason: "this verifier cannot check renewal info",
                                  step: "format")
    }
}

/// The verified facts of one App Store Server Notification V2.
public struct NotificationFacts: Sendable, Equatable {
    /// Apple's id for the notification; redeliveries reuse it.
    public var notificationUUID: UUID
    /// `notificationType`, raw (unknown types are kept).
    public var type: String
    /// `subtype`, raw.
    public var subtype: String?
    /// When Apple signed the notification (absent in some early-2022 payloads).
    public var signedDate: Date?
    /// The environment the notification is about.
    public var environment: StoreEnvironment?
    /// The nested signed transaction, verified.
    public var transaction: TransactionFacts?
    /// The nested signed renewal info, verified.
    public var renewal: RenewalFacts?
    /// The nested signed app transaction (`appData.signedAppTransactionInfo`, e.g. RESCIND_CONSENT), verified.
    public var appTransaction: AppTransactionFacts?
    /// The verified outer payload exactly as signed (JSON text).
    public var payloadJSON: String

    /// Creates a value.
    public init(
        notificationUUID: UUID, type: String, subtype: String? = nil, signedDate: Date? = nil,
        environment: StoreEnvironment? = nil, transaction: TransactionFacts? = nil, renewal: RenewalFacts? = nil,
        appTransaction: AppTransactionFacts? = nil, payloadJSON: String
    ) {
        self.appTransaction = appTransaction
        self.notificationUUID = notificationUUID
        self.type = type
        self.subtype = subtype
        self.signedDate = signedDate
        self.environment = environment
        self.transaction = transaction
        self.renewal = renewal
        self.payloadJSON = payloadJSON
    }

    /// The purchase the notification is about, if any.
    public var originalTransactionId: String? {
        transaction?.originalTransactionId ?? renewal?.originalTransactionId
    }
}

/// Hashes secret keys for storage and comparison (SHA-256; keys carry ≥128 random bits, so no salt is needed).
public protocol SecretKeyHashing: Sendable {
    /// The digest of `secret`.
    func hash(_ secret: String) -> [UInt8]
}

/// Projects (tenants), their keys and their product→entitlement mappings.
///
/// Every method throws `DomainError` with `.serviceUnavailable` when the store cannot be reached.
public protocol ProjectStore: Sendable {
    /// The project that `publicKey` names, if that key is live at `now` (current, or retiring and not yet
    /// expired). The one entry point of public-key authentication: a single indexed lookup.
    func project(publicKey: String, at now: Date) throws -> Project?
    /// `project(publicKey:at:)`'s answer when a store holds it in memory (never blocks); nil when only the
    /// database can tell. The default: nil.
    func projectInMemory(publicKey: String, at now: Date) -> Project?
    /// The project with `id`.
    func project(id: UUID) throws -> Project?
    /// All projects, oldest first.
    func allProjects() throws -> [Project]
    /// Stores a new project with its first two keys (`StoredProjectKey.current`; the secret only as a hash).
    func createProject(_ new: NewProject, keys: [StoredProjectKey], now: Date) throws -> Project
    /// Applies `changes`; `nil` when there is no such project.
    func updateProject(id: UUID, _ changes: ProjectChanges, now: Date) throws -> Project?
    /// Deletes the project and all its data; false when there was none.
    func deleteProject(id: UUID) throws -> Bool
    /// Replaces keys by `KeyRotationRules.apply(replacements, to: current keys, now:)`, atomically with respect to
    /// other rotations of the project; `nil` when there is no such project.
    func rotateKeys(id: UUID, _ replacements: [KeyReplacement], now: Date) throws -> Project?
    /// The project's stored keys, live or not yet purged (callers filter with `isLive(at:)`), newest first.
    func keys(projectId: UUID) throws -> [StoredProjectKey]
    /// Creates or replaces a product mapping.
    func setProduct(projectId: UUID, _ mapping: ProductMapping, now: Date) throws -> ProductMapping
    /// The project's product mappings, sorted by product id.
    func products(projectId: UUID) throws -> [ProductMapping]
    /// Deletes a product mapping; false when there was none.
    func deleteProduct(projectId: UUID, productId: String) throws -> Bool
}

extension DomainError {
    /// `.projectNotFound` for `id`, in the use cases' one wording: "No project <id>.".
    public static func projectNotFound(_ id: UUID) -> DomainError {
        DomainError(.projectNotFound, "No project \(id.lowercasedText).")
    }
}

extension ProjectStore {
    /// The project with `id`, else `DomainError.projectNotFound(id)`.
    public func existingProject(id: UUID) throws -> Project {
        guard let project = try project(id: id) else { throw DomainError.projectNotFound(id) }
        return project
    }

    /// Nothing in memory: every lookup asks `project(publicKey:at:)`.
    public func projectInMemory(publicKey: String, at now: Date) -> Project? { nil }

    /// Stores a new project with a fresh public key and the hash of a fresh secret key (tests and fixtures).
    public func createProject(_ new: NewProject, publicKey: String, secretKeyHash: [UInt8], now: Date) throws
        -> Project
    {
        try createProject(new, keys: [
            .current(publicKey: publicKey, at: now),
            StoredProjectKey(kind: .secret, secretKeyHash: secretKeyHash, createdAt: now),
        ], now: now)
    }

    /// The hashes of the secret keys live at `now` (the current one and any retiring one).
    public func liveSecretKeyHashes(projectId: UUID, at now: Date) throws -> [[UInt8]] {
        try keys(projectId: projectId).compactMap { key in
            key.kind == .secret && key.isLive(at: now) ? key.secretKeyHash : nil
        }
    }
}

/// The outcome of recording a verified transaction.
public struct RecordedTransaction: Sendable, Equatable {
    /// The transaction as posted.
    public var transaction: TransactionFacts
    /// The purchase after applying it (unchanged if the transaction was older than what was known).
    public var purchase: PurchaseState
    /// What the posted transaction's product grants while active.
    public var entitlements: [String]
    /// What happened to ownership, when a user was given.
    public var ownership: OwnershipDecision?
    /// The transaction's own status facts as stored after the write: the posted ones unless facts signed later
    /// were already stored (a refund signed after a receipt was created outlives the receipt's record).
    public var stored: StoredTransactionFacts

    /// Creates a value; `stored` defaults to the posted facts (a store that keeps no older or newer version).
    public init(
        transaction: TransactionFacts, purchase: PurchaseState, entitlements: [String], ownership: OwnershipDecision?,
        stored: StoredTransactionFacts? = nil
    ) {
        self.transaction = transaction
        self.purchase = purchase
        self.entitlements = entitlements
        self.ownership = ownership
        self.stored = stored ?? StoredTransactionFacts(transaction)
    }

    /// Whether the posted transaction is the one that currently describes its purchase.
    public var isLatest: Bool { purchase.latestTransactionId == transaction.transactionId }
}

/// The facts of one transaction that decide its own status (`StatusRules.evaluate`), as a store holds them.
public struct StoredTransactionFacts: Sendable, Equatable {
    /// When the period ends; nil for purchases that do not expire.
    public var expiresDate: Date?
    /// When access ended because of a refund or revocation (`TransactionFacts.accessRevocationDate`).
    public var accessRevocationDate: Date?
    /// When the stored facts were signed.
    public var signedDate: Date

    /// Creates a value.
    public init(expiresDate: Date?, accessRevocationDate: Date?, signedDate: Date) {
        self.expiresDate = expiresDate
        self.accessRevocationDate = accessRevocationDate
        self.signedDate = signedDate
    }

    /// The status facts `transaction` carries.
    public init(_ transaction: TransactionFacts) {
        self.init(expiresDate: transaction.expiresDate, accessRevocationDate: transaction.accessRevocationDate,
                  signedDate: transaction.signedDate)
    }
}

/// Transactions, purchases and the users they are bound to.
///
/// Each write is one database transaction: the transaction row, the purchase state and the user binding are
/// written together or not at all. Throws `DomainError` (`.serviceUnavailable`, `.purchaseOwnedByAnotherUser`,
/// `.transactionConflict`). A purchase is identified by its environment and original transaction id.
public protocol PurchaseStore: Sendable {
    /// Records a verified transaction; when `userId` is given, binds the purchase to the user per the project's
    /// transfer policy (`OwnershipRules`). Idempotent: the same facts twice leave one row and the same answer.
    func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction
    /// Records verified transactions from one source (a receipt's records, a lookup's answer) in ONE database
    /// transaction, each under the same rules as `recordTransaction` (newer facts win, exactly once per
    /// transaction id, the same user binding); any refusal writes nothing. Results are in input order.
    func recordTransactions(
        _ transactions: [TransactionFacts], source: TransactionSource, userId: String?, deviceId: String?,
        project: Project, now: Date
    ) throws -> [RecordedTransaction]
    /// The purchases currently bound to `userId`, with their products' entitlements.
    func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase]
    /// Everything `GET /v1/subscriptions` reads about `userId` — bound purchases and app transactions — in one
    /// read. The default has no app transactions (stores that keep none).
    func holdings(userId: String, project: Project) throws -> UserHoldings
    /// `holdings(userId:project:)`'s answer when a store holds it in memory (a read cache's current entry; never
    /// blocks); nil when only the database can tell. The default: nil.
    func holdingsInMemory(userId: String, project: Project) -> UserHoldings?
}

extension PurchaseStore {
    /// Nothing in memory: every read asks `holdings(userId:project:)`.
    public func holdingsInMemory(userId: String, project: Project) -> UserHoldings? { nil }

    /// Bound purchases only: a store that keeps no app transactions.
    public func holdings(userId: String, project: Project) throws -> UserHoldings {
        UserHoldings(purchases: try ownedPurchases(userId: userId, project: project), appTransactions: [])
    }
}

/// What a user holds: bound purchases and the app transactions last posted for them.
public struct UserHoldings: Sendable, Equatable {
    /// Purchases bound to the user, with their products' entitlements.
    public var purchases: [OwnedPurchase]
    /// App transactions bound to the user.
    public var appTransactions: [StoredAppTransaction]
    /// The user's manual grants that are not removed (nor ended when read), oldest first.
    public var grants: [Grant]
    /// What readers derived from this read (`SummaryMemo`), shared by its copies (a read cache's hits); not part of
    /// the value's equality.
    public let memo = SummaryMemo()

    /// Creates a value.
    public init(purchases: [OwnedPurchase], appTransactions: [StoredAppTransaction], grants: [Grant] = []) {
        self.purchases = purchases
        self.appTransactions = appTransactions
        self.grants = grants
    }

    /// Equal holdings; the memo is not compared.
    public static func == (a: UserHoldings, b: UserHoldings) -> Bool {
        a.purchases == b.purchases && a.appTransactions == b.appTransactions && a.grants == b.grants
    }
}

/// App transactions (proofs of app purchase or download), per project and environment by `appTransactionId`.
///
/// Throws `DomainError` (`.serviceUnavailable` when the store cannot be reached).
public protocol AppTransactionStore: Sendable {
    /// Stores the verified app transaction (idempotent; a later `receiptCreationDate` refreshes the payload) and,
    /// when `userId` is given, binds it to that user (the last user posted wins). A consent withdrawal already
    /// recorded for it is kept.
    func recordAppTransaction(_ facts: AppTransactionFacts, userId: String?, project: Project, now: Date) throws
        -> RecordedAppTransaction
}

/// What storing a notification did.
public enum NotificationOutcome: String, Sendable, Equatable {
    /// First delivery: stored, and its facts applied in the same database transaction.
    case processed
    /// A redelivery (same project and `notificationUUID`): nothing changed.
    case duplicate
}

/// A stored notification as the admin API lists it (the raw payload stays in the database).
public struct StoredNotification: Sendable, Equatable {
    /// Apple's id for the notification.
    public var notificationUUID: UUID
    /// `notificationType`, raw.
    public var type: String
    /// `subtype`, raw.
    public var subtype: String?
    /// The purchase it is about, when it carried one.
    public var originalTransactionId: String?
    /// The environment it is about.
    public var environment: StoreEnvironment?
    /// When Apple signed it.
    public var signedDate: Date?
    /// When Bouncer first stored it.
    public var receivedAt: Date
    /// When its facts were applied (`nil` only for rows written outside `recordNotification`).
    public var processedAt: Date?
    /// For a CONSUMPTION_REQUEST (Production or Sandbox): where its answer stands.
    public var consumption: ConsumptionAnswer?

    /// Creates a value.
    public init(
        notificationUUID: UUID, type: String, subtype: String? = nil, originalTransactionId: String? = nil,
        environment: StoreEnvironment? = nil, signedDate: Date? = nil, receivedAt: Date, processedAt: Date? = nil
    ) {
        self.notificationUUID = notificationUUID
        self.type = type
        self.subtype = subtype
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.processedAt = processedAt
    }
}

/// App Store Server Notifications: stored once each, their facts applied exactly once.
///
/// Throws `DomainError` (`.serviceUnavailable` when the store cannot be reached: Apple then retries).
public protocol NotificationStore: Sendable {
    /// Stores the verified notification keyed by (project, environment, `notificationUUID`) and, on first
    /// delivery, applies its transaction and renewal facts (`NotificationRules.effect`) under the same
    /// newer-fact-wins rules as receipts, binding no user — all in one database transaction. A redelivery
    /// changes nothing; a nested transaction contradicting a recorded one's identity throws `.transactionConflict`
    /// and nothing is stored.
    func recordNotification(_ notification: NotificationFacts, project: Project, now: Date) throws
        -> NotificationOutcome
    /// The project's stored notifications, newest first (by `receivedAt`), at most `limit`, optionally only those
    /// about `originalTransactionId`.
    func notifications(projectId: UUID, originalTransactionId: String?, limit: Int) throws -> [StoredNotification]
}
