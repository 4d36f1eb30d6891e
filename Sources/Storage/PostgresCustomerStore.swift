public import Domain
public import Foundation
import Postgres

/// Users as support sees them, in PostgreSQL: grants, the facts a timeline and an export are built from, erasure.
///
/// `facts` reads in one REPEATABLE READ transaction (one snapshot: a timeline never mixes before and after a
/// write); `erase` writes in one READ COMMITTED transaction, so either everything about the user is gone or nothing
/// changed. Each list is capped (`listLimit`) so a pathological user cannot grow an answer without bound.
public final class PostgresCustomerStore: PostgresStore, @unchecked Sendable, CustomerStore {
    /// The most rows of each kind `facts` reads.
    public static let listLimit = 10_000

    // MARK: - Grants

    public func createGrant(_ grant: Grant, projectId: UUID) throws -> Grant {
        try StorageErrors.mapping("create grant") {
            try pool.transaction { connection in
                let rows = try connection.query("""
                    INSERT INTO grants (project_id, id, user_id, entitlement, expires_at, reason, created_at)
                    VALUES (\(projectId), \(grant.id), \(Bind.text(grant.userId))::text, \(grant.entitlement)::text,
                        \(Bind.date(grant.expiresAt)), \(grant.reason)::text, \(grant.createdAt))
                    RETURNING \(unsafeSQL: Self.grantColumns)
                    """)
                guard let row = rows.first else { throw PGError(code: .decoding, message: "INSERT grant returned no row") }
                let stored = try Self.grant(from: row)
                try Self.emit(on: connection, projectId: projectId, userId: grant.userId, type: "entitlement.granted",
                              grant: stored, reason: nil)
                try AuditRows.write(connection, target: "grant:" + stored.id.lowercasedText,
                                    changes: AuditRows.diff(nil, Self.auditFields(stored)))
                return stored
            }
        }
    }

    public func revokeGrant(projectId: UUID, userId: String, grantId: UUID, now: Date) throws -> Grant? {
        try StorageErrors.mapping("revoke grant") {
            try pool.transaction { connection in
                let updated = try connection.query("""
                    UPDATE grants SET revoked_at = \(now)
                    WHERE project_id = \(projectId) AND id = \(grantId) AND user_id = \(userId)::text
                      AND revoked_at IS NULL
                    RETURNING \(unsafeSQL: Self.grantColumns)
                    """)
                if let row = updated.first {
                    let grant = try Self.grant(from: row)
                    try Self.emit(on: connection, projectId: projectId, userId: userId, type: "entitlement.revoked",
                                  grant: grant, reason: "grant removed")
                    try AuditRows.write(connection, changes: [AuditChange("revoked_at", .null, .date(grant.revokedAt))])
                    return grant
                }
                let existing = try connection.query("""
                    SELECT \(unsafeSQL: Self.grantColumns) FROM grants
                    WHERE project_id = \(projectId) AND id = \(grantId) AND user_id = \(userId)::text
                    """)
                guard let grant = try existing.first.map(Self.grant(from:)) else { return nil }
                // Already removed: answered as a success, so recorded as one, without changes.
                try AuditRows.write(connection, changes: [])
                return grant
            }
        }
    }

    /// Writes the grant's webhook event (schema 0012's outbox, `bouncer_emit_event`: only when the project's webhook
    /// wants the type) in the caller's transaction, so the event commits or rolls back with the grant.
    private static func emit(on connection: Connection, projectId: UUID, userId: String?, type: String, grant: Grant,
                             reason: String?) throws {
        guard let userId else { return }
        _ = try connection.query("""
            SELECT bouncer_emit_event(\(projectId), \(userId)::text, \(type)::text, jsonb_strip_nulls(jsonb_build_object(
                'entitlement', \(grant.entitlement)::text, 'source', 'grant',
                'grant_id', \(grant.id.lowercasedText)::text,
                'reason', \(Bind.text(reason))::text)) || jsonb_build_object(
                'expires_at', bouncer_webhook_time(\(Bind.date(grant.expiresAt))))) AS id
            """)
    }

    /// A grant as the audit log shows it: never its user, nor its reason (free text that may name the user, which
    /// an erase replaces: the log keeps nothing an erase removes).
    static func auditFields(_ grant: Grant) -> [(String, AuditValue)] {
        [("entitlement", .string(grant.entitlement)), ("expires_at", .date(grant.expiresAt))]
    }

    static let grantColumns = "id, user_id, entitlement, expires_at, reason, created_at, revoked_at"

