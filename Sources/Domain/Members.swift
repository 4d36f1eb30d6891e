public import Foundation
import Primitives

/// A person of an account: invited with a role, active once they set a password, optionally with TOTP.
public struct Member: Sendable, Equatable {
    /// Stable identifier.
    public var id: UUID
    /// The account they act in.
    public var accountId: UUID
    /// Normalized (trimmed, lower-case); unique within the account.
    public var email: String
    /// What they may do (`Role.permissions`).
    public var role: Role
    /// Whether they accepted the invite (set a password); until then they cannot sign in.
    public var active: Bool
    /// Whether sign-in asks for a TOTP code.
    public var totpEnabled: Bool
    /// When the pending invite stops working; nil once accepted.
    public var inviteExpiresAt: Date?
    /// When they were invited.
    public var createdAt: Date
    /// When the member last changed.
    public var updatedAt: Date

    /// Creates a value.
    public init(id: UUID, accountId: UUID, email: String, role: Role, active: Bool, totpEnabled: Bool,
                inviteExpiresAt: Date?, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.accountId = accountId
        self.email = email
        self.role = role
        self.active = active
        self.totpEnabled = totpEnabled
        self.inviteExpiresAt = inviteExpiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The principal the member acts as once signed in.
    public var principal: Principal { .member(id: id, accountId: accountId, role: role) }
}

/// A member just invited: the invite token appears in this value only, once.
public struct InvitedMember: Sendable, Equatable {
    /// The stored member.
    public var member: Member
    /// `iv_…`, never stored (only its digest is).
    public var inviteToken: String
}

/// A password as stored: PBKDF2-HMAC-SHA256 of the password under a random salt, with the iteration count it was
/// derived with (so the count can grow: older hashes keep verifying under theirs).
public struct StoredPassword: Sendable, Equatable {
    /// The derived key (32 bytes).
    public var hash: [UInt8]
    /// 16 random bytes, per password.
    public var salt: [UInt8]
    /// PBKDF2's iteration count.
    public var iterations: Int

    /// Creates a value.
    public init(hash: [UInt8], salt: [UInt8], iterations: Int) {
        self.hash = hash
        self.salt = salt
        self.iterations = iterations
    }
}

/// What sign-in reads of a member: never returned by any route.
public struct MemberCredentials: Sendable {
    /// The member.
    public var member: Member
    /// Nil until the invite is accepted.
    public var password: StoredPassword?
    /// The TOTP secret, sealed (`CredentialSealing`); nil: TOTP off.
    public var sealedTOTPSecret: SealedSecret?

    /// Creates a value.
    public init(member: Member, password: StoredPassword?, sealedTOTPSecret: SealedSecret?) {
        self.member = member
        self.password = password
        self.sealedTOTPSecret = sealedTOTPSecret
    }
}

/// The cryptography members need, from OpenSSL in production (`Crypto`, wired by the executable): Domain stays
/// free of C.
public protocol MemberCryptography: Sendable {
    /// PBKDF2-HMAC-SHA256 of `password` (its UTF-8) under `salt`, 32 bytes.
    func derive(password: String, salt: [UInt8], iterations: Int) -> [UInt8]
    /// The 6-digit TOTP code of `secret` at time step `step` (HMAC-SHA1, RFC 6238).
    func totpCode(secret: [UInt8], step: UInt64) -> String
    /// `count` bytes from a CSPRNG.
    func randomBytes(_ count: Int) -> [UInt8]
}

/// The rules of members, invites, passwords and TOTP, in one place for every front end.
public enum MemberRules {
    /// An invite works for 7 days, once.
    public static let inviteLifetimeSeconds: TimeInterval = 7 * 86_400
    /// The shortest password, in characters.
    public static let minPasswordLength = 12
    /// The longest password, in UTF-8 bytes (PBKDF2 hashes any length once per derivation; this bounds the body).
    public static let maxPasswordBytes = 1024
    /// PBKDF2-HMAC-SHA256 iterations of new passwords (OWASP's 2023 figure). Stored per password, so raising it
    /// affects new passwords and older ones keep verifying.
    public static let passwordIterations = 210_000
    /// Random salt per password, in bytes.
    public static let saltBytes = 16
    /// TOTP: 30-second steps, 6 digits, one step of clock drift either side (RFC 6238 §5.2).
    public static let totpPeriodSeconds = 30
    /// Steps accepted either side of the current one.
    public static let totpDriftSteps: UInt64 = 1
    /// TOTP secrets are 20 random bytes (160 bits, RFC 4226 §4's recommendation).
    public static let totpSecretBytes = 20
    /// Why TOTP cannot be turned on or checked without `BOUNCER_ENCRYPTION_KEY`.
    static let totpNeedsEncryptionKey = "TOTP secrets are stored encrypted: the server has no encryption key."
    /// The longest email address (RFC 5321's path limit).
    public static let maxEmailLength = 254

