public import Domain
import Foundation
public import HTTPCore

/// Who an app or a customer's backend is: public keys in the path, secret keys as bearer tokens.
struct KeyAuth: Sendable {
    let projects: any ProjectStore
    let hasher: any SecretKeyHashing
    let now: @Sendable () -> Date

    /// The project a public key names. The syntax check runs first, so garbage never reaches the store; a
    /// well-formed unknown key answers exactly like a malformed one.
    func project(publicKey: String?, suggestion: String) throws -> Project {
        guard let publicKey, ProjectKeys.isPublicKeySyntax(publicKey) else {
            throw HTTPError.invalidPublicKey(suggestion: suggestion)
        }
        guard let project = try projects.project(publicKey: publicKey, at: now()) else {
            throw HTTPError.invalidPublicKey(suggestion: suggestion)
        }
        return project
    }

    /// `project(publicKey:suggestion:)`'s project when the projects' cache holds it (never blocks); nil for
    /// everything else, the refusals included (`project` gives them).
    func projectInMemory(_ publicKey: String?) -> Project? {
        guard let publicKey, ProjectKeys.isPublicKeySyntax(publicKey) else { return nil }
        return projects.projectInMemory(publicKey: publicKey, at: now())
    }

    /// Enforces the project's read rule: a presented secret key must be right (even when not required);
    /// with `requireSecretKeyForReads`, one must be presented. Right means the current secret key or one still in
    /// its rotation grace.
    func authorizeRead(_ request: Request, project: Project) throws {
        let presented = try presentsSecretKey(request, project: project)
        if !presented && project.requireSecretKeyForReads { throw HTTPError.secretKeyRequired }
    }

    /// Whether the request carries the project's secret key (`Authorization: Bearer sk_…`, the app's backend):
    /// `false` without an `Authorization` header; a presented key that is not right throws `invalidSecretKey`, so a
    /// caller never silently gets the public-key answer for a mistyped key.
    func presentsSecretKey(_ request: Request, project: Project) throws -> Bool {
        guard let header = request.headers["Authorization"] else { return false }
        guard let token = Self.bearerToken(header), ProjectKeys.isSecretKeySyntax(token) else {
            throw HTTPError.invalidSecretKey
        }
        try checkSecretKey(token, projectId: project.id)
        return true
    }

    /// Throws `invalidSecretKey` unless `token` is one of the project's live secret keys.
    func checkSecretKey(_ token: String, projectId: UUID) throws {
        let presented = hasher.hash(token)
        // Every live hash is compared (no early exit), so timing does not tell which key matched.
        var matched = false
        for stored in try projects.liveSecretKeyHashes(projectId: projectId, at: now()) {
            matched = ProjectKeys.constantTimeEquals(presented, stored) || matched
        }
        guard matched else { throw HTTPError.invalidSecretKey }
    }

    /// The credentials of `Bearer <token>` (RFC 6750 §2.1; the scheme is case-insensitive, RFC 9110 §11.1).
    static func bearerToken(_ header: String) -> String? {
        let utf8 = header.utf8
        guard utf8.count > 7 else { return nil }
        let scheme = utf8.prefix(6)
        guard zip(scheme, "bearer".utf8).allSatisfy({ ($0 | 0x20) == $1 }) else { return nil }
        var rest = utf8.dropFirst(6)
        guard rest.first == 0x20 else { return nil }
        while rest.first == 0x20 { rest = rest.dropFirst() }
        while rest.last == 0x20 || rest.last == 0x09 { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains(0x20) else { return nil }
        return String(decoding: rest, as: UTF8.self)
    }
}

extension Routes {
    /// The `BOUNCER_RATE_LIMIT_ADMIN` bucket of an admin request: `anonymous` without a credential (or with an
    /// `Authorization` that is no bearer token), else one bucket per presented credential (bearer token or console
    /// session cookie), named by its hash.
    ///
    /// The rate limiter runs before the API and without the database, so it cannot tell a right credential from a
    /// wrong one, and must not try (its answer would be an oracle beside the lockout). Keying by the credential is
    /// enough: only its holder can spend the admin's or a customer's secret-key budget, and strangers guessing are
    /// stopped by the per-address lockout (`APIDependencies.adminAuthFailures`) and the per-client limit.
    public static func adminRateLimitKey(_ request: Request, hasher: any SecretKeyHashing) -> String {
        if let header = request.headers["Authorization"] {
            guard let token = KeyAuth.bearerToken(header) else { return "anonymous" }
            return "bearer:" + Data(hasher.hash(token)).base64EncodedString()
        }
        if let session = AdminAuth.sessionCookie(request) {
            return "session:" + Data(hasher.hash(session)).base64EncodedString()
        }
        return "anonymous"
    }
}