    static func grant(from row: Row) throws -> Grant {
        Grant(id: try row.decode("id", as: UUID.self), userId: try row.decode("user_id", as: String?.self),
              entitlement: try row.decode("entitlement", as: String.self),
              expiresAt: try row.decode("expires_at", as: Date?.self), reason: try row.decode("reason", as: String.self),
              createdAt: try row.decode("created_at", as: Date.self),
              revokedAt: try row.decode("revoked_at", as: Date?.self))
    }

    // MARK: - Search by transaction id

    /// One statement: the transactions primary key (project_id, environment, transaction_id) with the environment
    /// list as an index condition, and the bound users through `subscriptions_original_idx`.
    public func transactionHolders(projectId: UUID, transactionId: String) throws -> TransactionHolders? {
        try StorageErrors.mapping("transaction holders") {
            let rows = try pool.withConnection { connection in try connection.query("""
                SELECT t.transaction_id, t.original_transaction_id, t.product_id, t.environment, t.source,
                    ARRAY(SELECT s.user_id FROM subscriptions s
                          WHERE s.project_id = t.project_id AND s.environment = t.environment
                            AND s.original_transaction_id = t.original_transaction_id AND s.revoked_at IS NULL
                          ORDER BY s.user_id LIMIT \(Int64(TransactionHolders.maxUserIds))) AS user_ids
                FROM transactions t
                WHERE t.project_id = \(projectId)
                  AND t.environment IN ('Production', 'Sandbox', 'Xcode', 'LocalTesting')
                  AND t.transaction_id = \(transactionId)::text
                ORDER BY CASE t.environment WHEN 'Production' THEN 0 WHEN 'Sandbox' THEN 1 WHEN 'Xcode' THEN 2 ELSE 3 END
                LIMIT 1
                """) }
            guard let row = rows.first else { return nil }
            return TransactionHolders(
                transactionId: try row.decode("transaction_id", as: String.self),
                originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                productId: try row.decode("product_id", as: String.self),
                environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                source: try row.decode("source", as: String.self),
                userIds: try row.decode("user_ids", as: [String].self))
        }
    }

    public func purchaseHolders(projectId: UUID, environment: StoreEnvironment, originalTransactionIds: [String]) throws
        -> [String: [String]]
    {
        guard !originalTransactionIds.isEmpty else { return [:] }
        return try StorageErrors.mapping("purchase holders") {
            // One probe of subscriptions_original_idx per id; the bound per purchase as in transactionHolders.
            let rows = try pool.withConnection { connection in try connection.query("""
                SELECT o.id AS original_transaction_id,
                    ARRAY(SELECT s.user_id FROM subscriptions s
                          WHERE s.project_id = \(projectId) AND s.environment = \(environment.rawValue)
                            AND s.original_transaction_id = o.id AND s.revoked_at IS NULL
                          ORDER BY s.user_id LIMIT \(Int64(TransactionHolders.maxUserIds))) AS user_ids
                FROM unnest(\(originalTransactionIds)::text[]) AS o(id)
                """) }
            var holders: [String: [String]] = [:]
            for row in rows {
                let userIds = try row.decode("user_ids", as: [String].self)
                if !userIds.isEmpty { holders[try row.decode("original_transaction_id", as: String.self)] = userIds }
            }
            return holders
        }
    }

    // MARK: - Facts

    public func facts(projectId: UUID, userId: String) throws -> CustomerFacts {
        try StorageErrors.mapping("customer facts") {
            try pool.transaction(isolation: .repeatableRead) { connection in
                try Self.facts(projectId: projectId, userId: userId, on: connection)
            }
        }
    }