    /// Trimmed and lower-cased: how an email is stored and compared.
    public static func normalize(email: String) -> String {
        email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// Every rule a normalized email breaks (a plausible `local@domain`, not a full RFC 5322 parser).
    public static func problems(email: String) -> [FieldProblem] {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        let plausible = parts.count == 2 && parts.allSatisfy { !$0.isEmpty } && email.utf8.count <= maxEmailLength
            && !email.unicodeScalars.contains { $0.properties.isWhitespace || $0.value < 0x20 }
        return plausible ? [] : [FieldProblem(path: ["email"], message: "Invalid email address")]
    }

    /// Every rule a new password breaks.
    public static func problems(password: String) -> [FieldProblem] {
        if password.count < minPasswordLength {
            return [FieldProblem(path: ["password"], message: "Must be at least \(minPasswordLength) characters")]
        }
        if password.utf8.count > maxPasswordBytes {
            return [FieldProblem(path: ["password"], message: "Must be at most \(maxPasswordBytes) bytes")]
        }
        return []
    }

    /// A new invite token: `iv_` and 64 lowercase hex digits (256 random bits, so its SHA-256 needs no salt).
    public static func generateInviteToken(using generator: inout some RandomNumberGenerator) -> String {
        "iv_" + Hex.random(count: 32, using: &generator)
    }

    /// Whether `text` has the shape of an invite token (checked before anything is hashed or looked up).
    public static func isInviteTokenSyntax(_ text: String) -> Bool {
        text.hasPrefix("iv_") && text.utf8.count == 67 && text.utf8.dropFirst(3).allSatisfy(Hex.isLowercaseDigit)
    }

    /// Whether a caller of role `caller` (nil: the operator) may give `role` to someone, or change or remove
    /// someone who has it: never above their own role, and only owners make or touch owners (an admin has every
    /// permission an owner has, so "includes" alone would let an admin raise anyone to owner).
    public static func mayAssign(_ role: Role, by caller: Role?) -> Bool {
        guard let caller else { return true }
        if role == .owner { return caller == .owner }
        return caller.includes(role)
    }

    /// The `otpauth://` URI authenticator apps read (Google Authenticator's Key Uri Format).
    public static func otpauthURI(email: String, secret: [UInt8]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~@+")
        let label = email.addingPercentEncoding(withAllowedCharacters: allowed) ?? email
        return "otpauth://totp/Bouncer:\(label)?secret=\(Base32.encode(secret, padding: false))&issuer=Bouncer"
            + "&algorithm=SHA1&digits=6&period=\(totpPeriodSeconds)"
    }

    /// The associated data a member's TOTP secret is sealed with: a secret copied to another member's row fails to
    /// open.
    public static func totpAssociatedData(memberId: UUID) -> [UInt8] {
        Array(("member-totp:" + memberId.lowercasedText).utf8)
    }
}

/// Members in PostgreSQL (`PostgresMemberStore`). Throws `DomainError` (`.serviceUnavailable`, `.memberEmailTaken`,
/// `.lastOwner`…).
public protocol MemberStore: Sendable {
    /// Stores an invited member with the SHA-256 of the invite token: `.memberEmailTaken` when the account has one
    /// with that email.
    func createMember(_ member: Member, inviteHash: [UInt8]) throws -> Member
    /// The account's members, oldest first.
    func members(accountId: UUID) throws -> [Member]
    /// One member of the account.
    func member(accountId: UUID, id: UUID) throws -> Member?
    /// Changes the role, ending the member's sessions, atomically with the check that the account keeps an active
    /// owner (`.lastOwner`); nil when there is no such member.
    func updateRole(accountId: UUID, id: UUID, role: Role, now: Date) throws -> Member?
    /// Removes the member (their sessions go with them) unless they are the account's last active owner
    /// (`.lastOwner`); false when there is no such member.
    func deleteMember(accountId: UUID, id: UUID) throws -> Bool
    /// Redeems a live, unused invite by its digest: sets the password, forgets the invite, ends the member's
    /// sessions. Nil when no live invite has that digest.
    func acceptInvite(hash: [UInt8], password: StoredPassword, now: Date) throws -> Member?
    /// The oldest active membership with `email` (normalized) — of `accountId` when given — with its credentials.
    func credentials(email: String, accountId: UUID?) throws -> MemberCredentials?
    /// Stores (replaces) the member's sealed TOTP secret and forgets the last used step; false when no such member.
    func setTOTPSecret(accountId: UUID, id: UUID, sealed: SealedSecret, now: Date) throws -> Bool
    /// Records `step` as the member's last used TOTP step if it is later than the stored one, atomically: false
    /// when it is not (a replayed or older code).
    func useTOTPStep(accountId: UUID, id: UUID, step: Int64) throws -> Bool
}

/// How a member's sign-in ended.
public enum MemberSignIn: Sendable, Equatable {
    /// Email and password (and code, when TOTP is on) were right.
    case signedIn(Member)
    /// Unknown email, wrong password, or an account without a password yet: one answer.
    case failed
    /// The password was right but TOTP is on and no code came.
    case totpRequired
    /// The password was right but the code was wrong or already used.
    case totpInvalid
}

/// The member use cases: invites, roles, passwords, TOTP and sign-in. The route already checked the permission and
/// that the principal reaches the account in the path; these check what depends on roles.
///
/// Throws `DomainError`: `.invalidInput`, `.memberNotFound`, `.memberEmailTaken`, `.lastOwner`, `.inviteInvalid`,
/// `.permissionDenied`, `.encryptionKeyMissing`, and the stores'.
public struct MemberAdministration: Sendable {
    private let store: any MemberStore
    private let crypto: any MemberCryptography
    private let hasher: any SecretKeyHashing
    private let sealer: (any CredentialSealing)?
    private let now: @Sendable () -> Date
    /// What an unknown email's sign-in verifies against, so it costs what a known one's does.
    private let dummy: StoredPassword

