public import Domain
/// What one tenant accepts: its app, the environments it serves, and whether Xcode data is allowed.
public struct VerificationPolicy: Sendable, Hashable {
    /// The tenant's bundle identifier; payloads must match exactly (case-sensitive, like Apple's).
    public var bundleId: String
    /// Environments whose data is accepted. `.xcode` here has no effect without `allowXcode`.
    public var environments: Set<AppStoreEnvironment>
    /// The tenant's App Store app id. When set, a Production payload must carry exactly this id, and
    /// any payload that carries an appAppleId must carry this one (Sandbox payloads may omit it).
    public var appAppleId: Int64?
    /// Accept StoreKit-Testing-in-Xcode data (signed locally, never by Apple), only together with `.sandbox` in
    /// `environments`. Off by default; see `SignedDataVerifier` for exactly what is checked on that path.
    public var allowXcode: Bool

    /// Creates a policy; `environments` defaults to Production only.
    public init(bundleId: String, environments: Set<AppStoreEnvironment> = [.production], appAppleId: Int64? = nil, allowXcode: Bool = false) {
        self.bundleId = bundleId
        self.environments = environments
        self.appAppleId = appAppleId
        self.allowXcode = allowXcode
    }

    /// Whether data claiming `environment` may pass (`StoreEnvironment.isAccepted`: StoreKit testing data needs the
    /// flag AND Sandbox among `environments`).
    func allows(_ environment: AppStoreEnvironment) -> Bool {
        environment.isAccepted(in: environments, allowXcode: allowXcode)
    }
}