    /// The user's bound purchases (`s`) as a join source: every fact about a purchase of the user goes through it.
    private static func facts(projectId: UUID, userId: String, on connection: Connection) throws -> CustomerFacts {
        var facts = CustomerFacts(userId: userId)
        let limit = Int64(listLimit)

        for row in try connection.query("""
            SELECT \(unsafeSQL: PurchaseRows.columns), pr.entitlements, s.device_id, s.bound_at,
                s.revoked_at AS binding_revoked_at, t.revocation_type AS latest_revocation_type,
                t.revocation_percentage AS latest_revocation_percentage
            FROM subscriptions s
            JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
             AND p.original_transaction_id = s.original_transaction_id
            LEFT JOIN products pr ON pr.project_id = p.project_id AND pr.product_id = p.product_id
            LEFT JOIN transactions t ON t.project_id = p.project_id AND t.environment = p.environment
             AND t.transaction_id = p.latest_transaction_id
            WHERE s.project_id = \(projectId) AND s.user_id = \(userId)::text
            ORDER BY s.bound_at, p.original_transaction_id COLLATE "C", p.environment COLLATE "C"
            LIMIT \(limit)
            """) {
            var state = try PurchaseRows.state(from: row)
            state.revocationType = try row.decode("latest_revocation_type", as: String?.self)
                .map(RevocationType.init(rawValue:))
            state.revocationPercentage = try row.decode("latest_revocation_percentage", as: Int64?.self)
            facts.purchases.append(HeldPurchase(
                purchase: state, entitlements: try row.decode("entitlements", as: [String]?.self) ?? [],
                deviceId: try row.decode("device_id", as: String?.self), boundAt: try row.decode("bound_at", as: Date.self),
                revokedAt: try row.decode("binding_revoked_at", as: Date?.self)))
        }

        let purchaseFacts = PurchaseFacts(projectId: projectId, userId: userId, limit: limit, connection: connection)

        for row in try purchaseFacts.rows("""
            t.transaction_id, t.original_transaction_id, t.environment, t.product_id, t.purchase_date,
                t.expires_date, t.revocation_date, t.revocation_type, t.revocation_reason, t.source, t.first_seen_at,
                t.payload::text AS payload,
                (SELECT f.finished_at FROM transaction_finishes f WHERE f.project_id = t.project_id
                    AND f.environment = t.environment AND f.transaction_id = t.transaction_id) AS finished_at
            """, of: "transactions", as: "t", orderBy: #"t.purchase_date, t.transaction_id COLLATE "C""#) {
            facts.transactions.append(TransactionRecord(
                transactionId: try row.decode("transaction_id", as: String.self),
                originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                productId: try row.decode("product_id", as: String.self),
                purchaseDate: try row.decode("purchase_date", as: Date.self),
                expiresDate: try row.decode("expires_date", as: Date?.self),
                revocationDate: try row.decode("revocation_date", as: Date?.self),
                revocationType: try row.decode("revocation_type", as: String?.self).map(RevocationType.init(rawValue:)),
                source: try row.decode("source", as: String?.self),
                firstSeenAt: try row.decode("first_seen_at", as: Date.self),
                payloadJSON: try row.decode("payload", as: String.self),
                revocationReason: try row.decode("revocation_reason", as: Int?.self),
                finishedAt: try row.decode("finished_at", as: Date?.self)))
        }

        for row in try purchaseFacts.rows(
            "d.original_transaction_id, d.product_id, d.action, d.reason, d.decided_at",
            of: "retention_decisions", as: "d", orderBy: "d.decided_at, d.request_identifier") {
            facts.retentionDecisions.append(RetentionDecisionRecord(
                originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                productId: try row.decode("product_id", as: String.self),
                action: try row.decode("action", as: String.self),
                reason: try row.decode("reason", as: String.self),
                at: try row.decode("decided_at", as: Date.self)))
        }

        for row in try purchaseFacts.rows(
            "n.notification_uuid, n.notification_type, n.subtype, n.original_transaction_id, n.received_at, n.source",
            of: "notifications", as: "n", orderBy: "n.received_at, n.notification_uuid") {
            facts.notifications.append(NotificationRecord(
                notificationUUID: try row.decode("notification_uuid", as: UUID.self),
                type: try row.decode("notification_type", as: String.self),
                subtype: try row.decode("subtype", as: String?.self),
                originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                receivedAt: try row.decode("received_at", as: Date.self),
                source: try row.decode("source", as: String.self)))
        }

        for row in try purchaseFacts.rows("""
            c.original_transaction_id, c.via, c.latest_transaction_id, c.before_status, c.after_status,
                c.after_expires_date, c.at
            """, of: "reconcile_changes", as: "c", orderBy: "c.at, c.id") {
            facts.reconcileChanges.append(ReconcileChangeRecord(
                originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                via: try row.decode("via", as: String.self),
                latestTransactionId: try row.decode("latest_transaction_id", as: String.self),
                beforeStatus: try row.decode("before_status", as: String?.self),
                afterStatus: try row.decode("after_status", as: String.self),
                afterExpiresDate: try row.decode("after_expires_date", as: Date?.self),
                at: try row.decode("at", as: Date.self)))
        }

        for row in try connection.query("""
            SELECT original_transaction_id, from_user_id, to_user_id, policy, at FROM ownership_events
            WHERE project_id = \(projectId) AND (from_user_id = \(userId)::text OR to_user_id = \(userId)::text)
            ORDER BY at, id
            LIMIT \(limit)
            """) {
            facts.ownershipEvents.append(OwnershipEventRecord(
                originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                fromUserId: try row.decode("from_user_id", as: String?.self),
                toUserId: try row.decode("to_user_id", as: String?.self),
                policy: try row.decode("policy", as: String.self), at: try row.decode("at", as: Date.self)))
        }

        for row in try connection.query("""
            SELECT \(unsafeSQL: grantColumns) FROM grants
            WHERE project_id = \(projectId) AND user_id = \(userId)::text
            ORDER BY created_at, id
            LIMIT \(limit)
            """) {
            facts.grants.append(try grant(from: row))
        }

        for row in try connection.query("""
            SELECT app_transaction_id, environment, original_application_version, original_purchase_date,
                consent_rescinded_at, first_seen_at
            FROM app_transactions
            WHERE project_id = \(projectId) AND user_id = \(userId)::text
            ORDER BY first_seen_at, app_transaction_id COLLATE "C"
            LIMIT \(limit)
            """) {
            facts.appTransactions.append(AppTransactionRecord(
                appTransaction: StoredAppTransaction(
                    appTransactionId: try row.decode("app_transaction_id", as: String.self),
                    environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                    originalApplicationVersion: try row.decode("original_application_version", as: String?.self),
                    originalPurchaseDate: try row.decode("original_purchase_date", as: Date?.self),
                    consentRescindedAt: try row.decode("consent_rescinded_at", as: Date?.self)),
                firstSeenAt: try row.decode("first_seen_at", as: Date.self)))
        }

        let products = Array(Set(facts.transactions.map(\.productId) + facts.purchases.map(\.purchase.productId)))
        if !products.isEmpty {
            for row in try connection.query("""
                SELECT product_id, entitlements FROM products
                WHERE project_id = \(projectId) AND product_id = ANY (\(products)::text[])
                """) {
                facts.productEntitlements[try row.decode("product_id", as: String.self)] =
                    try row.decode("entitlements", as: [String].self)
            }
        }
        return facts
    }