    /// Use cases over `store`.
    public init(store: any MemberStore, crypto: any MemberCryptography, hasher: any SecretKeyHashing,
                sealer: (any CredentialSealing)?, now: @escaping @Sendable () -> Date) {
        self.store = store
        self.crypto = crypto
        self.hasher = hasher
        self.sealer = sealer
        self.now = now
        dummy = StoredPassword(hash: [UInt8](repeating: 0, count: 32), salt: [UInt8](repeating: 0, count: MemberRules.saltBytes),
                               iterations: MemberRules.passwordIterations)
    }

    /// Invites `email` to the account with `role`: the invite token is in the result only.
    public func invite(accountId: UUID, email rawEmail: String, role: Role, by principal: Principal) throws -> InvitedMember {
        let email = MemberRules.normalize(email: rawEmail)
        try Self.require(MemberRules.problems(email: email), "Invalid member.")
        try Self.requireAssignable(role, by: principal)
        var rng = SystemRandomNumberGenerator()
        let token = MemberRules.generateInviteToken(using: &rng)
        let at = now()
        let member = Member(id: UUID(), accountId: accountId, email: email, role: role, active: false,
                            totpEnabled: false, inviteExpiresAt: at.addingTimeInterval(MemberRules.inviteLifetimeSeconds),
                            createdAt: at, updatedAt: at)
        return InvitedMember(member: try store.createMember(member, inviteHash: hasher.hash(token)), inviteToken: token)
    }

    /// The account's members, oldest first.
    public func members(accountId: UUID) throws -> [Member] { try store.members(accountId: accountId) }

    /// One member of the account.
    public func member(accountId: UUID, id: UUID) throws -> Member {
        guard let member = try store.member(accountId: accountId, id: id) else { throw Self.notFound(id) }
        return member
    }

    /// Gives the member `role` (their sessions end): neither their present role nor the new one may be above the
    /// caller's.
    public func changeRole(accountId: UUID, id: UUID, to role: Role, by principal: Principal) throws -> Member {
        let current = try member(accountId: accountId, id: id)
        try Self.requireAssignable(current.role, by: principal)
        try Self.requireAssignable(role, by: principal)
        guard let updated = try store.updateRole(accountId: accountId, id: id, role: role, now: now()) else {
            throw Self.notFound(id)
        }
        return updated
    }

    /// Removes the member (their sessions end).
    public func remove(accountId: UUID, id: UUID, by principal: Principal) throws {
        let current = try member(accountId: accountId, id: id)
        try Self.requireAssignable(current.role, by: principal)
        guard try store.deleteMember(accountId: accountId, id: id) else { throw Self.notFound(id) }
    }

    /// Sets the password of the invite's member (single use; one error for an unknown, used or expired token).
    public func acceptInvite(token: String, password: String) throws -> Member {
        try Self.require(MemberRules.problems(password: password), "Invalid password.")
        guard MemberRules.isInviteTokenSyntax(token) else { throw Self.inviteInvalid }
        let stored = newPassword(password)
        guard let member = try store.acceptInvite(hash: hasher.hash(token), password: stored, now: now()) else {
            throw Self.inviteInvalid
        }
        return member
    }

