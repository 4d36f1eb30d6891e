import Domain
import Foundation
import Postgres

/// Projects (tenants), their keys and product mappings, in PostgreSQL.
///
/// Every statement names the project by id (or by its unique public key), so no call can reach another
/// tenant's rows. Errors: see `StorageErrors` (`.serviceUnavailable`, `.conflict`, `.projectNotFound`).
public final class PostgresProjectStore: ProjectStore {
    private let pool: ConnectionPool

    /// A store over `pool`; the pool's lifetime is the caller's.
    public init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// The columns `project(from:)` reads, in one place so every query returns the same shape.
    private static let columns = """
        id, name, bundle_id, app_apple_id, environments, transfer_policy, allow_xcode,
        require_secret_key_for_reads, public_key, created_at, updated_at
        """

    /// The project whose public key is `publicKey` (the hot path of every app request: one prepared statement).
    public func project(publicKey: String) throws -> Project? {
        try StorageErrors.mapping("project by public key") {
            try pool.withConnection { connection in
                try connection.query(
                    "SELECT \(unsafeSQL: Self.columns) FROM projects WHERE public_key = \(publicKey)"
                ).first.map(Self.project(from:))
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

    /// Stores a new project with a fresh random id. A public key already in use → `.conflict`.
    public func createProject(_ new: NewProject, publicKey: String, secretKeyHash: [UInt8], now: Date) throws
        -> Project
    {
        try StorageErrors.mapping("create project") {
            try pool.withConnection { connection in
                let rows = try connection.query("""
                    INSERT INTO projects (id, name, bundle_id, app_apple_id, environments, transfer_policy, allow_xcode,
                        require_secret_key_for_reads, public_key, secret_key_hash, created_at, updated_at)
                    VALUES (\(UUID()), \(new.name), \(new.bundleId), \(Bind.int64(new.appAppleId)),
                        \(new.environments.map(\.rawValue)), \(new.transferPolicy.rawValue), \(new.allowXcode),
                        \(new.requireSecretKeyForReads), \(publicKey), \(secretKeyHash), \(now), \(now))
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                guard let row = rows.first else { throw Self.missingRow("INSERT … RETURNING projects") }
                return try Self.project(from: row)
            }
        }
    }

    /// Applies `changes` under a row lock (read, merge with `ProjectChanges.applied(to:)`, write), so
    /// concurrent partial updates of different fields do not undo each other.
    public func updateProject(id: UUID, _ changes: ProjectChanges, now: Date) throws -> Project? {
        try StorageErrors.mapping("update project") {
            try pool.transaction { connection in
                let current = try connection.query(
                    "SELECT \(unsafeSQL: Self.columns) FROM projects WHERE id = \(id) FOR UPDATE"
                ).first.map(Self.project(from:))
                guard let current else { return nil }
                let next = changes.applied(to: current)
                let rows = try connection.query("""
                    UPDATE projects SET name = \(next.name), bundle_id = \(next.bundleId),
                        app_apple_id = \(Bind.int64(next.appAppleId)), environments = \(next.environments.map(\.rawValue)),
                        transfer_policy = \(next.transferPolicy.rawValue), allow_xcode = \(next.allowXcode),
                        require_secret_key_for_reads = \(next.requireSecretKeyForReads), updated_at = \(now)
                    WHERE id = \(id)
                    RETURNING \(unsafeSQL: Self.columns)
                    """)
                return try rows.first.map(Self.project(from:))
            }
        }
    }

    /// Deletes the project; its products, transactions, purchases, bindings and notifications go with it
    /// (every tenant table's foreign key to `projects` cascades).
    public func deleteProject(id: UUID) throws -> Bool {
        try StorageErrors.mapping("delete project") {
            try pool.withConnection { connection in
                try connection.execute("DELETE FROM projects WHERE id = \(id)") > 0
            }
        }
    }

    /// Replaces both keys at once: the old public key stops resolving as soon as this commits.
    public func rotateKeys(id: UUID, publicKey: String, secretKeyHash: [UInt8], now: Date) throws -> Project? {
        try StorageErrors.mapping("rotate keys") {
            try pool.withConnection { connection in
                try connection.query("""
                    UPDATE projects SET public_key = \(publicKey), secret_key_hash = \(secretKeyHash), updated_at = \(now)
                    WHERE id = \(id)
                    RETURNING \(unsafeSQL: Self.columns)
                    """).first.map(Self.project(from:))
            }
        }
    }

    /// The stored SHA-256 of the project's secret key.
    public func secretKeyHash(projectId: UUID) throws -> [UInt8]? {
        try StorageErrors.mapping("secret key hash") {
            try pool.withConnection { connection in
                try connection.query("SELECT secret_key_hash FROM projects WHERE id = \(projectId)")
                    .first?.decode("secret_key_hash", as: [UInt8].self)
            }
        }
    }

    /// Creates or replaces a mapping; `.projectNotFound` when the project does not exist.
    public func setProduct(projectId: UUID, _ mapping: ProductMapping, now: Date) throws -> ProductMapping {
        try StorageErrors.mapping("set product") {
            try pool.withConnection { connection in
                let rows = try connection.query("""
                    INSERT INTO products (project_id, product_id, entitlements, created_at, updated_at)
                    VALUES (\(projectId), \(mapping.productId), \(mapping.entitlements), \(now), \(now))
                    ON CONFLICT (project_id, product_id)
                    DO UPDATE SET entitlements = EXCLUDED.entitlements, updated_at = EXCLUDED.updated_at
                    RETURNING product_id, entitlements
                    """)
                guard let row = rows.first else { throw Self.missingRow("INSERT … RETURNING products") }
                return try Self.product(from: row)
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
            try pool.withConnection { connection in
                try connection.execute(
                    "DELETE FROM products WHERE project_id = \(projectId) AND product_id = \(productId)") > 0
            }
        }
    }

    // MARK: - Rows

    static func project(from row: Row) throws -> Project {
        let policyName = try row.decode("transfer_policy", as: String.self)
        guard let policy = TransferPolicy(rawValue: policyName) else {
            throw PGError(code: .decoding, message: "projects.transfer_policy has unknown value \(policyName)")
        }
        return Project(
            id: try row.decode("id", as: UUID.self),
            name: try row.decode("name", as: String.self),
            bundleId: try row.decode("bundle_id", as: String.self),
            appAppleId: try row.decode("app_apple_id", as: Int64?.self),
            environments: try row.decode("environments", as: [String].self).map(StoreEnvironment.init(rawValue:)),
            transferPolicy: policy,
            allowXcode: try row.decode("allow_xcode", as: Bool.self),
            requireSecretKeyForReads: try row.decode("require_secret_key_for_reads", as: Bool.self),
            publicKey: try row.decode("public_key", as: String.self),
            createdAt: try row.decode("created_at", as: Date.self),
            updatedAt: try row.decode("updated_at", as: Date.self)
        )
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
