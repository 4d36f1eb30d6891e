import Domain
import Foundation
import HTTPCore

/// Who may call what: public keys in the path, secret keys and the admin token as bearer tokens.
enum Auth {
    /// The project a public key names. The syntax check runs first, so garbage never reaches the store; a
    /// well-formed unknown key answers exactly like a malformed one.
    static func project(publicKey: String?, deps: APIDependencies, suggestion: String) throws -> Project {
        guard let publicKey, ProjectKeys.isPublicKeySyntax(publicKey) else {
            throw HTTPError.invalidPublicKey(suggestion: suggestion)
        }
        guard let project = try deps.projects.project(publicKey: publicKey, at: deps.now()) else {
            throw HTTPError.invalidPublicKey(suggestion: suggestion)
        }
        return project
    }

    /// Enforces the project's read rule: a presented secret key must be right (even when not required);
    /// with `requireSecretKeyForReads`, one must be presented. Right means the current secret key or one still in
    /// its rotation grace.
    static func authorizeRead(_ request: Request, project: Project, deps: APIDependencies) throws {
        let presented = try presentsSecretKey(request, project: project, deps: deps)
        if !presented && project.requireSecretKeyForReads { throw HTTPError.secretKeyRequired }
    }

    /// Whether the request carries the project's secret key (`Authorization: Bearer sk_…`, the app's backend):
    /// `false` without an `Authorization` header; a presented key that is not right throws `invalidSecretKey`, so a
    /// caller never silently gets the public-key answer for a mistyped key.
    static func presentsSecretKey(_ request: Request, project: Project, deps: APIDependencies) throws -> Bool {
        guard let header = request.headers["Authorization"] else { return false }
        guard let token = bearerToken(header), ProjectKeys.isSecretKeySyntax(token) else {
            throw HTTPError.invalidSecretKey
        }
        try checkSecretKey(token, projectId: project.id, deps: deps)
        return true
    }

    /// Throws `invalidSecretKey` unless `token` is one of the project's live secret keys.
    private static func checkSecretKey(_ token: String, projectId: UUID, deps: APIDependencies) throws {
        let presented = deps.hasher.hash(token)
        // Every live hash is compared (no early exit), so timing does not tell which key matched.
        var matched = false
        for stored in try deps.projects.liveSecretKeyHashes(projectId: projectId, at: deps.now()) {
            matched = ProjectKeys.constantTimeEquals(presented, stored) || matched
        }
        guard matched else { throw HTTPError.invalidSecretKey }
    }

    /// Admin routes: disabled without a configured token, else `Bearer <token>` compared in constant time.
    ///
    /// `adminDigest` is the hash of the configured token; comparing digests keeps even the token's length secret.
    /// Wrong tokens count against the client's address (`APIDependencies.adminAuthFailures`): once it is locked
    /// out, the answer is 429 before anything is compared; a right token forgets its failures.
    static func authorizeAdmin(_ request: Request, adminDigest: [UInt8]?, deps: APIDependencies) throws(HTTPError) {
        guard let adminDigest else { throw HTTPError.adminDisabled }
        try checkAdminLockout(request, deps: deps)
        guard let header = request.headers["Authorization"] else { throw HTTPError.invalidAdminToken }
        guard let token = bearerToken(header), ProjectKeys.constantTimeEquals(deps.hasher.hash(token), adminDigest) else {
            throw adminAuthFailed(request, deps: deps, HTTPError.invalidAdminToken)
        }
        deps.adminAuthFailures.recordSuccess(request.clientKey.description)
    }

    /// 429 `AUTH_TOO_MANY_FAILURES` while the client's address is locked out of admin authentication.
    static func checkAdminLockout(_ request: Request, deps: APIDependencies) throws(HTTPError) {
        if let retryAfter = deps.adminAuthFailures.check(request.clientKey.description) {
            throw HTTPError.tooManyAdminAuthFailures(retryAfterSeconds: retryAfter)
        }
    }

    /// Counts a presented-but-wrong admin token against the client's address; returns `error` to throw. A request
    /// without credentials is not a guess and is not counted (the caller answers it without calling this).
    static func adminAuthFailed(_ request: Request, deps: APIDependencies, _ error: HTTPError) -> HTTPError {
        deps.adminAuthFailures.recordFailure(request.clientKey.description)
        return error
    }

    /// Routes about one project's users (`/v1/admin/projects/:id/users/…`): the admin token, or that project's secret
    /// key (a customer's backend). A bearer of `sk_…` form is checked only as the project's secret key (live ones,
    /// compared in constant time); anything else only as the admin token. An unknown project answers
    /// `PROJECT_NOT_FOUND` to the admin and `AUTH_INVALID_SECRET_KEY` to a secret key (no probing of project ids).
    static func authorizeAdminOrSecretKey(
        _ request: Request, projectId: UUID, adminDigest: [UInt8]?, deps: APIDependencies
    ) throws {
        if let header = request.headers["Authorization"], let token = bearerToken(header),
           ProjectKeys.isSecretKeySyntax(token) {
            try checkSecretKey(token, projectId: projectId, deps: deps)
            return
        }
        try authorizeAdmin(request, adminDigest: adminDigest, deps: deps)
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
            guard let token = Auth.bearerToken(header) else { return "anonymous" }
            return "bearer:" + Data(hasher.hash(token)).base64EncodedString()
        }
        if let session = APIHandlers.sessionCookie(request) {
            return "session:" + Data(hasher.hash(session)).base64EncodedString()
        }
        return "anonymous"
    }
}