    // MARK: - Erase

    public func erase(projectId: UUID, userId: String, now: Date) throws -> ErasureSummary {
        try StorageErrors.mapping("erase user") {
            try pool.transaction { connection in
                var summary = ErasureSummary()
                // The project's pending facts are derived first (schema/0025, waiting for its deriver): their events
                // are dropped or anonymised with the user's others below, and no log row names the user after.
                _ = try connection.query("SELECT bouncer_derive_changes(\(projectId), NULL, true)")
                // An app account token equal to the user id (apps that use their account UUID as the token) is the
                // user id: cleared from the column and the stored payloads (the transaction itself stays).
                if let token = UUID(uuidString: userId) {
                    let key = token.lowercasedText
                    summary.appAccountTokensCleared += try connection.execute("""
                        UPDATE transactions SET app_account_token = NULL, payload = payload - 'appAccountToken'
                        WHERE project_id = \(projectId)
                          AND (app_account_token = \(token) OR lower(payload ->> 'appAccountToken') = \(key)::text)
                        """)
                    summary.appAccountTokensCleared += try connection.execute("""
                        UPDATE purchases SET renewal_payload = renewal_payload - 'appAccountToken'
                        WHERE project_id = \(projectId) AND lower(renewal_payload ->> 'appAccountToken') = \(key)::text
                        """)
                    summary.appAccountTokensCleared += try connection.execute("""
                        UPDATE pending_renewals SET payload = payload - 'appAccountToken'
                        WHERE project_id = \(projectId) AND lower(payload ->> 'appAccountToken') = \(key)::text
                        """)
                }
                summary.bindingsDeleted = try connection.execute("""
                    DELETE FROM subscriptions WHERE project_id = \(projectId) AND user_id = \(userId)::text
                    """)
                // realized_ltv's customer (schema/0086) named the user: their purchases go to their holders now
                // (read first, then synced: on Citus one statement doing both would nest distributed queries).
                var held: String?
                for row in try connection.query("""
                    SELECT jsonb_agg(jsonb_build_object('environment', l.environment,
                        'original_transaction_id', l.original_transaction_id))::text AS held
                    FROM revenue_ltv_purchases l WHERE l.project_id = \(projectId) AND l.customer = 'u:' || \(userId)::text
                    """) {
                    held = try row.decode("held", as: String?.self)
                }
                if let held {
                    _ = try connection.query("SELECT bouncer_revenue_ltv_rebind(\(projectId), \(held)::jsonb)")
                }
                summary.grantsAnonymised = try connection.execute("""
                    UPDATE grants SET user_id = NULL, reason = 'erased'
                    WHERE project_id = \(projectId) AND user_id = \(userId)::text
                    """)
                summary.appTransactionsUnbound = try connection.execute("""
                    UPDATE app_transactions SET user_id = NULL
                    WHERE project_id = \(projectId) AND user_id = \(userId)::text
                    """)
                summary.ownershipEventsAnonymised = try connection.execute("""
                    UPDATE ownership_events SET
                        from_user_id = CASE WHEN from_user_id = \(userId)::text THEN NULL ELSE from_user_id END,
                        to_user_id = CASE WHEN to_user_id = \(userId)::text THEN NULL ELSE to_user_id END
                    WHERE project_id = \(projectId) AND (from_user_id = \(userId)::text OR to_user_id = \(userId)::text)
                    """)
                try Self.eraseEvents(on: connection, projectId: projectId, userId: userId, into: &summary)
                // The entry counts what went, never naming the user (its target is `user`).
                try AuditRows.write(connection, changes: [
                    ("bindings_deleted", summary.bindingsDeleted), ("grants_anonymised", summary.grantsAnonymised),
                    ("app_transactions_unbound", summary.appTransactionsUnbound),
                    ("ownership_events_anonymised", summary.ownershipEventsAnonymised),
                    ("app_account_tokens_cleared", summary.appAccountTokensCleared),
                    ("events_dropped", summary.eventsDropped), ("events_anonymised", summary.eventsAnonymised),
                ].map { AuditChange($0.0, .null, .int($0.1)) })
                return summary
            }
        }
    }

