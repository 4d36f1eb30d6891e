public import Foundation

/// The limits every admin front end enforces (the admin API and the `bouncer project|product` CLI), in one place.
public enum ProjectRules {
    /// Display name length, in Unicode scalars.
    public static let nameLength = 1...200
    /// Bundle identifier length, in Unicode scalars.
    public static let bundleIdLength = 1...255
    /// App Store product identifier length, in Unicode scalars.
    public static let productIdLength = 1...256
    /// Entitlement identifier length, in Unicode scalars.
    public static let entitlementLength = 1...128
    /// Entitlements one product may grant.
    public static let maxEntitlements = 100
    /// The longest grace a rotation may give the replaced key: a year.
    public static let maxGraceSeconds = 365 * 86_400
    /// Environments a project may list (Xcode data is governed by `allowXcode`).
    public static let selectableEnvironments: [StoreEnvironment] = [.production, .sandbox]

    /// Every rule `new` breaks.
    public static func problems(in new: NewProject) -> [FieldProblem] {
        var out: [FieldProblem] = []
        checkString(new.name, ["name"], nameLength, &out)
        checkString(new.bundleId, ["bundle_id"], bundleIdLength, &out)
        checkAppAppleId(new.appAppleId, &out)
        checkEnvironments(new.environments, &out)
        if let setting = new.appPurchaseEntitlements { out += AppPurchaseRules.problems(in: setting) }
        out += EntitlementTokenRules.problems(ttlSeconds: new.entitlementTokenTTLSeconds)
        out += SandboxAccessRules.problems(allowedUserIds: new.sandbox.allowedUserIds)
        return out
    }

    /// Every rule `changes` breaks.
    public static func problems(in changes: ProjectChanges) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if let name = changes.name { checkString(name, ["name"], nameLength, &out) }
        if let bundleId = changes.bundleId { checkString(bundleId, ["bundle_id"], bundleIdLength, &out) }
        if let appAppleId = changes.appAppleId { checkAppAppleId(appAppleId, &out) }
        if let environments = changes.environments { checkEnvironments(environments, &out) }
        if let setting = changes.appPurchaseEntitlements, let setting { out += AppPurchaseRules.problems(in: setting) }
        if let ttl = changes.entitlementTokenTTLSeconds { out += EntitlementTokenRules.problems(ttlSeconds: ttl) }
        if let ids = changes.sandboxAllowedUserIds { out += SandboxAccessRules.problems(allowedUserIds: ids) }
        return out
    }

    /// Every rule a product id breaks (`productId` is its name in the admin API's URL).
    public static func problems(productId: String) -> [FieldProblem] {
        var out: [FieldProblem] = []
        checkString(productId, ["productId"], productIdLength, &out)
        return out
    }

    /// Every rule a product's entitlement list breaks.
    public static func problems(entitlements: [String]) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if entitlements.count > maxEntitlements {
            out.append(FieldProblem(path: ["entitlements"],
                                    message: "Array must contain at most \(maxEntitlements) element(s)"))
            return out
        }
        for (i, entitlement) in entitlements.enumerated() {
            out += problems(entitlement: entitlement, at: i)
        }
        return out
    }

    /// Every rule one entitlement (at `index` of its list) breaks.
    public static func problems(entitlement: String, at index: Int) -> [FieldProblem] {
        var out: [FieldProblem] = []
        checkString(entitlement, ["entitlements", String(index)], entitlementLength, &out)
        return out
    }

    /// Every rule a rotation's grace breaks.
    public static func problems(graceSeconds: Int) -> [FieldProblem] {
        if graceSeconds < 0 {
            return [FieldProblem(path: ["grace_seconds"], message: "Number must be greater than or equal to 0")]
        }
        if graceSeconds > maxGraceSeconds {
            return [FieldProblem(path: ["grace_seconds"],
                                 message: "Number must be less than or equal to \(maxGraceSeconds)")]
        }
        return []
    }

    /// Length in Unicode scalars (as JSON Schema counts) and no NUL (PostgreSQL text cannot hold U+0000).
    static func checkString(_ value: String, _ path: [String], _ length: ClosedRange<Int>,
                                    _ out: inout [FieldProblem]) {
        let scalars = value.unicodeScalars.count
        if scalars < length.lowerBound {
            out.append(FieldProblem(path: path, message: "String must contain at least \(length.lowerBound) character(s)"))
        } else if scalars > length.upperBound {
            out.append(FieldProblem(path: path, message: "String must contain at most \(length.upperBound) character(s)"))
        } else if value.utf8.contains(0) {
            out.append(FieldProblem(path: path, message: "String must not contain NUL characters"))
        }
    }

    private static func checkAppAppleId(_ value: Int64?, _ out: inout [FieldProblem]) {
        if let value, value < 1 {
            out.append(FieldProblem(path: ["app_apple_id"], message: "Number must be greater than or equal to 1"))
        }
    }

    private static func checkEnvironments(_ environments: [StoreEnvironment], _ out: inout [FieldProblem]) {
        if environments.isEmpty {
            out.append(FieldProblem(path: ["environments"], message: "Array must contain at least 1 element(s)"))
        }
        for (i, environment) in environments.enumerated() where !selectableEnvironments.contains(environment) {
            out.append(FieldProblem(
                path: ["environments", String(i)],
                message: "Invalid enum value. Expected " + selectableEnvironments.map { "'\($0)'" }.joined(separator: " | ")))
        }
    }
}