    /// Turns TOTP on (or replaces its secret) and returns the `otpauth://` URI, the secret's only appearance. A
    /// member may do it for themself; anyone else needs `members.manage` and a role at least the member's.
    public func enableTOTP(accountId: UUID, id: UUID, by principal: Principal) throws -> (member: Member, uri: String) {
        let isSelf = principal.isMember(id.uuidString)
        if !isSelf { try principal.require(.membersManage) }
        let current = try member(accountId: accountId, id: id)
        if !isSelf { try Self.requireAssignable(current.role, by: principal) }
        let sealer = try sealer.required(MemberRules.totpNeedsEncryptionKey)
        let secret = crypto.randomBytes(MemberRules.totpSecretBytes)
        let sealed = try sealer.seal(secret, associatedData: MemberRules.totpAssociatedData(memberId: id))
        guard try store.setTOTPSecret(accountId: accountId, id: id, sealed: sealed, now: now()) else {
            throw Self.notFound(id)
        }
        var updated = current
        updated.totpEnabled = true
        return (updated, MemberRules.otpauthURI(email: current.email, secret: secret))
    }

    /// Checks a sign-in. An unknown email (or one without a password yet) verifies against a dummy hash, so it
    /// costs what a wrong password does; both answer `.failed`.
    public func signIn(email rawEmail: String, password: String, totp: String?, accountId: UUID?) throws -> MemberSignIn {
        let email = MemberRules.normalize(email: rawEmail)
        let found = try store.credentials(email: email, accountId: accountId)
        let stored = found?.password ?? dummy
        let derived = crypto.derive(password: password, salt: stored.salt, iterations: stored.iterations)
        guard let found, found.password != nil, ProjectKeys.constantTimeEquals(derived, stored.hash) else {
            return .failed
        }
        guard let sealed = found.sealedTOTPSecret else { return .signedIn(found.member) }
        guard let totp, !totp.isEmpty else { return .totpRequired }
        let sealer = try sealer.required(MemberRules.totpNeedsEncryptionKey)
        let secret = try sealer.open(sealed, associatedData: MemberRules.totpAssociatedData(memberId: found.member.id))
        let current = Self.step(now())
        let code = Array(totp.utf8)
        // Every candidate is computed and compared (no early exit), then the matching step is claimed once.
        var matched: UInt64?
        let first = current >= MemberRules.totpDriftSteps ? current - MemberRules.totpDriftSteps : 0
        for step in first...(current &+ MemberRules.totpDriftSteps) {
            if ProjectKeys.constantTimeEquals(Array(crypto.totpCode(secret: secret, step: step).utf8), code) {
                matched = step
            }
        }
        guard let matched, matched <= UInt64(Int64.max),
              try store.useTOTPStep(accountId: found.member.accountId, id: found.member.id, step: Int64(matched)) else {
            return .totpInvalid
        }
        return .signedIn(found.member)
    }

    /// The TOTP step of `date` (RFC 6238 §4.2, T0 = 0).
    public static func step(_ date: Date) -> UInt64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return UInt64(min((seconds / Double(MemberRules.totpPeriodSeconds)).rounded(.down), 1e15))
    }

    private func newPassword(_ password: String) -> StoredPassword {
        let salt = crypto.randomBytes(MemberRules.saltBytes)
        return StoredPassword(hash: crypto.derive(password: password, salt: salt, iterations: MemberRules.passwordIterations),
                              salt: salt, iterations: MemberRules.passwordIterations)
    }

    private static func requireAssignable(_ role: Role, by principal: Principal) throws {
        guard MemberRules.mayAssign(role, by: principal.role) else {
            throw DomainError(.permissionDenied, "This credential may not give or change the role \(role.rawValue): "
                              + "it is above the credential's own.",
                              details: [FieldProblem(path: ["role"], message: role.rawValue)])
        }
    }

    private static func require(_ problems: [FieldProblem], _ message: String) throws {
        if !problems.isEmpty { throw DomainError(.invalidInput, message, details: problems) }
    }

    /// The 404 of a member that does not exist in the account.
    public static func notFound(_ id: UUID) -> DomainError {
        DomainError(.memberNotFound, "No member \(id.lowercasedText) in this account.")
    }

    /// An invite token that is unknown, used or expired: one answer for the three.
    public static let inviteInvalid = DomainError(.inviteInvalid, "The invite token is not valid.")
}