    /// The webhook outbox (schema 0012): the user's pending events are dropped (never sent), the others (delivered,
    /// failed) kept without the user id; other users' events that name the user (`purchase.transferred`'s
    /// `from_user_id`/`to_user_id`) lose the name; what was last announced for the user is deleted.
    private static func eraseEvents(on connection: Connection, projectId: UUID, userId: String,
                                    into summary: inout ErasureSummary) throws {
        summary.eventsDropped = try connection.execute("""
            DELETE FROM webhook_events WHERE project_id = \(projectId) AND user_id = \(userId)::text AND status = 'pending'
            """)
        summary.eventsAnonymised = try connection.execute("""
            UPDATE webhook_events SET user_id = NULL
            WHERE project_id = \(projectId) AND user_id = \(userId)::text
            """)
        for key in ["from_user_id", "to_user_id", "user_id"] {
            _ = try connection.execute("""
                UPDATE webhook_events SET data = jsonb_set(data, ARRAY[\(key)::text], 'null'::jsonb)
                WHERE project_id = \(projectId) AND data ->> \(key)::text = \(userId)::text
                """)
        }
        _ = try connection.execute("""
            DELETE FROM webhook_purchase_states WHERE project_id = \(projectId) AND user_id = \(userId)::text
            """)
        _ = try connection.execute("""
            DELETE FROM webhook_entitlement_states WHERE project_id = \(projectId) AND user_id = \(userId)::text
            """)
    }
}

/// The facts recorded about the user's bound purchases (`s`, `subscriptions`), one table at a time: each joins
/// `s` on the purchase key (project, environment, original transaction id), in the snapshot of `connection`.
private struct PurchaseFacts {
    var projectId: UUID
    var userId: String
    /// The most rows of each table.
    var limit: Int64
    var connection: Connection

    /// `columns` of `table` (as `alias`) about the user's purchases, in `order`, at most `limit`. Every argument
    /// but the user's ids is SQL written here, never input.
    func rows(_ columns: String, of table: String, as alias: String, orderBy order: String) throws -> Rows {
        try connection.query("""
            SELECT \(unsafeSQL: columns)
            FROM subscriptions s
            JOIN \(unsafeSQL: table) \(unsafeSQL: alias) ON \(unsafeSQL: alias).project_id = s.project_id
             AND \(unsafeSQL: alias).environment = s.environment
             AND \(unsafeSQL: alias).original_transaction_id = s.original_transaction_id
            WHERE s.project_id = \(projectId) AND s.user_id = \(userId)::text
            ORDER BY \(unsafeSQL: order)
            LIMIT \(limit)
            """)
    }
}
