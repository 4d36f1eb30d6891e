public import Foundation

/// Which of a project's two credentials: the public key apps embed, or the secret key backends hold.
public enum ProjectKeyKind: String, Sendable, CaseIterable {
    /// `pk_…`: in the app binary and in the App Store Connect notification URL.
    case `public`
    /// `sk_…`: on the customer's backend; stored only as a hash.
    case secret

    /// How long the replaced key keeps working when a rotation names no grace: long enough for apps (public) or
    /// backends (secret) to ship the new key.
    public var defaultGraceSeconds: Int {
        switch self {
        case .public: return 30 * 86_400
        case .secret: return 86_400
        }
    }
}

/// One stored credential of a project: the current key of its kind (`expiresAt == nil`) or one retiring after a
/// rotation (it works until `expiresAt`).
public struct StoredProjectKey: Sendable, Equatable {
    /// Row identity (a random UUID).
    public var id: UUID
    /// Public or secret.
    public var kind: ProjectKeyKind
    /// The key itself, for public keys only (it is not a secret).
    public var publicKey: String?
    /// SHA-256 of the key, for secret keys only: the secret itself is never stored.
    public var secretKeyHash: [UInt8]?
    /// The secret key's last four characters, so an operator can tell keys apart; `nil` for keys made before 0005.
    public var last4: String?
    /// When the key was issued.
    public var createdAt: Date
    /// When the key stops working; `nil` for the current key.
    public var expiresAt: Date?

    /// Creates a value.
    public init(
        id: UUID = UUID(), kind: ProjectKeyKind, publicKey: String? = nil, secretKeyHash: [UInt8]? = nil,
        last4: String? = nil, createdAt: Date, expiresAt: Date? = nil
    ) {
        self.id = id
        self.kind = kind
        self.publicKey = publicKey
        self.secretKeyHash = secretKeyHash
        self.last4 = last4
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// A fresh public key, current from `now`.
    public static func current(publicKey: String, at now: Date) -> StoredProjectKey {
        StoredProjectKey(kind: .public, publicKey: publicKey, createdAt: now)
    }

    /// A fresh secret key, current from `now`, kept as `hash` and its last four characters.
    public static func current(secretKey: String, hash: [UInt8], at now: Date) -> StoredProjectKey {
        StoredProjectKey(kind: .secret, secretKeyHash: hash, last4: String(secretKey.suffix(4)), createdAt: now)
    }

    /// Whether the key is accepted at `now` (the expiry instant itself is already too late).
    public func isLive(at now: Date) -> Bool {
        expiresAt.map { now < $0 } ?? true
    }
}

/// One key to replace in a rotation, and how long the key it replaces keeps working.
public struct KeyReplacement: Sendable, Equatable {
    /// The new current key.
    public var newKey: StoredProjectKey
    /// Seconds the replaced key keeps working; `0` retires it at once.
    public var graceSeconds: Int
}

/// How a rotation changes a project's keys; the stores apply it under their own lock, so both agree.
///
/// Per kind: the new key becomes current; every older key of that kind works until the earlier of its own expiry
/// and `now + grace` (a rotation never extends a key, and `grace 0` cuts every older key at once, which is what a
/// leaked key needs); keys no longer live are dropped; at most `maxLiveKeysPerKind` stay live, the newest ones.
public enum KeyRotationRules {
    /// Live keys per kind after a rotation: the current one and up to two retiring ones.
    public static let maxLiveKeysPerKind = 3

    /// The project's keys after `replacements`, at `now`. Keys of kinds not replaced are kept as they are.
    public static func apply(_ replacements: [KeyReplacement], to keys: [StoredProjectKey], now: Date)
        -> [StoredProjectKey]
    {
        var result = keys
        for replacement in replacements {
            let kind = replacement.newKey.kind
            let cutoff = now.addingTimeInterval(TimeInterval(max(0, replacement.graceSeconds)))
            var sameKind: [StoredProjectKey] = []
            var others: [StoredProjectKey] = []
            for key in result {
                if key.kind == kind { sameKind.append(key) } else { others.append(key) }
            }
            var retiring: [StoredProjectKey] = []
            for var key in sameKind {
                key.expiresAt = min(key.expiresAt ?? cutoff, cutoff)
                if key.isLive(at: now) { retiring.append(key) }
            }
            // Newest first (ties: the later expiry first), so the bound drops the oldest keys.
            retiring.sort(by: newestFirst)
            var next = replacement.newKey
            next.expiresAt = nil
            result = others + [next] + retiring.prefix(maxLiveKeysPerKind - 1)
        }
        return result
    }

    /// The order keys are listed and kept in: the current key, then retiring keys by issue date, newest first
    /// (ties: the one expiring later first).
    public static func newestFirst(_ a: StoredProjectKey, _ b: StoredProjectKey) -> Bool {
        let far = Date.distantFuture
        return (a.expiresAt == nil ? 1 : 0, a.createdAt, a.expiresAt ?? far, a.id.uuidString)
            > (b.expiresAt == nil ? 1 : 0, b.createdAt, b.expiresAt ?? far, b.id.uuidString)
    }
}
