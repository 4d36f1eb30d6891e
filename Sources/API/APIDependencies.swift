import Domain
import Foundation

/// Everything the API needs, as ports: the executable wires the real adapters, tests wire fakes.
public struct APIDependencies: Sendable {
    /// Projects, keys and product mappings.
    public var projects: any ProjectStore
    /// Transactions, purchases and user bindings.
    public var purchases: any PurchaseStore
    /// Verifies signed App Store data for a project.
    public var verifier: any SignedDataVerifying
    /// Hashes secret keys (for storage and comparison).
    public var hasher: any SecretKeyHashing
    /// `BOUNCER_ADMIN_TOKEN`; `nil` (or empty) disables the admin API (404 `ADMIN_API_DISABLED`).
    public var adminToken: String?
    /// The clock; status is always evaluated at this instant.
    public var now: @Sendable () -> Date
    /// One line per server-side failure (500, 503), with the request id; never bodies, keys, tokens or JWS.
    public var log: @Sendable (String) -> Void

    /// Creates the dependencies.
    public init(
        projects: any ProjectStore, purchases: any PurchaseStore, verifier: any SignedDataVerifying,
        hasher: any SecretKeyHashing, adminToken: String?, now: @escaping @Sendable () -> Date = { Date() },
        log: @escaping @Sendable (String) -> Void
    ) {
        self.projects = projects
        self.purchases = purchases
        self.verifier = verifier
        self.hasher = hasher
        self.adminToken = adminToken
        self.now = now
        self.log = log
    }
}
