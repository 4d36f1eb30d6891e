public import Domain
public import Foundation
import Postgres

/// Projects (tenants), their keys and product mappings, in PostgreSQL.
///
/// Every statement names the project by id (or by its unique public key), so no call can reach another
/// tenant's rows. Every change announces itself (`CacheMessage.project` on `CacheMessage.channel`) inside its own
/// transaction, so each instance's `CachedProjectStore` reloads the project once it commits, and never before.
/// Errors: see `StorageErrors` (`.serviceUnavailable`, `.conflict`, `.projectNotFound`).
public final class PostgresProjectStore: PostgresStore, @unchecked Sendable, ProjectStore {
    /// The columns `project(from:)` reads, in one place so every query returns the same shape; `public_key` is
    /// the current public key (the one without an expiry).
    private static let columns = """
        projects.id, projects.account_id, name, bundle_id, app_apple_id, environments, transfer_policy, allow_xcode,
        require_secret_key_for_reads, app_account_token_policy, projects.created_at, updated_at,
        consumption_response, consumption_customer_consented, consumption_sample_content_provided,
        consumption_refund_preference,
        entitlement_tokens, entitlement_token_ttl_seconds, sandbox_access, sandbox_allowed_user_ids, finish_transactions,
        projects.app_purchase_entitlements ->> 'purchased_before_version' AS app_purchase_before_version,
        ARRAY(SELECT jsonb_array_elements_text(projects.app_purchase_entitlements -> 'entitlements'))
            AS app_purchase_entitlement_list,
        (SELECT k.public_key FROM project_keys k WHERE k.project_id = projects.id AND k.kind = 'public'
            AND k.expires_at IS NULL ORDER BY k.created_at DESC LIMIT 1) AS public_key
        """

    /// The columns `key(from:)` reads.
    private static let keyColumns = "id, kind, public_key, secret_key_hash, last4, created_at, expires_at"

