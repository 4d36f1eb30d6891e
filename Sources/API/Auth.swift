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
    static func authorizeAdmin(_ request: Request, adminDigest: [UInt8]?, hasher: any SecretKeyHashing) throws(HTTPError) {
        guard let adminDigest else { throw HTTPError.adminDisabled }
        guard let header = request.headers["Authorization"], let token = bearerToken(header),
              ProjectKeys.constantTimeEquals(hasher.hash(token), adminDigest) else {
            throw HTTPError.invalidAdminToken
        }
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
        try authorizeAdmin(request, adminDigest: adminDigest, hasher: deps.hasher)
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
