public import Foundation

/// One entitlement in a token: its id and until when it is granted (Unix seconds; `nil` = no end known, e.g. a
/// non-consumable or an app purchase).
public struct TokenEntitlement: Sendable, Equatable {
    /// The entitlement id (as mapped by the project's products).
    public var id: String
    /// The latest access end among the active purchases granting it, in whole seconds (rounded down); `nil` when
    /// one of them grants it without an end.
    public var expiresAt: Int64?
}

/// The claims of an entitlement token (a JWT: RFC 7519 names, NumericDate seconds).
public struct EntitlementTokenClaims: Sendable, Equatable {
    /// `iss`: `BOUNCER_TOKEN_ISSUER`.
    public var issuer: String
    /// `sub`: the app's user id.
    public var subject: String
    /// `aud`: the project id (lowercase UUID).
    public var audience: String
    /// `iat`.
    public var issuedAt: Int64
    /// `exp`: see `EntitlementTokenRules.claims`.
    public var expiresAt: Int64
    /// `entitlements`, sorted by id; empty when the user has none active.
    public var entitlements: [TokenEntitlement]
}

/// The rules of entitlement tokens: lifetime bounds and the claims for a user at an instant.
public enum EntitlementTokenRules {
    /// `entitlement_token_ttl_seconds` when not set.
    public static let defaultTTLSeconds = 300
    /// The TTLs a project may choose: at least 30 s, at most a day.
    public static let ttlSeconds = 30...86_400
    /// How long a replaced signing key stays published at least: the longest token lifetime, so every token it
    /// signed outlives its key's presence in the JWKS.
    public static var retiredKeyPublication: TimeInterval { TimeInterval(ttlSeconds.upperBound) }

    /// Every rule a TTL breaks.
    public static func problems(ttlSeconds ttl: Int) -> [FieldProblem] {
        let path = ["entitlement_token_ttl_seconds"]
        if ttl < ttlSeconds.lowerBound {
            return [FieldProblem(path: path, message: "Number must be greater than or equal to \(ttlSeconds.lowerBound)")]
        }
        if ttl > ttlSeconds.upperBound {
            return [FieldProblem(path: path, message: "Number must be less than or equal to \(ttlSeconds.upperBound)")]
        }
        return []
    }

    /// The claims for `userId` given what they hold at `now`.
    ///
    /// `exp` = min(`iat` + TTL, the earliest entitlement end): a token never outlives an entitlement it lists. A user
    /// with no active entitlement gets a token with an empty list (a verified "nothing"), living the full TTL.
    public static func claims(issuer: String, userId: String, project: Project, summary: UserEntitlementSummary,
                              at now: Date) -> EntitlementTokenClaims {
        let iat = seconds(now)
        let entitlements = tokenEntitlements(summary)
        let (capped, overflow) = iat.addingReportingOverflow(Int64(project.entitlementTokenTTLSeconds))
        var exp = overflow ? Int64.max : capped
        if let earliest = entitlements.compactMap(\.expiresAt).min() { exp = min(exp, earliest) }
        return EntitlementTokenClaims(
            issuer: issuer, subject: userId, audience: project.id.lowercasedText, issuedAt: iat,
            expiresAt: exp, entitlements: entitlements)
    }

    /// Each active entitlement with the latest end among what grants it (`nil` if anything grants it without end).
    static func tokenEntitlements(_ summary: UserEntitlementSummary) -> [TokenEntitlement] {
        // entitlement id → end; `.some(nil)` = no end.
        var ends: [String: Int64?] = [:]
        func grant(_ id: String, _ end: Int64?) {
            guard let known = ends[id] else { ends[id] = end; return }
            guard let knownEnd = known, let end else { ends[id] = .some(nil); return }
            ends[id] = max(knownEnd, end)
        }
        for purchase in summary.purchases where purchase.grants {
            let end = purchase.evaluation.accessEndsAt.map(seconds)
            for id in purchase.owned.entitlements { grant(id, end) }
        }
        for app in summary.appPurchases {
            for id in app.entitlements { grant(id, nil) }
        }
        return summary.entitlements.map { id in TokenEntitlement(id: id, expiresAt: ends[id] ?? nil) }
    }