/// A project as the admin front ends show it: its settings and its live keys.
public struct AdministeredProject: Sendable, Equatable {
    /// Settings and the current public key.
    public var project: Project
    /// Live public keys, current first, then retiring ones newest first.
    public var publicKeys: [StoredProjectKey]
    /// Live secret keys (hashes never leave the store's callers' hands: front ends show dates and `last4`).
    public var secretKeys: [StoredProjectKey]
    /// The new secret key in clear: only in the answer to creation or a secret-key rotation, never stored.
    public var newSecretKey: String?
}

/// The admin use cases (create, show, update, delete projects; rotate keys; map products), shared by the admin API
/// and the CLI so both apply the same rules: front ends only translate their input and this output.
///
/// Throws `DomainError`: `.invalidInput` (with `details`), `.projectNotFound`, `.productNotFound`, and the store's.
public struct ProjectAdministration: Sendable {
    private let store: any ProjectStore
    private let hasher: any SecretKeyHashing
    private let now: @Sendable () -> Date
    private let generateKeys: @Sendable () -> ProjectKeys

    /// Use cases over `store`; keys come from `generateKeys` (the system CSPRNG unless a test says otherwise).
    public init(
        store: any ProjectStore, hasher: any SecretKeyHashing, now: @escaping @Sendable () -> Date,
        generateKeys: @escaping @Sendable () -> ProjectKeys = { ProjectKeys.generate() }
    ) {
        self.store = store
        self.hasher = hasher
        self.now = now
        self.generateKeys = generateKeys
    }

    /// Creates a project with fresh keys; the answer carries the secret key, shown this once.
    public func createProject(_ new: NewProject) throws -> AdministeredProject {
        try Self.require(ProjectRules.problems(in: new), "Invalid project settings.")
        let keys = generateKeys()
        let at = now()
        let project = try store.createProject(new, keys: [
            .current(publicKey: keys.publicKey, at: at),
            .current(secretKey: keys.secretKey, hash: hasher.hash(keys.secretKey), at: at),
        ], now: at)
        var shown = try view(project, at: at)
        shown.newSecretKey = keys.secretKey
        return shown
    }

    /// Creates a project for `principal`: a key or a member creates in its own account (another account named in
    /// `new` is the 404 of a nonexistent one), and a key limited to some projects creates none.
    public func createProject(_ new: NewProject, by principal: Principal) throws -> AdministeredProject {
        var new = new
        if let own = principal.accountId {
            if let named = new.accountId, named != own { throw AccountAdministration.notFound(named) }
            guard principal.reachesWholeAccount else { throw DomainError.permissionDenied(.projectsWrite) }
            new.accountId = own
        }
        return try createProject(new)
    }

    /// The projects `principal` reaches, oldest first.
    public func projects(for principal: Principal) throws -> [AdministeredProject] {
        let at = now()
        return try store.allProjects().filter { principal.reaches(project: $0.id, ofAccount: $0.accountId) }
            .map { try view($0, at: at) }
    }

    /// The project with `id`.
    public func project(id: UUID) throws -> AdministeredProject {
        let project = try store.existingProject(id: id)
        return try view(project, at: now())
    }

    /// Every project, oldest first.
    public func allProjects() throws -> [AdministeredProject] {
        let at = now()
        return try store.allProjects().map { try view($0, at: at) }
    }

