import Domain
import Foundation
import HTTPCore

/// Who an operator is: the admin token as a bearer token, or a console session standing in for it
/// (`ConsoleController` signs in and out). The admin API is disabled without a configured token.
struct AdminAuth: Sendable {
    /// For the support routes a customer's backend may call with its project's secret key.
    let keys: KeyAuth
    /// The admin token's digest; `nil` when the admin API is disabled.
    let digest: [UInt8]?
    /// What console sessions store of the admin token (`ConsoleSessionRules.adminFingerprint`); `nil` when disabled.
    let fingerprint: [UInt8]?
    /// `BOUNCER_ADMIN_TOKEN`: a live console session continues as a request that presented it.
    let token: String?
    let hasher: any SecretKeyHashing
    /// Wrong admin tokens per client address (`APIDependencies.adminAuthFailures`).
    let failures: FailureLockout
    /// The console's sessions; `nil`: admin routes take only the bearer token, the session routes answer 503.
    let sessions: (any ConsoleSessionStore)?
    let now: @Sendable () -> Date
    /// API keys (`bk_…`); nil when the executable wired no account store (only the admin token then).
    let accounts: AccountAdministration?
    /// Which account owns the project a key asks about (`RouteScope.project`).
    let projects: any ProjectStore
    /// Members: invites, sign-in with email and password; nil when the executable wired no member store.
    let members: MemberAdministration?
    /// Failed sign-ins; nil: not recorded.
    let auditLog: (any AuditLogStore)?
    /// Successful changes no store audited (`RouteGate.audited`).
    let auditGaps: AuditGaps
    let logLine: @Sendable (String) -> Void

    /// The admin side of `deps`, digests derived once at start-up.
    init(_ deps: APIDependencies, keys: KeyAuth) {
        self.keys = keys
        accounts = deps.accounts.map {
            AccountAdministration(store: $0, projects: deps.projects, hasher: deps.hasher, now: deps.now)
        }
        projects = deps.projects
        members = deps.members.map {
            MemberAdministration(store: $0.store, crypto: $0.crypto, hasher: deps.hasher, sealer: deps.sealer, now: deps.now)
        }
        auditLog = deps.auditLog
        auditGaps = deps.auditGaps
        logLine = deps.log
        if let token = deps.adminToken, !token.isEmpty {
            digest = deps.hasher.hash(token)
            fingerprint = ConsoleSessionRules.adminFingerprint(adminToken: token, hasher: deps.hasher)
        } else {
            digest = nil
            fingerprint = nil
        }
        token = deps.adminToken
        hasher = deps.hasher
        failures = deps.adminAuthFailures
        sessions = deps.consoleSessions
        now = deps.now
    }

    /// Admin routes: disabled without a configured token, else `Bearer <token>` compared in constant time.
    ///
    /// `digest` is the hash of the configured token; comparing digests keeps even the token's length secret.
    /// Wrong tokens count against the client's address (`failures`): once it is locked out, the answer is 429
    /// before anything is compared; a right token forgets its failures.
    func authorize(_ request: Request) throws(HTTPError) {
        guard let digest else { throw HTTPError.adminDisabled }
        try checkLockout(request)
        guard let header = request.headers["Authorization"] else { throw HTTPError.invalidAdminToken }
        guard let token = KeyAuth.bearerToken(header), ProjectKeys.constantTimeEquals(hasher.hash(token), digest) else {
            throw failed(request, HTTPError.invalidAdminToken)
        }
        failures.recordSuccess(request.clientKey.description)
    }

    /// 429 `AUTH_TOO_MANY_FAILURES` while the client's address is locked out of admin authentication.
    func checkLockout(_ request: Request) throws(HTTPError) {
        if let retryAfter = failures.check(request.clientKey.description) {
            throw HTTPError.tooManyAdminAuthFailures(retryAfterSeconds: retryAfter)
        }
    }