    /// Whole Unix seconds, rounded down (so a token never claims past an instant), clamped instead of trapping.
    public static func seconds(_ date: Date) -> Int64 {
        let t = date.timeIntervalSince1970.rounded(.down)
        return Int64(exactly: t) ?? (t > 0 ? Int64.max : Int64.min)
    }

    /// The keys the JWKS publishes from `keys` (newest first): the current one, the previous one, and any other
    /// replaced less than `retiredKeyPublication` ago (their tokens may still be live).
    public static func published(_ keys: [SigningKey], at now: Date) -> [SigningKey] {
        var previousSeen = false
        return keys.filter { key in
            guard let retiredAt = key.retiredAt else { return true }
            defer { previousSeen = true }
            return !previousSeen || now.timeIntervalSince(retiredAt) < retiredKeyPublication
        }
    }
}

/// A token signing key's public half, as the JWKS publishes it.
public struct SigningKey: Sendable, Equatable {
    /// `kid`: the first 16 hex digits of SHA-256 of the key's DER SubjectPublicKeyInfo.
    public var kid: String
    /// JWK `x`: the public point's x coordinate, base64url without padding.
    public var x: String
    /// JWK `y`.
    public var y: String
    /// When the key was made.
    public var createdAt: Date
    /// When a rotation replaced it; `nil` for the current key.
    public var retiredAt: Date?

    /// Creates a value.
    public init(kid: String, x: String, y: String, createdAt: Date, retiredAt: Date? = nil) {
        self.kid = kid
        self.x = x
        self.y = y
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}

/// A signing key as stored: public half and the sealed private key, sealed with associated data
/// `EntitlementTokens.associatedData(kid:)`.
public typealias StoredSigningKey = SealedKey<SigningKey>

/// A freshly generated or opened signing key: the only value that holds the private key in clear.
///
/// Printing it (`description`, `dump`, a log interpolation) shows the `kid` only.
public struct SigningPrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The key's id.
    public var kid: String
    /// The PKCS#8 PEM.
    public var pkcs8PEM: String

    /// Creates a value.
    public init(kid: String, pkcs8PEM: String) {
        self.kid = kid
        self.pkcs8PEM = pkcs8PEM
    }

    /// The kid, never the key.
    public var description: String { "SigningPrivateKey(kid: \(kid))" }
    /// Same as `description`.
    public var debugDescription: String { description }
    /// Reflection sees the kid only.
    public var customMirror: Mirror { Mirror(self, children: ["kid": kid]) }
}

/// Makes P-256 keys and signs tokens with them (ES256 over `Crypto`, implemented by the executable).
public protocol EntitlementTokenSigning: Sendable {
    /// A new random P-256 key: its public half (`createdAt` = `now`) and its private key.
    func generateKey(now: Date) throws -> (public: SigningKey, private: SigningPrivateKey)
    /// The compact JWS `{"alg":"ES256","kid":…,"typ":"JWT"}.claims.signature`.
    func sign(_ claims: EntitlementTokenClaims, with key: SigningPrivateKey) throws -> String
}

/// The server's token signing keys (not per project: one JWKS for the whole server).
///
/// Throws `DomainError` (`.serviceUnavailable` when the store cannot be reached).
public protocol SigningKeyStore: Sendable {
    /// The current key, if one exists.
    func currentSigningKey() throws -> StoredSigningKey?
    /// Stores `key` as the current key unless one exists (serialised across instances); the current key after.
    func insertFirstSigningKey(_ key: StoredSigningKey) throws -> StoredSigningKey
    /// Retires the current key (at `now`) and stores `key` as current, atomically; the key it replaced.
    func rotateSigningKey(to key: StoredSigningKey, now: Date) throws -> SigningKey?
    /// Stored public halves, newest first (at most a few dozen).
    func signingKeys() throws -> [SigningKey]
}

/// A token as the API answers it.
public struct IssuedEntitlementToken: Sendable, Equatable {
    /// The compact JWS.
    public var token: String
    /// Its claims, as signed.
    public var claims: EntitlementTokenClaims

    /// Its `exp`, as an instant.
    public var expiresAt: Date { Date(timeIntervalSince1970: TimeInterval(claims.expiresAt)) }
}