    /// The project whose public key is `publicKey`, live at `now` (the hot path of every app request: one
    /// prepared statement through the unique index on `project_keys.public_key`).
    public func project(publicKey: String, at now: Date) throws -> Project? {
        try StorageErrors.mapping("project by public key") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.columns) FROM project_keys pk JOIN projects ON projects.id = pk.project_id
                    WHERE pk.public_key = \(publicKey) AND (pk.expires_at IS NULL OR pk.expires_at > \(now))
                    """).first.map(Self.project(from:))
            }
        }
    }

    /// The project with `id`.
    public func project(id: UUID) throws -> Project? {
        try StorageErrors.mapping("project by id") {
            try pool.withConnection { connection in
                try connection.query("SELECT \(unsafeSQL: Self.columns) FROM projects WHERE id = \(id)")
                    .first.map(Self.project(from:))
            }
        }
    }

    /// All projects, oldest first (ties broken by id so the order is stable).
    public func allProjects() throws -> [Project] {
        try StorageErrors.mapping("all projects") {
            try pool.withConnection { connection in
                try connection.query("SELECT \(unsafeSQL: Self.columns) FROM projects ORDER BY created_at, id")
                    .map(Self.project(from:))
            }
        }
    }

    /// Stores a new project with a fresh random id and its keys, in one transaction. A public key already in use
    /// → `.conflict`.
    public func createProject(_ new: NewProject, keys: [StoredProjectKey], now: Date) throws -> Project {
        try StorageErrors.mapping("create project") {
            try pool.transaction { connection in
                let id = UUID()
                let accountId = try Self.owningAccount(new.accountId, connection)
                try connection.execute("""
                    INSERT INTO projects (id, account_id, name, bundle_id, app_apple_id, environments, transfer_policy, allow_xcode,
                        require_secret_key_for_reads, app_account_token_policy, app_purchase_entitlements, created_at,
                        updated_at, consumption_response, consumption_customer_consented,
                        consumption_sample_content_provided, consumption_refund_preference,
                        entitlement_tokens, entitlement_token_ttl_seconds, sandbox_access, sandbox_allowed_user_ids,
                        finish_transactions)
                    VALUES (\(id), \(accountId), \(new.name), \(new.bundleId), \(Bind.int64(new.appAppleId)),
                        \(new.environments.map(\.rawValue)), \(new.transferPolicy.rawValue), \(new.allowXcode),
                        \(new.requireSecretKeyForReads), \(new.appAccountTokenPolicy.rawValue),
                        CASE WHEN \(Bind.text(new.appPurchaseEntitlements?.purchasedBeforeVersion))::text IS NULL THEN NULL
                            ELSE jsonb_build_object(
                                'purchased_before_version', \(Bind.text(new.appPurchaseEntitlements?.purchasedBeforeVersion))::text,
                                'entitlements', to_jsonb(\(new.appPurchaseEntitlements?.entitlements ?? [])::text[])) END,
                        \(now), \(now), \(new.consumption.response.rawValue), \(new.consumption.customerConsented),
                        \(new.consumption.sampleContentProvided), \(Bind.text(new.consumption.refundPreference?.rawValue)),
                        \(new.entitlementTokens), \(Int64(new.entitlementTokenTTLSeconds))::int4,
                        \(new.sandbox.access.rawValue), \(new.sandbox.allowedUserIds)::text[],
                        \(new.finishTransactions))
                    """)
                for key in keys { try Self.insert(key, projectId: id, connection) }
                try Self.announceChange(of: id, connection)
                let rows = try connection.query("SELECT \(unsafeSQL: Self.columns) FROM projects WHERE id = \(id)")
                guard let row = rows.first else { throw Self.missingRow("INSERT projects") }
                let project = try Self.project(from: row)
                try AuditRows.write(connection, accountId: accountId, projectId: id,
                                    target: "project:" + id.lowercasedText,
                                    changes: AuditRows.diff(nil, AuditRows.fields(project)))
                return project
            }
        }
    }

    /// The account a new project goes to, locked (`FOR KEY SHARE`) so it cannot be deleted before the project
    /// commits: `requested`, or else the server's only account. An unknown account → `.accountNotFound`; none
    /// requested while there are several → `.invalidInput` naming `account_id` (the rule of issue 24, here so the
    /// count and the insert are one transaction).
    static func owningAccount(_ requested: UUID?, _ connection: Connection) throws -> UUID {
        if let requested {
            guard try connection.query("SELECT id FROM accounts WHERE id = \(requested) FOR KEY SHARE").first != nil
            else { throw AccountAdministration.notFound(requested) }
            return requested
        }
        let rows = try connection.query("SELECT id FROM accounts ORDER BY created_at, id LIMIT 2 FOR KEY SHARE")
        guard rows.count == 1, let only = rows.first else {
            throw DomainError(.invalidInput, "Name the project's account.", details: [FieldProblem(
                path: ["account_id"],
                message: rows.isEmpty ? "No account exists: create one first" : "Required when more than one account exists")])
        }
        return try only.decode("id", as: UUID.self)
    }

    /// Applies `changes` under a row lock (read, merge with `ProjectChanges.applied(to:)`, write), so
    /// concurrent partial updates of different fields do not undo each other. Switching `app_account_token_policy`
    /// away from `ignore` also rewrites the project's UUID user ids to their canonical form, in the same transaction.
    public func updateProject(id: UUID, _ changes: ProjectChanges, now: Date) throws -> Project? {
        try StorageErrors.mapping("update project") {
            try pool.transaction { connection in
                let current = try connection.query(
                    "SELECT \(unsafeSQL: Self.columns) FROM projects WHERE id = \(id) FOR UPDATE"
                ).first.map(Self.project(from:))
                guard let current else { return nil }
                let next = changes.applied(to: current)
                try Self.announceChange(of: id, connection)
                let rows = try connection.query("""
                    UPDATE projects SET name = \(next.name), bundle_id = \(next.bundleId),
                        app_apple_id = \(Bind.int64(next.appAppleId)), environments = \(next.environments.map(\.rawValue)),
                        transfer_policy = \(next.transferPolicy.rawValue), allow_xcode = \(next.allowXcode),
                        require_secret_key_for_reads = \(next.requireSecretKeyForReads),
                        app_account_token_policy = \(next.appAccountTokenPolicy.rawValue),
                        app_purchase_entitlements = CASE
                            WHEN \(Bind.text(next.appPurchaseEntitlements?.purchasedBeforeVersion))::text IS NULL THEN NULL
                            ELSE jsonb_build_object(
                                'purchased_before_version', \(Bind.text(next.appPurchaseEntitlements?.purchasedBeforeVersion))::text,
                                'entitlements', to_jsonb(\(next.appPurchaseEntitlements?.entitlements ?? [])::text[])) END,
                        consumption_response = \(next.consumption.response.rawValue),
                        consumption_customer_consented = \(next.consumption.customerConsented),
                        consumption_sample_content_provided = \(next.consumption.sampleContentProvided),
                        consumption_refund_preference = \(Bind.text(next.consumption.refundPreference?.rawValue)),
                        entitlement_tokens = \(next.entitlementTokens),
                        entitlement_token_ttl_seconds = \(Int64(next.entitlementTokenTTLSeconds))::int4,
                        sandbox_access = \(next.sandbox.access.rawValue),
                        sandbox_allowed_user_ids = \(next.sandbox.allowedUserIds)::text[],
                        finish_transactions = \(next.finishTransactions),
                        updated_at = \(now)
                    WHERE id = \(id)
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                if current.appAccountTokenPolicy == .ignore && next.appAccountTokenPolicy != .ignore {
                    // From now on UUID user ids are read lowercase: rewrite the stored ones in this transaction
                    // (schema/0020), so no customer bound as UUID().uuidString loses a purchase or splits in two.
                    try connection.execute("SELECT bouncer_canonical_user_ids(\(id), \(now))")
                }
                let updated = try rows.first.map(Self.project(from:))
                try AuditRows.write(connection, changes: AuditRows.diff(
                    AuditRows.fields(current), updated.map(AuditRows.fields)))
                return updated
            }
        }
    }

    /// Deletes the project; its products, transactions, purchases, bindings and notifications go with it: the
    /// foreign keys to `projects` cascade, and the tables the receipt and the roll-ups write without one
    /// (schema/0075, 0076, 0080) are emptied first by `bouncer_project_purge`, after the receipts and derivations in
    /// flight for the project commit (an explicit call, not a trigger: Citus runs no trigger on a reference table).
    public func deleteProject(id: UUID) throws -> Bool {
        try StorageErrors.mapping("delete project") {
            try pool.transaction { connection in
                try connection.execute("SELECT bouncer_project_purge(\(id))")
                let deleted = try connection.query(
                    "DELETE FROM projects WHERE id = \(id) RETURNING \(unsafeSQL: Self.columns)").first
                guard let deleted else { return false }
                try Self.announceChange(of: id, connection)
                try AuditRows.write(connection, changes: AuditRows.diff(AuditRows.fields(try Self.project(from: deleted)), nil))
                return true
            }
        }
    }

    /// Applies `KeyRotationRules` under the project's row lock, so concurrent rotations of one project queue and
    /// each sees the keys the previous one left. The key set is rewritten whole (it holds a few rows).
    public func rotateKeys(id: UUID, _ replacements: [KeyReplacement], now: Date) throws -> Project? {
        try StorageErrors.mapping("rotate keys") {
            try pool.transaction { connection in
                guard try connection.query("SELECT 1 FROM projects WHERE id = \(id) FOR UPDATE").first != nil else {
                    return nil
                }
                let current = try connection.query(
                    "SELECT \(unsafeSQL: Self.keyColumns) FROM project_keys WHERE project_id = \(id)"
                ).map(Self.key(from:))
                let next = KeyRotationRules.apply(replacements, to: current, now: now)
                try connection.execute("DELETE FROM project_keys WHERE project_id = \(id)")
                for key in next { try Self.insert(key, projectId: id, connection) }
                try Self.announceChange(of: id, connection)
                // Which kinds were replaced: never a key's text or digest (redacted by name).
                try AuditRows.write(connection, changes: replacements.map {
                    AuditChange($0.newKey.kind.rawValue + "_key", .string("replaced"), .string("replaced"))
                })
                return try connection.query("""
                    UPDATE projects SET updated_at = \(now) WHERE id = \(id)
                    RETURNING \(unsafeSQL: Self.columns)
                    """).first.map(Self.project(from:))
            }
        }
    }

    /// The project's stored keys, newest first.
    public func keys(projectId: UUID) throws -> [StoredProjectKey] {
        try StorageErrors.mapping("project keys") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT \(unsafeSQL: Self.keyColumns) FROM project_keys WHERE project_id = \(projectId)
                    ORDER BY created_at DESC, id
                    """).map(Self.key(from:))
            }
        }
    }

    /// Creates or replaces a mapping; `.projectNotFound` when the project does not exist.
    public func setProduct(projectId: UUID, _ mapping: ProductMapping, now: Date) throws -> ProductMapping {
        try StorageErrors.mapping("set product") {
            try pool.transaction { connection in
                let rows = try connection.query("""
                    INSERT INTO products (project_id, product_id, entitlements, created_at, updated_at)
                    VALUES (\(projectId), \(mapping.productId), \(mapping.entitlements), \(now), \(now))
                    ON CONFLICT (project_id, product_id)
                    DO UPDATE SET entitlements = EXCLUDED.entitlements, updated_at = EXCLUDED.updated_at
                    RETURNING product_id, entitlements
                    """)
                guard let row = rows.first else { throw Self.missingRow("INSERT … RETURNING products") }
                try Self.announceChange(of: projectId, connection)
                let product = try Self.product(from: row)
                try AuditRows.write(connection, changes: [AuditChange(
                    "entitlements", .null, .list(product.entitlements.map { .string($0) }))])
                return product
            }
        }
    }

    /// The project's mappings, sorted by product id in code-point order (`COLLATE "C"`, like Swift's `<`).
    public func products(projectId: UUID) throws -> [ProductMapping] {
        try StorageErrors.mapping("products") {
            try pool.withConnection { connection in
                try connection.query("""
                    SELECT product_id, entitlements FROM products WHERE project_id = \(projectId)
                    ORDER BY product_id COLLATE "C"
                    """).map(Self.product(from:))
            }
        }
    }

    /// Deletes a mapping; false when there was none.
    public func deleteProduct(projectId: UUID, productId: String) throws -> Bool {
        try StorageErrors.mapping("delete product") {
            try pool.transaction { connection in
                let deleted = try connection.query("""
                    DELETE FROM products WHERE project_id = \(projectId) AND product_id = \(productId)
                    RETURNING product_id, entitlements
                    """).first
                guard let deleted else { return false }
                try Self.announceChange(of: projectId, connection)
                try AuditRows.write(connection, changes: [AuditChange(
                    "entitlements", .list(try Self.product(from: deleted).entitlements.map { .string($0) }), .null)])
                return true
            }
        }
    }

    // MARK: - What the cache loads

    /// A project and its keys (newest first), as `CachedProjectStore` holds them.
    struct Snapshot {
        var project: Project
        var keys: [StoredProjectKey]
    }

    /// The project with its keys; nil when it does not exist (deleted).
    func snapshot(projectId: UUID) throws -> Snapshot? {
        try StorageErrors.mapping("project snapshot") {
            try pool.withConnection { connection in
                guard let project = try connection.query(
                    "SELECT \(unsafeSQL: Self.columns) FROM projects WHERE id = \(projectId)"
                ).first.map(Self.project(from:)) else { return nil }
                let keys = try connection.query("""
                    SELECT \(unsafeSQL: Self.keyColumns) FROM project_keys WHERE project_id = \(projectId)
                    ORDER BY created_at DESC, id
                    """).map(Self.key(from:))
                return Snapshot(project: project, keys: keys)
            }
        }
    }

    /// Every project with its keys, from one snapshot (REPEATABLE READ) so no key is read without its project.
    func snapshotAll() throws -> [Snapshot] {
        try StorageErrors.mapping("all project snapshots") {
            try pool.transaction(isolation: .repeatableRead) { connection in
                let projects = try connection.query("SELECT \(unsafeSQL: Self.columns) FROM projects")
                    .map(Self.project(from:))
                var keys: [UUID: [StoredProjectKey]] = [:]
                let rows = try connection.query("""
                    SELECT project_id, \(unsafeSQL: Self.keyColumns) FROM project_keys ORDER BY created_at DESC, id
                    """)
                for row in rows {
                    keys[try row.decode("project_id", as: UUID.self), default: []].append(try Self.key(from: row))
                }
                return projects.map { Snapshot(project: $0, keys: keys[$0.id] ?? []) }
            }
        }
    }

    /// Tells every instance's cache, at this transaction's commit (and only if it commits), that the project
    /// changed. Admin changes are rare, so the commit-time lock `NOTIFY` takes costs nothing measurable here.
    static func announceChange(of projectId: UUID, _ connection: Connection) throws {
        try connection.execute(
            "SELECT pg_notify(\(CacheMessage.channel), \(CacheMessage.project(projectId).line))")
    }

    // MARK: - Rows

    static func project(from row: Row) throws -> Project {
        let policyName = try row.decode("transfer_policy", as: String.self)
        guard let policy = TransferPolicy(rawValue: policyName) else {
            throw PGError(code: .decoding, message: "projects.transfer_policy has unknown value \(policyName)")
        }
        let tokenPolicyName = try row.decode("app_account_token_policy", as: String.self)
        guard let tokenPolicy = AppAccountTokenPolicy(rawValue: tokenPolicyName) else {
            throw PGError(code: .decoding,
                          message: "projects.app_account_token_policy has unknown value \(tokenPolicyName)")
        }
        var project = Project(
            id: try row.decode("id", as: UUID.self),
            name: try row.decode("name", as: String.self),
            bundleId: try row.decode("bundle_id", as: String.self),
            appAppleId: try row.decode("app_apple_id", as: Int64?.self),
            environments: try row.decode("environments", as: [String].self).map(StoreEnvironment.init(rawValue:)),
            transferPolicy: policy,
            allowXcode: try row.decode("allow_xcode", as: Bool.self),
            requireSecretKeyForReads: try row.decode("require_secret_key_for_reads", as: Bool.self),
            appAccountTokenPolicy: tokenPolicy,
            appPurchaseEntitlements: try row.decode("app_purchase_before_version", as: String?.self).map {
                AppPurchaseEntitlements(
                    purchasedBeforeVersion: $0,
                    entitlements: try row.decode("app_purchase_entitlement_list", as: [String]?.self) ?? [])
            },
            // Every rotation leaves one current public key; "" only if rows were edited by hand.
            publicKey: try row.decode("public_key", as: String?.self) ?? "",
            createdAt: try row.decode("created_at", as: Date.self),
            updatedAt: try row.decode("updated_at", as: Date.self),
            accountId: try row.decode("account_id", as: UUID.self)
        )
        project.entitlementTokens = try row.decode("entitlement_tokens", as: Bool.self)
        project.finishTransactions = try row.decode("finish_transactions", as: Bool.self)
        project.entitlementTokenTTLSeconds = Int(try row.decode("entitlement_token_ttl_seconds", as: Int64.self))
        project.consumption = try consumptionSettings(from: row)
        // Values the CHECK constraint allows; anything else reads as the default.
        project.sandbox = SandboxAccessPolicy(
            access: SandboxAccess(rawValue: try row.decode("sandbox_access", as: String.self)) ?? .all,
            allowedUserIds: try row.decode("sandbox_allowed_user_ids", as: [String].self))
        return project
    }

    /// The refund defense columns (schema/0010); values the CHECK constraints allow, so anything else is corruption.
    static func consumptionSettings(from row: Row) throws -> ConsumptionSettings {
        let responseName = try row.decode("consumption_response", as: String.self)
        guard let response = ConsumptionResponse(rawValue: responseName) else {
            throw PGError(code: .decoding, message: "projects.consumption_response has unknown value \(responseName)")
        }
        let preferenceName = try row.decode("consumption_refund_preference", as: String?.self)
        let preference = try preferenceName.map { name in
            guard let value = RefundPreference(rawValue: name) else {
                throw PGError(code: .decoding, message: "projects.consumption_refund_preference has unknown value \(name)")
            }
            return value
        }
        return ConsumptionSettings(
            response: response, customerConsented: try row.decode("consumption_customer_consented", as: Bool.self),
            sampleContentProvided: try row.decode("consumption_sample_content_provided", as: Bool.self),
            refundPreference: preference)
    }

    static func key(from row: Row) throws -> StoredProjectKey {
        let kindName = try row.decode("kind", as: String.self)
        guard let kind = ProjectKeyKind(rawValue: kindName) else {
            throw PGError(code: .decoding, message: "project_keys.kind has unknown value \(kindName)")
        }
        return StoredProjectKey(
            id: try row.decode("id", as: UUID.self), kind: kind,
            publicKey: try row.decode("public_key", as: String?.self),
            secretKeyHash: try row.decode("secret_key_hash", as: [UInt8]?.self),
            last4: try row.decode("last4", as: String?.self),
            createdAt: try row.decode("created_at", as: Date.self),
            expiresAt: try row.decode("expires_at", as: Date?.self))
    }

    static func insert(_ key: StoredProjectKey, projectId: UUID, _ connection: Connection) throws {
        try connection.execute("""
            INSERT INTO project_keys (project_id, id, kind, public_key, secret_key_hash, last4, created_at, expires_at)
            VALUES (\(projectId), \(key.id), \(key.kind.rawValue), \(Bind.text(key.publicKey)),
                \(Bind.bytes(key.secretKeyHash)), \(Bind.text(key.last4)), \(key.createdAt), \(Bind.date(key.expiresAt)))
            """)
    }

    static func product(from row: Row) throws -> ProductMapping {
        ProductMapping(
            productId: try row.decode("product_id", as: String.self),
            entitlements: try row.decode("entitlements", as: [String].self))
    }

    static func missingRow(_ statement: String) -> PGError {
        PGError(code: .decoding, message: "\(statement) returned no row")
    }
}
