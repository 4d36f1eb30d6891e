public import Domain
public import Foundation
import Postgres

/// A project's retention rules and the decisions of its Get Retention Message endpoint (schema/0057).
public final class PostgresRetentionStore: PostgresStore, @unchecked Sendable, RetentionStore {
    /// Most purchases of the user whose refunds a decision looks at (the bound of the facts query).
    static let heldLimit: Int64 = 100

    /// The rule columns, qualified with `r`.
    private static let ruleColumns = """
        r.position, r.name, r.product_ids, r.locale_prefixes, r.min_tenure_days, r.max_tenure_days, r.min_renewals,
        r.max_renewals, r.refunded, r.in_billing_retry, r.max_offers_used, r.message_id, r.alternate_product_id,
        r.promotional_offer_id
        """

    public func rules(projectId: UUID) throws -> [RetentionRule] {
        try StorageErrors.mapping("retention rules") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.ruleColumns) FROM retention_rules r
                    WHERE r.project_id = \(projectId) ORDER BY r.position
                    """).compactMap(Self.rule)
            }
        }
    }

    public func replaceRules(projectId: UUID, rules: [RetentionRule], at now: Date) throws {
        try StorageErrors.mapping("replace retention rules") {
            try pool.transaction { connection in
                let before = try connection.query("""
                    SELECT r.name FROM retention_rules r WHERE r.project_id = \(projectId) ORDER BY r.position
                    """).map { try $0.decode("name", as: String.self) }
                _ = try connection.execute("DELETE FROM retention_rules WHERE project_id = \(projectId)")
                for (position, rule) in rules.enumerated() {
                    let w = rule.when
                    var alternate: String?, offer: String?
                    switch rule.action {
                    case .message: break
                    case .alternateProduct(let product, _): alternate = product
                    case .promotionalOffer(let offerId, _): offer = offerId
                    }
                    _ = try connection.execute("""
                        INSERT INTO retention_rules (project_id, position, name, product_ids, locale_prefixes,
                            min_tenure_days, max_tenure_days, min_renewals, max_renewals, refunded, in_billing_retry,
                            max_offers_used, message_id, alternate_product_id, promotional_offer_id, updated_at)
                        VALUES (\(projectId), \(Bind.int(position)),
                            \(rule.name),
                            CASE WHEN \(w.productIds != nil) THEN \(w.productIds ?? [])::text[] END,
                            CASE WHEN \(w.localePrefixes != nil) THEN \(w.localePrefixes ?? [])::text[] END,
                            \(Bind.int(w.minTenureDays)), \(Bind.int(w.maxTenureDays)), \(Bind.int(w.minRenewals)),
                            \(Bind.int(w.maxRenewals)), \(Bind.bool(w.refunded)), \(Bind.bool(w.inBillingRetry)),
                            \(Bind.int(w.maxOffersUsed)), \(rule.action.messageId), \(Bind.text(alternate)),
                            \(Bind.text(offer)), \(now))
                        """)
                }
                try AuditRows.write(connection, changes: AuditRows.diff(
                    [("rules", .list(before.map { .string($0) }))], [("rules", .list(rules.map { .string($0.name) }))]))
            }
        }
    }

    public func context(projectId: UUID, environment: StoreEnvironment, originalTransactionId: String,
                        productId: String, locale: String) throws -> (rules: [RetentionRule], facts: RetentionFacts) {
        try StorageErrors.mapping("retention context") {
            try pool.withConnection { connection in
                // One statement: the purchase's facts (one row, f; its columns named apart from the rules') beside each rule
                // in order (no rule: one row of NULLs).
                let rows = try connection.query("""
                    WITH p AS (
                        SELECT p.environment, p.original_transaction_id, p.is_in_billing_retry FROM purchases p
                        WHERE p.project_id = \(projectId) AND p.environment = \(environment.rawValue)::text
                          AND p.original_transaction_id = \(originalTransactionId)::text
                    ), u AS (
                        SELECT s.user_id FROM subscriptions s JOIN p ON s.environment = p.environment
                         AND s.original_transaction_id = p.original_transaction_id
                        WHERE s.project_id = \(projectId) AND s.revoked_at IS NULL
                        ORDER BY s.bound_at DESC LIMIT 1
                    ), held AS (
                        (SELECT s.environment, s.original_transaction_id FROM subscriptions s JOIN u ON s.user_id = u.user_id
                         WHERE s.project_id = \(projectId) LIMIT \(Self.heldLimit))
                        UNION SELECT p.environment, p.original_transaction_id FROM p
                    ), t AS (
                        SELECT t.purchase_date, t.payload ->> 'offerType' AS offer_type,
                            t.payload ->> 'offerIdentifier' AS offer_identifier
                        FROM transactions t JOIN p ON t.environment = p.environment
                         AND t.original_transaction_id = p.original_transaction_id
                        WHERE t.project_id = \(projectId)
                    ), f AS (
                        SELECT EXISTS (SELECT 1 FROM p) AS known, (SELECT user_id FROM u) AS user_id,
                            COALESCE((SELECT is_in_billing_retry FROM p), false) AS f_in_billing_retry,
                            (SELECT min(purchase_date) FROM t) AS first_purchase,
                            (SELECT count(*) FROM t) AS transaction_count,
                            EXISTS (SELECT 1 FROM transactions x JOIN held h ON x.environment = h.environment
                                     AND x.original_transaction_id = h.original_transaction_id
                                    WHERE x.project_id = \(projectId) AND x.revocation_date IS NOT NULL
                                      AND x.revocation_reason IS NOT NULL) AS f_refunded,
                            (SELECT count(DISTINCT offer_identifier) FROM t WHERE offer_type = '2') AS offers_used
                    )
                    SELECT f.known, f.user_id, f.f_in_billing_retry, f.first_purchase, f.transaction_count, f.f_refunded,
                        f.offers_used, \(unsafeSQL: Self.ruleColumns)
                    FROM f LEFT JOIN retention_rules r ON r.project_id = \(projectId)
                    ORDER BY r.position
                    """)
                var rules: [RetentionRule] = []
                var facts = RetentionFacts(productId: productId, locale: locale)
                for (index, row) in rows.enumerated() {
                    if index == 0 {
                        facts.purchaseKnown = try row.decode("known", as: Bool.self)
                        facts.userId = try row.decode("user_id", as: String?.self)
                        facts.inBillingRetry = try row.decode("f_in_billing_retry", as: Bool.self)
                        facts.firstPurchaseDate = try row.decode("first_purchase", as: Date?.self)
                        let count = try row.decode("transaction_count", as: Int64.self)
                        facts.renewals = facts.purchaseKnown && count > 0 ? Int(count - 1) : nil
                        facts.refunded = try row.decode("f_refunded", as: Bool.self)
                        facts.offersUsed = Int(try row.decode("offers_used", as: Int64.self))
                    }
                    if let rule = try Self.rule(row) { rules.append(rule) }
                }
                return (rules, facts)
            }
        }
    }

    public func purchase(projectId: UUID, userId: String, productId: String) throws
        -> (environment: StoreEnvironment, originalTransactionId: String)?
    {
        try StorageErrors.mapping("retention purchase") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT s.environment, s.original_transaction_id FROM subscriptions s
                    JOIN purchases p ON p.project_id = s.project_id AND p.environment = s.environment
                     AND p.original_transaction_id = s.original_transaction_id
                    WHERE s.project_id = \(projectId) AND s.user_id = \(userId)::text AND s.revoked_at IS NULL
                      AND p.product_id = \(productId)::text
                    ORDER BY p.purchase_date DESC NULLS LAST, s.original_transaction_id COLLATE "C" LIMIT 1
                    """).first.map { row in
                        (StoreEnvironment(rawValue: try row.decode("environment", as: String.self)),
                         try row.decode("original_transaction_id", as: String.self))
                    }
            }
        }
    }

    public func record(_ d: RecordedRetentionDecision) throws -> Bool {
        try StorageErrors.mapping("record retention decision") {
            try pool.withConnection { connection in
                let r = d.request, decision = d.decision
                var alternate: String?, offer: String?
                switch decision.action {
                case .alternateProduct(let product, _)?: alternate = product
                case .promotionalOffer(let offerId, _)?: offer = offerId
                case .message?, nil: break
                }
                return try connection.execute("""
                    INSERT INTO retention_decisions (project_id, request_identifier, environment, original_transaction_id,
                        product_id, locale, signed_date, rule_index, rule_name, action, message_id, alternate_product_id,
                        promotional_offer_id, reason, decided_at)
                    VALUES (\(d.projectId), \(r.requestIdentifier), \(r.environment.rawValue), \(r.originalTransactionId),
                        \(r.productId), \(r.userLocale), \(r.signedDate), \(Bind.int(decision.ruleIndex)),
                        \(Bind.text(decision.ruleName)), \(decision.action?.kind ?? "default"),
                        \(Bind.uuid(decision.action?.messageId)), \(Bind.text(alternate)), \(Bind.text(offer)),
                        \(decision.reason), \(d.decidedAt))
                    ON CONFLICT (project_id, request_identifier) DO NOTHING
                    """) == 1
            }
        }
    }

    /// A change Apple accepted (a message, an image, a default message, the Realtime URL, a performance test):
    /// nothing is stored but its audit entry, in a transaction of its own.
    public func recordRetentionMessagingChange(projectId: UUID, changes: [AuditChange]) throws {
        try StorageErrors.mapping("record retention messaging change") {
            try pool.transaction { connection in try AuditRows.write(connection, changes: changes) }
        }
    }

    public func recentDecisions(projectId: UUID, limit: Int) throws -> [RetentionDecisionRecord] {
        try StorageErrors.mapping("recent retention decisions") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT d.original_transaction_id, d.product_id, d.action, d.reason, d.decided_at
                    FROM retention_decisions d WHERE d.project_id = \(projectId)
                    ORDER BY d.decided_at DESC, d.request_identifier DESC LIMIT \(Int64(limit))
                    """).map { row in
                    RetentionDecisionRecord(
                        originalTransactionId: try row.decode("original_transaction_id", as: String.self),
                        productId: try row.decode("product_id", as: String.self),
                        action: try row.decode("action", as: String.self),
                        reason: try row.decode("reason", as: String.self),
                        at: try row.decode("decided_at", as: Date.self))
                }
            }
        }
    }

    /// The rule of a row, nil for the facts-only row of a project without rules.
    private static func rule(_ row: Row) throws -> RetentionRule? {
        guard let name = try row.decode("name", as: String?.self),
              let messageId = try row.decode("message_id", as: UUID?.self) else { return nil }
        let action: RetentionAction
        if let product = try row.decode("alternate_product_id", as: String?.self) {
            action = .alternateProduct(productId: product, messageId: messageId)
        } else if let offer = try row.decode("promotional_offer_id", as: String?.self) {
            action = .promotionalOffer(offerId: offer, messageId: messageId)
        } else {
            action = .message(messageId: messageId)
        }
        return RetentionRule(name: name, when: RetentionCondition(
            productIds: try row.decode("product_ids", as: [String]?.self),
            localePrefixes: try row.decode("locale_prefixes", as: [String]?.self),
            minTenureDays: try row.decode("min_tenure_days", as: Int?.self),
            maxTenureDays: try row.decode("max_tenure_days", as: Int?.self),
            minRenewals: try row.decode("min_renewals", as: Int?.self),
            maxRenewals: try row.decode("max_renewals", as: Int?.self),
            refunded: try row.decode("refunded", as: Bool?.self),
            inBillingRetry: try row.decode("in_billing_retry", as: Bool?.self),
            maxOffersUsed: try row.decode("max_offers_used", as: Int?.self)), action: action)
    }
}