/// The entitlement-token use cases: issue a token, publish the keys, make the first key, rotate keys. Shared by the
/// API (issue, JWKS), `bouncer serve` (first key at start) and `bouncer signing-key rotate`.
public struct EntitlementTokens: Sendable {
    private let store: any SigningKeyStore
    private let purchases: any PurchaseStore
    private let sealer: (any CredentialSealing)?
    private let signer: any EntitlementTokenSigning
    private let issuer: String
    private let now: @Sendable () -> Date

    /// Use cases over the ports; without `sealer` (no `BOUNCER_ENCRYPTION_KEY`) nothing is signed or generated
    /// (`.encryptionKeyMissing`), while the JWKS still publishes stored public keys.
    public init(store: any SigningKeyStore, purchases: any PurchaseStore, sealer: (any CredentialSealing)?,
                signer: any EntitlementTokenSigning, issuer: String, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.purchases = purchases
        self.sealer = sealer
        self.signer = signer
        self.issuer = issuer
        self.now = now
    }

    /// What seals a private key is bound to: a sealed key copied to another row does not open.
    public static func associatedData(kid: String) -> [UInt8] { Array("bouncer.signing_key:\(kid)".utf8) }

    /// A token for `userId` in `project`, over `holdings` when given (what one request proved), else over
    /// everything the user holds now.
    /// - Throws: `.entitlementTokensDisabled`, `.encryptionKeyMissing`, the stores' and the sealer's errors.
    public func issue(project: Project, userId: String, holdings given: UserHoldings? = nil) throws -> IssuedEntitlementToken {
        guard project.entitlementTokens else {
            throw DomainError(.entitlementTokensDisabled, "Entitlement tokens are disabled for this project.")
        }
        let sealer = try requireSealer()
        let at = now()
        let holdings = try given ?? purchases.holdings(userId: userId, project: project)
        let summary = UserEntitlementSummary.summarize(holdings, for: project, userId: userId, at: at)
        let claims = EntitlementTokenRules.claims(issuer: issuer, userId: userId, project: project, summary: summary,
                                                  at: at)
        let stored = try store.currentSigningKey() ?? createFirstKey(sealer)
        let pem = try sealer.open(stored.sealedPrivateKey, associatedData: Self.associatedData(kid: stored.publicHalf.kid))
        let token = try signer.sign(claims, with: SigningPrivateKey(kid: stored.publicHalf.kid,
                                                                    pkcs8PEM: String(decoding: pem, as: UTF8.self)))
        return IssuedEntitlementToken(token: token, claims: claims)
    }

    /// The keys `GET /.well-known/jwks.json` publishes (`EntitlementTokenRules.published`).
    public func publishedKeys() throws -> [SigningKey] {
        EntitlementTokenRules.published(try store.signingKeys(), at: now())
    }

    /// The current key, generated and stored when there is none (first start; concurrent starts keep one).
    public func ensureCurrentKey() throws -> SigningKey {
        if let current = try store.currentSigningKey() { return current.publicHalf }
        return try createFirstKey(try requireSealer()).publicHalf
    }

    /// Makes a new current key; the replaced one stays published (`EntitlementTokenRules.published`).
    public func rotate() throws -> (current: SigningKey, previous: SigningKey?) {
        let sealed = try generateSealed(try requireSealer())
        let previous = try store.rotateSigningKey(to: sealed, now: sealed.publicHalf.createdAt)
        return (sealed.publicHalf, previous)
    }

    private func createFirstKey(_ sealer: any CredentialSealing) throws -> StoredSigningKey {
        try store.insertFirstSigningKey(try generateSealed(sealer))
    }

    private func generateSealed(_ sealer: any CredentialSealing) throws -> StoredSigningKey {
        let (publicKey, privateKey) = try signer.generateKey(now: now())
        let sealed = try sealer.seal(Array(privateKey.pkcs8PEM.utf8),
                                     associatedData: Self.associatedData(kid: publicKey.kid))
        return StoredSigningKey(publicHalf: publicKey, sealedPrivateKey: sealed)
    }

    private func requireSealer() throws -> any CredentialSealing {
        try sealer.required("Entitlement tokens cannot be signed: BOUNCER_ENCRYPTION_KEY is unset.")
    }
}
