import Domain
import Foundation
import Postgres

/// What `PostgresPurchaseStore.recordRenewal` did with a renewal fact.
public enum RenewalOutcome: Sendable, Equatable {
    /// The purchase now carries the renewal info; its new state.
    case applied(PurchaseState)
    /// The purchase already had renewal info signed at the same time or later; its unchanged state.
    case unchanged(PurchaseState)
    /// No transaction of the purchase is known yet: the fact is kept and applied when the first
    /// transaction is recorded (`recordTransaction` adopts it in the same database transaction).
    case pending
}

/// Transactions, purchase state and user bindings in PostgreSQL.
///
/// Each write is one database transaction (`ConnectionPool.transaction`, which reruns it on a serialization
/// failure or deadlock). Concurrency is handled by row locks, always taken in the same order — the
/// `purchases` row first, then its `subscriptions` rows — so concurrent posts of one purchase queue up
/// instead of deadlocking. The rules themselves (`PurchaseState.applying`, `OwnershipRules.decide`) run in
/// Swift on the locked state; SQL only stores and locks.
///
/// A purchase is keyed by (project, environment, original transaction id) and a transaction by (project,
/// environment, transaction id): Xcode and LocalTesting data, which anyone can sign, reusing a real id is another
/// purchase, so it never replaces, revokes, extends or re-owns a Sandbox or Production one (nor the reverse).
/// A stored transaction's identity (`original_transaction_id`, `product_id`, `bundle_id`, and the environment in
/// its key) never changes: signed data that disagrees is refused with `.transactionConflict`, nothing written.
public final class PostgresPurchaseStore: PurchaseStore {
    private let pool: ConnectionPool

    /// A store over `pool`; the pool's lifetime is the caller's.
    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// Records a verified transaction and, when `userId` is given, binds its purchase to the user.
    ///
    /// Statements, in one transaction: upsert `transactions` (refused with `.transactionConflict` when the stored
    /// row of the same environment and transaction id has another identity); ensure the `purchases` row; lock it (reading the
    /// posted product's entitlements in the same statement); update it when the fact is newer; lock the
    /// purchase's current holders; write the binding (plus the revocations and `ownership_events` of a
    /// transfer). Under the `block` policy a purchase held by another user throws
    /// `.purchaseOwnedByAnotherUser` and nothing at all is written.
    public func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction {
        try StorageErrors.mapping("record transaction") {
            try pool.transaction { connection in
                try Self.apply(transaction, userId: userId, deviceId: deviceId, project: project, now: now,
                               on: connection)
            }
        }
    }