    /// Applies a partial update.
    public func updateProject(id: UUID, _ changes: ProjectChanges) throws -> AdministeredProject {
        try Self.require(ProjectRules.problems(in: changes), "Invalid project settings.")
        let at = now()
        guard let project = try store.updateProject(id: id, changes, now: at) else { throw DomainError.projectNotFound(id) }
        return try view(project, at: at)
    }

    /// Deletes the project and everything stored for it.
    public func deleteProject(id: UUID) throws {
        guard try store.deleteProject(id: id) else { throw DomainError.projectNotFound(id) }
    }

    /// What to rotate: each kind with the grace (seconds) its replaced key keeps working.
    public struct Rotation: Sendable, Equatable {
        /// One kind to rotate and its grace.
        public struct Grace: Sendable, Equatable {
            /// Public or secret.
            public var kind: ProjectKeyKind
            /// Seconds the replaced key keeps working; `0` retires it at once.
            public var seconds: Int
        }

        /// The kinds to rotate, in order.
        public var graces: [Grace]

        /// Both keys, with `graceSeconds` or else each kind's default (30 days public, 24 h secret).
        public init(graceSeconds: Int? = nil) {
            graces = ProjectKeyKind.allCases.map { Grace(kind: $0, seconds: graceSeconds ?? $0.defaultGraceSeconds) }
        }

        /// One key, with `graceSeconds` or its default.
        public init(kind: ProjectKeyKind, graceSeconds: Int?) {
            graces = [Grace(kind: kind, seconds: graceSeconds ?? kind.defaultGraceSeconds)]
        }
    }

    /// Issues new keys per `rotation` (`KeyRotationRules`); the answer carries a new secret key when one was issued.
    public func rotateKeys(id: UUID, _ rotation: Rotation) throws -> AdministeredProject {
        try Self.require(rotation.graces.flatMap { ProjectRules.problems(graceSeconds: $0.seconds) },
                         "Invalid key rotation.")
        let keys = generateKeys()
        let at = now()
        var newSecret: String?
        let replacements = rotation.graces.map { grace -> KeyReplacement in
            switch grace.kind {
            case .public:
                return KeyReplacement(newKey: .current(publicKey: keys.publicKey, at: at), graceSeconds: grace.seconds)
            case .secret:
                newSecret = keys.secretKey
                return KeyReplacement(newKey: .current(secretKey: keys.secretKey, hash: hasher.hash(keys.secretKey),
                                                       at: at), graceSeconds: grace.seconds)
            }
        }
        guard let project = try store.rotateKeys(id: id, replacements, now: at) else { throw DomainError.projectNotFound(id) }
        var shown = try view(project, at: at)
        shown.newSecretKey = newSecret
        return shown
    }

    /// The project's product mappings, sorted by product id.
    public func products(projectId: UUID) throws -> [ProductMapping] {
        _ = try store.existingProject(id: projectId)
        return try store.products(projectId: projectId)
    }

    /// Creates or replaces what `productId` grants.
    public func setProduct(projectId: UUID, productId: String, entitlements: [String]) throws -> ProductMapping {
        try Self.require(ProjectRules.problems(productId: productId) + ProjectRules.problems(entitlements: entitlements),
                         "Invalid product mapping.")
        _ = try store.existingProject(id: projectId)
        return try store.setProduct(
            projectId: projectId, ProductMapping(productId: productId, entitlements: entitlements), now: now())
    }

    /// Deletes a product mapping.
    public func deleteProduct(projectId: UUID, productId: String) throws {
        _ = try store.existingProject(id: projectId)
        guard try store.deleteProduct(projectId: projectId, productId: productId) else {
            throw DomainError(.productNotFound, "No product \(productId) in project \(projectId.lowercasedText).")
        }
    }

    private func view(_ project: Project, at now: Date) throws -> AdministeredProject {
        let live = try store.keys(projectId: project.id).filter { $0.isLive(at: now) }
            .sorted(by: KeyRotationRules.newestFirst)
        return AdministeredProject(project: project, publicKeys: live.filter { $0.kind == .public },
                                   secretKeys: live.filter { $0.kind == .secret })
    }

    private static func require(_ problems: [FieldProblem], _ message: String) throws {
        if !problems.isEmpty { throw DomainError(.invalidInput, message, details: problems) }
    }
}
