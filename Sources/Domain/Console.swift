public import Foundation
public import Primitives

/// The admin console's sign-in: a random session token in an `HttpOnly` cookie stands for the admin token.
///
/// Only the token's hash is stored (`ConsoleSessionStore`); the CSRF token is derived from the session token, so
/// nothing but the cookie's holder (a page of our origin, which reads it from the session route) can compute it.
public enum ConsoleSessionRules {
    /// How long a session lasts when the operator does not choose: 12 hours.
    public static let defaultLifetimeSeconds = 12 * 3600
    /// The longest lifetime `BOUNCER_CONSOLE_SESSION_HOURS` may set (7 days).
    public static let maxLifetimeSeconds = 7 * 86_400
    /// The cookie's name.
    public static let cookieName = "bouncer_session"
    /// The header a state-changing console request carries.
    public static let csrfHeader = "X-CSRF-Token"

    /// `cs_` followed by 64 hex digits (256 random bits) from `generator` (the system's CSPRNG in production).
    public static func generateToken(using generator: inout some RandomNumberGenerator) -> String {
        "cs_" + Hex.random(count: 32, using: &generator)
    }

    /// A fresh token from the system's CSPRNG.
    public static func generateToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return generateToken(using: &rng)
    }

    /// Whether `token` has the shape of a session token (checked before anything is hashed or looked up).
    public static func isTokenSyntax(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard utf8.count == 67, utf8.starts(with: "cs_".utf8) else { return false }
        return utf8.dropFirst(3).allSatisfy(Hex.isLowercaseDigit)
    }

    /// What a session stores of the admin token it was opened with: `hasher("console-session-binding:" + token)`.
    /// Never the token, and not the digest the bearer check compares (a database reader learns neither); a session
    /// whose fingerprint differs from the running server's was opened with another token and is refused.
    public static func adminFingerprint(adminToken: String, hasher: any SecretKeyHashing) -> [UInt8] {
        hasher.hash("console-session-binding:" + adminToken)
    }

    /// The CSRF token of a session: hex of `hasher("csrf:" + token)`. Deterministic, so a reloaded page can ask
    /// for it again; unguessable without the session token.
    public static func csrfToken(sessionToken: String, hasher: any SecretKeyHashing) -> String {
        Hex.encode(hasher.hash("csrf:" + sessionToken))
    }
}

/// A stored console session.
public struct ConsoleSession: Sendable, Equatable {
    /// When it ends.
    public var expiresAt: Date
    /// `ConsoleSessionRules.adminFingerprint` of the admin token it was opened with: the session ends when the
    /// server's admin token changes.
    public var adminFingerprint: [UInt8]
    /// Who the session acts as: `.operator` (opened with the admin token), or a member (opened with their email and
    /// password; their role read from the member's row, so a session never outlives the member).
    public var principal: Principal

    /// A session.
    public init(expiresAt: Date, adminFingerprint: [UInt8], principal: Principal = .operator) {
        self.expiresAt = expiresAt
        self.adminFingerprint = adminFingerprint
        self.principal = principal
    }
}

/// Console sessions, stored by the hash of their token.
public protocol ConsoleSessionStore: Sendable {
    /// Stores a new session bound to `adminFingerprint` and removes expired ones (so the table stays bounded by
    /// sign-ins per lifetime).
    func createSession(tokenHash: [UInt8], adminFingerprint: [UInt8], createdAt: Date, expiresAt: Date) throws
    /// Stores a new session of a member (ended when the member is removed, changes role or password).
    func createMemberSession(tokenHash: [UInt8], accountId: UUID, memberId: UUID, createdAt: Date, expiresAt: Date) throws
    /// The session when it exists and is live at `now`; nil otherwise.
    func session(tokenHash: [UInt8], at now: Date) throws -> ConsoleSession?
    /// Ends the session (sign-out); false when there was none.
    func deleteSession(tokenHash: [UInt8]) throws -> Bool
    /// Ends every session ("sign out everywhere"); the number ended.
    func deleteAllSessions() throws -> Int
}

/// The days the revenue dashboard covers: whole UTC days `[from, to]`, at most `maxDays`.
public struct OverviewRange: Sendable, Equatable {
    /// Midnight UTC of the first day.
    public var from: Date
    /// Midnight UTC of the day after the last one (exclusive end).
    public var to: Date
    /// The most days one request may ask for.
    public static let maxDays = 366

    /// A range of whole days; `to` is exclusive.
    public init(from: Date, to: Date) {
        self.from = from
        self.to = to
    }

    /// The number of days.
    public var days: Int { Int((to.timeIntervalSince(from) / 86_400).rounded()) }
}

/// One day of the overview.
public struct OverviewDay: Sendable, Equatable {
    /// Midnight UTC.
    public var day: Date
    /// Subscriptions (transactions with an expiry) active at the end of the day (or now, for today).
    public var activeSubscriptions: Int
    /// Entitlement grants active at the end of the day: each active purchase counts the entitlements its product
    /// maps to.
    public var activeEntitlements: Int
    /// First purchases (transaction id = original transaction id) made that day.
    public var newPurchases: Int
    /// Renewals (later transactions of a subscription) that day.
    public var renewals: Int
    /// Transactions revoked (refunded) that day.
    public var refunds: Int
    /// Subscriptions whose latest transaction expired that day (and were not renewed).
    public var expirations: Int
    /// Free trials ending that day followed by a paid transaction of the same subscription.
    public var trialConversions: Int
    /// Gross revenue that day per currency, in milli-units (Apple's `price`).
    public var revenue: [String: Int64]

    /// A day with every count zero.
    public init(day: Date) {
        self.day = day
        activeSubscriptions = 0
        activeEntitlements = 0
        newPurchases = 0
        renewals = 0
        refunds = 0
        expirations = 0
        trialConversions = 0
        revenue = [:]
    }
}

/// The revenue dashboard's numbers for one project.
public struct OverviewMetrics: Sendable, Equatable {
    /// The days, oldest first, one per day of the range.
    public var days: [OverviewDay]
    /// Gross revenue over the range per currency (milli-units).
    public var revenue: [String: Int64]
    /// Monthly recurring revenue estimate per currency (milli-units): each subscription active at the end of the
    /// range contributes its price scaled to 30 days by its period's length.
    public var mrr: [String: Int64]

    /// The overview.
    public init(days: [OverviewDay], revenue: [String: Int64], mrr: [String: Int64]) {
        self.days = days
        self.revenue = revenue
        self.mrr = mrr
    }
}

/// Computes the overview from stored transactions (SQL in Storage).
public protocol OverviewMetricsStore: Sendable {
    /// The overview of `projectId` over `range`, only `environment` when given; `now` bounds "active" and
    /// "expired" for today.
    func overview(projectId: UUID, range: OverviewRange, environment: StoreEnvironment?, now: Date) throws
        -> OverviewMetrics
}