    /// Counts a presented-but-wrong admin token against the client's address; returns `error` to throw. A request
    /// without credentials is not a guess and is not counted (the caller answers it without calling this).
    func failed(_ request: Request, _ error: HTTPError) -> HTTPError {
        failures.recordFailure(request.clientKey.description)
        let actor: AuditActor
        switch error.code {
        case HTTPError.invalidAPIKey.code: actor = AuditActor(type: "api_key", id: nil, label: "api_key:unknown")
        case HTTPError.memberSignInFailed.code, HTTPError.totpInvalid.code:
            actor = AuditActor(type: "member", id: nil, label: "member:unknown")
        default: actor = AuditActor(.operator)
        }
        recordFailedSignIn(request, actor: actor)
        return error
    }

    /// Routes about one project's users (`/v1/admin/projects/:id/users/…`): true when the bearer is of `sk_…` form
    /// and one of that project's live secret keys (compared in constant time), 401 `AUTH_INVALID_SECRET_KEY` when of
    /// that form and not (an unknown project too: no probing of project ids); false for any other credential, which
    /// the caller checks as an admin principal.
    func authorizedBySecretKey(_ request: Request, projectId: UUID) throws -> Bool {
        guard let header = request.headers["Authorization"], let token = KeyAuth.bearerToken(header),
              ProjectKeys.isSecretKeySyntax(token) else { return false }
        try keys.checkSecretKey(token, projectId: projectId)
        return true
    }

    // MARK: - Console sessions

    /// For admin routes: a request without `Authorization` whose session cookie names a live session (and, unless
    /// the method is safe, whose `X-CSRF-Token` matches it) continues as if it presented the admin token, so
    /// `authorize` and every handler stay as they are. Any other request is returned untouched.
    func authenticatingConsoleSession(_ request: Request) throws -> Request {
        guard !request.headers.contains("Authorization"), let digest, !digest.isEmpty,
              let token, let session = Self.sessionCookie(request) else { return request }
        guard let live = try liveSession(session) else { throw HTTPError.consoleSessionInvalid }
        if request.method != .get && request.method != .head {
            try checkCSRF(request, sessionToken: session)
        }
        // A member's session stays a cookie: `authenticate` resolves it to the member (`memberSession`).
        if live.principal != .operator { return request }
        var authenticated = request
        authenticated.headers.set("Authorization", "Bearer " + token)
        return authenticated
    }

    /// The session of `token` when it is live and, for the operator's, was opened with the server's current admin
    /// token (fingerprints compared in constant time); nil otherwise, so a changed token ends every operator session
    /// at once. A member's session is live while the member is (the store reads their current role).
    func liveSession(_ token: String) throws -> ConsoleSession? {
        guard let fingerprint,
              let session = try sessionStore().session(tokenHash: hasher.hash(token), at: now()) else { return nil }
        if session.principal != .operator { return session }
        guard ProjectKeys.constantTimeEquals(session.adminFingerprint, fingerprint) else { return nil }
        return session
    }

    /// The session token of the request's `bouncer_session` cookie, when it has the token's shape.
    static func sessionCookie(_ request: Request) -> String? {
        for header in request.headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == ConsoleSessionRules.cookieName
                else { continue }
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                if ConsoleSessionRules.isTokenSyntax(value) { return value }
            }
        }
        return nil
    }

    /// 403 `CSRF_TOKEN_INVALID` unless `X-CSRF-Token` is the session's CSRF token.
    func checkCSRF(_ request: Request, sessionToken: String) throws(HTTPError) {
        let expected = ConsoleSessionRules.csrfToken(sessionToken: sessionToken, hasher: hasher)
        guard let presented = request.headers[ConsoleSessionRules.csrfHeader],
              ProjectKeys.constantTimeEquals(Array(presented.utf8), Array(expected.utf8)) else {
            throw HTTPError.csrfTokenInvalid
        }
    }

    /// The session store, or 503 when the executable wired none.
    func sessionStore() throws(HTTPError) -> any ConsoleSessionStore {
        guard let store = sessions else {
            throw HTTPError.serviceUnavailable(
                message: "Console sessions are not configured.", suggestion: "Use Authorization: Bearer <token>.")
        }
        return store
    }
}