    /// The purchases bound to `userId` (not revoked), with the entitlements of each purchase's current product;
    /// a product without a mapping grants nothing. One prepared statement; sorted by original transaction id (then
    /// environment: a user may hold an Xcode purchase and a real one with the same id, each its own entry).
    public func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] {
        try StorageErrors.mapping("owned purchases") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: PurchaseRows.columns), pr.entitlements
                    FROM subscriptions s
                    JOIN purchases p
                      ON p.project_id = s.project_id AND p.environment = s.environment
                     AND p.original_transaction_id = s.original_transaction_id
                    LEFT JOIN products pr ON pr.project_id = p.project_id AND pr.product_id = p.product_id
                    WHERE s.project_id = \(project.id) AND s.user_id = \(userId) AND s.revoked_at IS NULL
                    ORDER BY p.original_transaction_id COLLATE "C", p.environment COLLATE "C"
                    """).map { row in
                    OwnedPurchase(
                        purchase: try PurchaseRows.state(from: row),
                        entitlements: try row.decode("entitlements", as: [String]?.self) ?? [])
                }
            }
        }
    }

    /// Records signed renewal info (from a notification) under the purchase's row lock.
    ///
    /// When no transaction of the purchase is known yet there is no state to attach it to (a `purchases` row
    /// needs its latest transaction), so the fact is kept in `pending_renewals` (newest signature wins) and
    /// adopted by the `recordTransaction` that creates the purchase. A transaction-scoped advisory lock on
    /// (project, environment, original transaction id), taken only on these two rare paths, makes the hand-over race-free:
    /// either the renewal sees the new purchase row, or the transaction sees the pending fact.
    @discardableResult
    public func recordRenewal(_ renewal: RenewalFacts, project: Project, now: Date) throws -> RenewalOutcome {
        try StorageErrors.mapping("record renewal") {
            try pool.transaction { connection in
                try Self.apply(renewal, projectId: project.id, now: now, on: connection)
            }
        }
    }

    // MARK: - Steps, each inside the caller's database transaction

    /// Records `transaction` (and binds `userId`, when given) on `connection`, which must be inside a database
    /// transaction: the body of `recordTransaction`, shared with the notification store.
    static func apply(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date,
        on connection: Connection
    ) throws -> RecordedTransaction {
        try Self.upsertTransaction(transaction, project: project, now: now, on: connection)
        let first = PurchaseState(first: transaction)
        if try Self.insertPurchaseIfMissing(first, projectId: project.id, now: now, on: connection) {
            try Self.adoptPendingRenewal(of: first, projectId: project.id, now: now, on: connection)
        }
        guard
            let locked = try Self.lockPurchase(
                transaction.originalTransactionId, environment: transaction.environment, projectId: project.id,
                entitlementsOf: transaction.productId, on: connection)
        else {
            // Cannot happen: the row was inserted or already present in this transaction.
            throw PGError(code: .decoding, message: "purchases row vanished after INSERT … ON CONFLICT")
        }
        let (stored, entitlements) = locked
        var purchase = stored
        if let next = stored.applying(transaction) {
            try Self.writeTransactionFacts(of: next, projectId: project.id, now: now, on: connection)
            purchase = next
        }
        var ownership: OwnershipDecision?
        if let userId {
            ownership = try Self.bind(
                purchase.originalTransactionId, environment: purchase.environment, to: userId, deviceId: deviceId, project: project, now: now,
                on: connection)
        }
        return RecordedTransaction(
            transaction: transaction, purchase: purchase, entitlements: entitlements, ownership: ownership)
    }

    /// Records `renewal` on `connection`, which must be inside a database transaction: the body of
    /// `recordRenewal`, shared with the notification store.
    static func apply(_ renewal: RenewalFacts, projectId: UUID, now: Date, on connection: Connection) throws
        -> RenewalOutcome
    {
        let id = renewal.originalTransactionId, environment = renewal.environment
        var locked = try Self.lockPurchase(
            id, environment: environment, projectId: projectId, entitlementsOf: nil, on: connection)
        if locked == nil {
            try Self.lockHandOver(id, environment: environment, projectId: projectId, on: connection)
            // A new statement sees whatever the purchase's creator committed before we got the lock.
            locked = try Self.lockPurchase(
                id, environment: environment, projectId: projectId, entitlementsOf: nil, on: connection)
        }
        guard let stored = locked?.0 else {
            try Self.keepPendingRenewal(renewal, projectId: projectId, now: now, on: connection)
            return .pending
        }
        guard let next = stored.applying(renewal) else { return .unchanged(stored) }
        try Self.writeRenewal(of: next, projectId: projectId, now: now, on: connection)
        return .applied(next)
    }

    // MARK: - Statements

    /// Inserts the transaction, or refreshes it: the facts only when the new statement was signed later (a
    /// refund, a reversal), `last_seen_at` always, `first_seen_at` never — but only when the stored identity
    /// (`original_transaction_id`, `product_id`, `bundle_id`; the environment is in the key) equals the signed one.
    /// Otherwise the `DO UPDATE … WHERE` matches nothing, no row comes back, and this throws `.transactionConflict`
    /// (the caller's database transaction then rolls back): the check costs no extra round trip on success.
    private static func upsertTransaction(
        _ t: TransactionFacts, project: Project, now: Date, on connection: Connection
    ) throws {
        let projectId = project.id
        let bundleId = t.bundleId ?? project.bundleId
        let rows = try connection.query("""
            INSERT INTO transactions AS t (project_id, transaction_id, original_transaction_id, product_id, type,
                environment, bundle_id, purchase_date, original_purchase_date, expires_date, revocation_date,
                revocation_reason, app_account_token, ownership_type, signed_date, payload, first_seen_at, last_seen_at)
            VALUES (\(projectId), \(t.transactionId), \(t.originalTransactionId), \(t.productId), \(t.type.rawValue),
                \(t.environment.rawValue), \(bundleId), \(t.purchaseDate), \(Bind.date(t.originalPurchaseDate)),
                \(Bind.date(t.expiresDate)), \(Bind.date(t.revocationDate)), \(Bind.int(t.revocationReason)),
                \(Bind.uuid(t.appAccountToken)), \(Bind.text(t.ownershipType?.rawValue)), \(t.signedDate),
                \(t.payloadJSON), \(now), \(now))
            ON CONFLICT (project_id, environment, transaction_id) DO UPDATE SET
                type = CASE WHEN EXCLUDED.signed_date > t.signed_date THEN EXCLUDED.type ELSE t.type END,
                purchase_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.purchase_date ELSE t.purchase_date END,
                original_purchase_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.original_purchase_date ELSE t.original_purchase_date END,
                expires_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.expires_date ELSE t.expires_date END,
                revocation_date = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.revocation_date ELSE t.revocation_date END,
                revocation_reason = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.revocation_reason ELSE t.revocation_reason END,
                app_account_token = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.app_account_token ELSE t.app_account_token END,
                ownership_type = CASE WHEN EXCLUDED.signed_date > t.signed_date
                    THEN EXCLUDED.ownership_type ELSE t.ownership_type END,
                payload = CASE WHEN EXCLUDED.signed_date > t.signed_date THEN EXCLUDED.payload ELSE t.payload END,
                signed_date = GREATEST(EXCLUDED.signed_date, t.signed_date),
                last_seen_at = GREATEST(EXCLUDED.last_seen_at, t.last_seen_at)
            WHERE t.original_transaction_id = EXCLUDED.original_transaction_id
              AND t.product_id = EXCLUDED.product_id AND t.bundle_id = EXCLUDED.bundle_id
            RETURNING true
            """)
        guard rows.isEmpty else { return }
        throw try transactionConflict(t, bundleId: bundleId, projectId: projectId, on: connection)
    }

    /// The `.transactionConflict` for `t`, naming (for the log only) the identity fields that differ from the
    /// stored row, which the failed upsert left locked. Runs only on the refused path.
    private static func transactionConflict(
        _ t: TransactionFacts, bundleId: String, projectId: UUID, on connection: Connection
    ) throws -> DomainError {
        let stored = try connection.query("""
            SELECT original_transaction_id, product_id, bundle_id FROM transactions
            WHERE project_id = \(projectId) AND environment = \(t.environment.rawValue)
              AND transaction_id = \(t.transactionId)
            """).first
        var differing: [String] = []
        if let stored {
            if try stored.decode("original_transaction_id", as: String.self) != t.originalTransactionId {
                differing.append("original_transaction_id")
            }
            if try stored.decode("product_id", as: String.self) != t.productId { differing.append("product_id") }
            if try stored.decode("bundle_id", as: String.self) != bundleId { differing.append("bundle_id") }
        }
        return DomainError(
            .transactionConflict,
            "This transaction id is already recorded with a different identity; nothing was written.",
            underlying: "transaction conflict: project \(projectId), environment \(t.environment.rawValue.prefix(40)), "
                + "transaction \(t.transactionId.prefix(64)), differing fields: "
                + (differing.isEmpty ? "unknown" : differing.joined(separator: ", ")))
    }

    /// Creates the purchase row from its first known transaction; true when this call created it (a
    /// concurrent creator makes this wait for its commit, then do nothing). Only when it created the row does it
    /// take the hand-over lock, in a statement of its own right after: the next statement, `adoptPendingRenewal`,
    /// then sees any pending renewal committed before.
    private static func insertPurchaseIfMissing(
        _ s: PurchaseState, projectId: UUID, now: Date, on connection: Connection
    ) throws -> Bool {
        let rows = try connection.query("""
            INSERT INTO purchases (project_id, original_transaction_id, latest_transaction_id, product_id, type,
                environment, purchase_date, expires_date, revocation_date, revocation_reason, ownership_type,
                latest_signed_date, created_at, updated_at)
            VALUES (\(projectId), \(s.originalTransactionId), \(s.latestTransactionId), \(s.productId),
                \(s.type.rawValue), \(s.environment.rawValue), \(s.purchaseDate), \(Bind.date(s.expiresDate)),
                \(Bind.date(s.revocationDate)), \(Bind.int(s.revocationReason)), \(Bind.text(s.ownershipType?.rawValue)),
                \(s.latestSignedDate), \(now), \(now))
            ON CONFLICT (project_id, environment, original_transaction_id) DO NOTHING
            RETURNING true
            """)
        guard !rows.isEmpty else { return false }
        // The hand-over lock is taken in its own statement, not in RETURNING: Citus refuses volatile functions in
        // RETURNING on distributed tables. Same transaction, so the race with recordRenewal stays closed.
        try lockHandOver(s.originalTransactionId, environment: s.environment, projectId: projectId, on: connection)
        return true
    }

    /// Locks the purchase row (`FOR UPDATE OF p`: the products row is only read) and returns its state, plus
    /// the entitlements of `entitlementsOf` (empty when that product has no mapping); nil when there is no row.
    private static func lockPurchase(
        _ originalTransactionId: String, environment: StoreEnvironment, projectId: UUID,
        entitlementsOf productId: String?, on connection: Connection
    ) throws -> (PurchaseState, [String])? {
        let rows: Rows
        if let productId {
            rows = try connection.query("""
                SELECT \(unsafeSQL: PurchaseRows.columns), pr.entitlements
                FROM purchases p
                LEFT JOIN products pr ON pr.project_id = p.project_id AND pr.product_id = \(productId)
                WHERE p.project_id = \(projectId) AND p.environment = \(environment.rawValue)
                  AND p.original_transaction_id = \(originalTransactionId)
                FOR UPDATE OF p
                """)
        } else {
            rows = try connection.query("""
                SELECT \(unsafeSQL: PurchaseRows.columns), NULL::text[] AS entitlements
                FROM purchases p
                WHERE p.project_id = \(projectId) AND p.environment = \(environment.rawValue)
                  AND p.original_transaction_id = \(originalTransactionId)
                FOR UPDATE OF p
                """)
        }
        guard let row = rows.first else { return nil }
        return (try PurchaseRows.state(from: row), try row.decode("entitlements", as: [String]?.self) ?? [])
    }

    /// Writes the transaction-derived columns of `s` (its renewal columns are unchanged by a transaction).
    private static func writeTransactionFacts(
        of s: PurchaseState, projectId: UUID, now: Date, on connection: Connection
    ) throws {
        try connection.execute("""
            UPDATE purchases SET latest_transaction_id = \(s.latestTransactionId), product_id = \(s.productId),
                type = \(s.type.rawValue), purchase_date = \(s.purchaseDate),
                expires_date = \(Bind.date(s.expiresDate)), revocation_date = \(Bind.date(s.revocationDate)),
                revocation_reason = \(Bind.int(s.revocationReason)),
                ownership_type = \(Bind.text(s.ownershipType?.rawValue)), latest_signed_date = \(s.latestSignedDate),
                updated_at = \(now)
            WHERE project_id = \(projectId) AND environment = \(s.environment.rawValue)
              AND original_transaction_id = \(s.originalTransactionId)
            """)
    }

    /// Writes the renewal columns of `s` (which must carry renewal info).
    private static func writeRenewal(of s: PurchaseState, projectId: UUID, now: Date, on connection: Connection)
        throws
    {
        guard let r = s.renewal else { return }
        try connection.execute("""
            UPDATE purchases SET auto_renew_status = \(Bind.int(r.autoRenewStatus)),
                auto_renew_product_id = \(Bind.text(r.autoRenewProductId)),
                expiration_intent = \(Bind.int(r.expirationIntent)),
                grace_period_expires_date = \(Bind.date(r.gracePeriodExpiresDate)),
                is_in_billing_retry = \(Bind.bool(r.isInBillingRetryPeriod)),
                price_increase_status = \(Bind.int(r.priceIncreaseStatus)), offer_type = \(Bind.int(r.offerType)),
                offer_identifier = \(Bind.text(r.offerIdentifier)), renewal_signed_date = \(r.signedDate),
                renewal_payload = \(r.payloadJSON), renewal_product_id = \(Bind.text(r.productId)),
                renewal_date = \(Bind.date(r.renewalDate)), renewal_environment = \(r.environment.rawValue),
                updated_at = \(now)
            WHERE project_id = \(projectId) AND environment = \(s.environment.rawValue)
              AND original_transaction_id = \(s.originalTransactionId)
            """)
    }

    /// Serialises the hand-over of renewal facts between `recordRenewal` (no purchase yet) and the
    /// `recordTransaction` that creates the purchase. Transaction-scoped: released at COMMIT/ROLLBACK.
    /// The two-key form keeps these locks apart from the single-bigint-key locks (the migrator's); the first
    /// key, 16978 (0x4252, "BR"), is this lock's namespace. The second hashes the purchase's full key (project,
    /// environment, original transaction id), so an Xcode purchase never waits on a real one with the same id
    /// (a hash collision only serialises two hand-overs). `insertPurchaseIfMissing` takes the same lock right
    /// after creating a purchase row.
    private static func lockHandOver(
        _ originalTransactionId: String, environment: StoreEnvironment, projectId: UUID, on connection: Connection
    ) throws {
        try connection.execute("""
            SELECT pg_advisory_xact_lock(16978, hashtext(\(projectId)::uuid::text || '/' || \(environment.rawValue)::text
                || '/' || \(originalTransactionId)::text))
            """)
    }

    /// Applies renewal info that arrived before the purchase's first transaction, and forgets it. Runs right
    /// after `insertPurchaseIfMissing` created the row and took the hand-over lock.
    private static func adoptPendingRenewal(
        of created: PurchaseState, projectId: UUID, now: Date, on connection: Connection
    ) throws {
        let rows = try connection.query("""
            DELETE FROM pending_renewals
            WHERE project_id = \(projectId) AND environment = \(created.environment.rawValue)
              AND original_transaction_id = \(created.originalTransactionId)
            RETURNING original_transaction_id, product_id, auto_renew_product_id, auto_renew_status, expiration_intent,
                grace_period_expires_date, is_in_billing_retry, price_increase_status, offer_type, offer_identifier,
                renewal_date, environment, signed_date, payload
            """)
        guard let row = rows.first else { return }
        let renewal = try PurchaseRows.pendingRenewal(from: row)
        if let next = created.applying(renewal) {
            try writeRenewal(of: next, projectId: projectId, now: now, on: connection)
        }
    }

    /// Keeps renewal info of a purchase with no known transaction; a later-signed fact replaces an earlier one.
    private static func keepPendingRenewal(
        _ r: RenewalFacts, projectId: UUID, now: Date, on connection: Connection
    ) throws {
        try connection.execute("""
            INSERT INTO pending_renewals AS r (project_id, original_transaction_id, product_id, auto_renew_product_id,
                auto_renew_status, expiration_intent, grace_period_expires_date, is_in_billing_retry,
                price_increase_status, offer_type, offer_identifier, renewal_date, environment, signed_date, payload,
                received_at)
            VALUES (\(projectId), \(r.originalTransactionId), \(Bind.text(r.productId)),
                \(Bind.text(r.autoRenewProductId)), \(Bind.int(r.autoRenewStatus)), \(Bind.int(r.expirationIntent)),
                \(Bind.date(r.gracePeriodExpiresDate)), \(Bind.bool(r.isInBillingRetryPeriod)),
                \(Bind.int(r.priceIncreaseStatus)), \(Bind.int(r.offerType)), \(Bind.text(r.offerIdentifier)),
                \(Bind.date(r.renewalDate)), \(r.environment.rawValue), \(r.signedDate), \(r.payloadJSON), \(now))
            ON CONFLICT (project_id, environment, original_transaction_id) DO UPDATE SET
                product_id = EXCLUDED.product_id, auto_renew_product_id = EXCLUDED.auto_renew_product_id,
                auto_renew_status = EXCLUDED.auto_renew_status, expiration_intent = EXCLUDED.expiration_intent,
                grace_period_expires_date = EXCLUDED.grace_period_expires_date,
                is_in_billing_retry = EXCLUDED.is_in_billing_retry,
                price_increase_status = EXCLUDED.price_increase_status, offer_type = EXCLUDED.offer_type,
                offer_identifier = EXCLUDED.offer_identifier, renewal_date = EXCLUDED.renewal_date,
                signed_date = EXCLUDED.signed_date, payload = EXCLUDED.payload,
                received_at = EXCLUDED.received_at
            WHERE r.signed_date < EXCLUDED.signed_date
            """)
    }

    /// Applies the project's transfer policy to a post of the purchase by `userId`, with the purchase row
    /// already locked by this transaction (lock order: purchase, then its subscriptions).
    private static func bind(
        _ originalTransactionId: String, environment: StoreEnvironment, to userId: String, deviceId: String?,
        project: Project, now: Date, on connection: Connection
    ) throws -> OwnershipDecision {
        let owners = try connection.query("""
            SELECT user_id FROM subscriptions
            WHERE project_id = \(project.id) AND environment = \(environment.rawValue)
              AND original_transaction_id = \(originalTransactionId) AND revoked_at IS NULL
            ORDER BY bound_at, user_id COLLATE "C"
            FOR UPDATE
            """).map { try $0.decode("user_id", as: String.self) }
        let decision = OwnershipRules.decide(currentOwners: owners, user: userId, policy: project.transferPolicy)
        switch decision {
        case .block:
            throw DomainError(
                .purchaseOwnedByAnotherUser, "This purchase is already bound to another user of this app.",
                underlying: "project \(project.id), \(environment) original transaction \(originalTransactionId), "
                    + "policy block")
        case .transfer(let previous):
            try connection.execute("""
                WITH moved AS (
                    UPDATE subscriptions SET revoked_at = \(now), updated_at = \(now)
                    WHERE project_id = \(project.id) AND environment = \(environment.rawValue)
                      AND original_transaction_id = \(originalTransactionId)
                      AND user_id = ANY(\(previous)) AND revoked_at IS NULL
                    RETURNING user_id)
                INSERT INTO ownership_events (project_id, environment, original_transaction_id, from_user_id,
                    to_user_id, policy, at)
                SELECT \(project.id), \(environment.rawValue)::text, \(originalTransactionId)::text, user_id,
                    \(userId)::text, 'transfer', \(now)
                FROM moved ORDER BY user_id COLLATE "C"
                """)
            try upsertBinding(originalTransactionId, environment: environment, userId: userId, deviceId: deviceId,
                              projectId: project.id, now: now, on: connection)
        case .bind, .share, .alreadyOwned:
            try upsertBinding(originalTransactionId, environment: environment, userId: userId, deviceId: deviceId,
                              projectId: project.id, now: now, on: connection)
        }
        return decision
    }

    /// Binds the purchase to the user: a new row, a re-activated one (a user who had lost it to a transfer
    /// gets it back, with a new `bound_at`), or a touch of an active one (`updated_at`, and `device_id` when
    /// given).
    private static func upsertBinding(
        _ originalTransactionId: String, environment: StoreEnvironment, userId: String, deviceId: String?,
        projectId: UUID, now: Date, on connection: Connection
    ) throws {
        try connection.execute("""
            INSERT INTO subscriptions AS s (project_id, user_id, environment, original_transaction_id, device_id,
                bound_at, revoked_at, updated_at)
            VALUES (\(projectId), \(userId), \(environment.rawValue), \(originalTransactionId), \(Bind.text(deviceId)),
                \(now), NULL, \(now))
            ON CONFLICT (project_id, user_id, environment, original_transaction_id) DO UPDATE SET
                bound_at = CASE WHEN s.revoked_at IS NULL THEN s.bound_at ELSE EXCLUDED.bound_at END,
                revoked_at = NULL,
                device_id = COALESCE(EXCLUDED.device_id, s.device_id),
                updated_at = EXCLUDED.updated_at
            """)
    }
}
