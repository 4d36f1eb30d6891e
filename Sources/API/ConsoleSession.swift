import Domain
import Foundation
import HTTPCore

/// The console's session: `POST /v1/admin/session` trades the admin token for an `HttpOnly`, `SameSite=Strict`
/// cookie; admin routes then accept that cookie (plus `X-CSRF-Token` on state-changing methods) instead of the
/// bearer token. The browser never holds the admin token after sign-in, and never in script-readable storage.
extension APIHandlers {
    static let sessionPath = "/v1/admin/session"
    static let signInSuggestion = "Send {\"token\": \"<BOUNCER_ADMIN_TOKEN>\"} with Content-Type: application/json."

    /// Console settings the executable chose (`BOUNCER_CONSOLE_*`).
    var console: ConsoleSettings { deps.console }

    /// `POST /v1/admin/session`: checks the admin token like the bearer path (lockout first, then digests in
    /// constant time), stores a new session by its hash, bound to the admin token's fingerprint, sets the cookie and
    /// answers the CSRF token.
    func signIn(_ request: Request) throws -> Response {
        guard let adminDigest, let adminFingerprint else { throw HTTPError.adminDisabled }
        try Auth.checkAdminLockout(request, deps: deps)
        let store = try sessionStore()
        let body = try RequestBody.object(request, suggestion: Self.signInSuggestion)
        var fields = FieldValidator(body)
        let token = fields.string("token", required: true, minLength: 1, maxLength: 1024)
        try fields.check(suggestion: Self.signInSuggestion)
        guard let token, ProjectKeys.constantTimeEquals(deps.hasher.hash(token), adminDigest) else {
            throw Auth.adminAuthFailed(request, deps: deps, HTTPError.consoleSignInFailed)
        }
        deps.adminAuthFailures.recordSuccess(request.clientKey.description)
        let sessionToken = ConsoleSessionRules.generateToken()
        let now = deps.now()
        let expires = now.addingTimeInterval(Double(console.sessionLifetimeSeconds))
        try store.createSession(tokenHash: deps.hasher.hash(sessionToken), adminFingerprint: adminFingerprint,
                                createdAt: now, expiresAt: expires)
        var headers = HTTPHeaders()
        headers.add("Set-Cookie", cookie(value: sessionToken, maxAge: console.sessionLifetimeSeconds))
        headers.add("Cache-Control", "no-store")
        return Response.json(201, sessionBody(sessionToken, expires: expires), headers: headers)
    }

    /// `GET /v1/admin/session`: the current session's CSRF token and expiry (a reloaded page asks here).
    func showSession(_ request: Request) throws -> Response {
        guard adminDigest != nil else { throw HTTPError.adminDisabled }
        guard let token = Self.sessionCookie(request), let session = try liveSession(token) else {
            throw HTTPError.consoleSessionInvalid
        }
        return Response.json(200, sessionBody(token, expires: session.expiresAt), headers: ["Cache-Control": "no-store"])
    }

    /// `DELETE /v1/admin/session`: signs out (CSRF-checked when the session is live) and clears the cookie.
    func signOut(_ request: Request) throws -> Response {
        guard adminDigest != nil else { throw HTTPError.adminDisabled }
        if let token = Self.sessionCookie(request), try liveSession(token) != nil {
            try checkCSRF(request, sessionToken: token)
            _ = try sessionStore().deleteSession(tokenHash: deps.hasher.hash(token))
        }
        return Response(status: 204, headers: ["Set-Cookie": cookie(value: "", maxAge: 0), "Cache-Control": "no-store"])
    }

    /// `DELETE /v1/admin/sessions`: ends every console session ("sign out everywhere"), the caller's included. Needs
    /// the admin token, or a live session with its CSRF token (`authenticatingConsoleSession` ran first).
    func signOutEverywhere(_ request: Request) throws -> Response {
        try Auth.authorizeAdmin(request, adminDigest: adminDigest, deps: deps)
        _ = try sessionStore().deleteAllSessions()
        return Response(status: 204, headers: ["Set-Cookie": cookie(value: "", maxAge: 0), "Cache-Control": "no-store"])
    }

    /// For admin routes: a request without `Authorization` whose session cookie names a live session (and, unless
    /// the method is safe, whose `X-CSRF-Token` matches it) continues as if it presented the admin token, so
    /// `Auth.authorizeAdmin` and every handler stay as they are. Any other request is returned untouched.
    func authenticatingConsoleSession(_ request: Request) throws -> Request {
        guard !request.headers.contains("Authorization"), let adminDigest, !adminDigest.isEmpty,
              let adminToken = deps.adminToken, let token = Self.sessionCookie(request) else { return request }
        guard try liveSession(token) != nil else { throw HTTPError.consoleSessionInvalid }
        if request.method != .get && request.method != .head {
            try checkCSRF(request, sessionToken: token)
        }
        var authenticated = request
        authenticated.headers.set("Authorization", "Bearer " + adminToken)
        return authenticated
    }

    /// The session of `token` when it is live and was opened with the server's current admin token (fingerprints
    /// compared in constant time); nil otherwise, so a changed token ends every session at once.
    private func liveSession(_ token: String) throws -> ConsoleSession? {
        guard let adminFingerprint,
              let session = try sessionStore().session(tokenHash: deps.hasher.hash(token), at: deps.now()),
              ProjectKeys.constantTimeEquals(session.adminFingerprint, adminFingerprint) else { return nil }
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

    private func checkCSRF(_ request: Request, sessionToken: String) throws(HTTPError) {
        let expected = ConsoleSessionRules.csrfToken(sessionToken: sessionToken, hasher: deps.hasher)
        guard let presented = request.headers[ConsoleSessionRules.csrfHeader],
              ProjectKeys.constantTimeEquals(Array(presented.utf8), Array(expected.utf8)) else {
            throw HTTPError.csrfTokenInvalid
        }
    }

    private func sessionStore() throws(HTTPError) -> any ConsoleSessionStore {
        guard let store = deps.consoleSessions else {
            throw HTTPError.serviceUnavailable(
                message: "Console sessions are not configured.", suggestion: "Use Authorization: Bearer <token>.")
        }
        return store
    }

    private func cookie(value: String, maxAge: Int) -> String {
        "\(ConsoleSessionRules.cookieName)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (console.secureCookie ? "; Secure" : "")
    }

    private func sessionBody(_ token: String, expires: Date) -> [UInt8] {
        var body = JSONBody(capacity: 160)
        body.raw(#"{"csrf_token":"#)
        body.string(ConsoleSessionRules.csrfToken(sessionToken: token, hasher: deps.hasher))
        body.raw(#","expires_at":"#)
        body.date(expires)
        body.raw("}")
        return body.bytes
    }
}

/// How the console's session cookie is issued.
public struct ConsoleSettings: Sendable {
    /// Adds `Secure` to the cookie: on when the console is reached over HTTPS (directly or through a proxy).
    public var secureCookie: Bool
    /// Session lifetime in seconds.
    public var sessionLifetimeSeconds: Int

    /// Settings; the defaults suit a console on `http://localhost`.
    public init(secureCookie: Bool = false, sessionLifetimeSeconds: Int = ConsoleSessionRules.defaultLifetimeSeconds) {
        self.secureCookie = secureCookie
        self.sessionLifetimeSeconds = sessionLifetimeSeconds
    }
}

extension HTTPError {
    static let consoleSignInFailed = HTTPError(
        status: 401, code: "AUTH_INVALID_ADMIN_TOKEN", message: "Invalid admin token.",
        suggestion: "Enter the server's BOUNCER_ADMIN_TOKEN.")

    static let consoleSessionInvalid = HTTPError(
        status: 401, code: "CONSOLE_SESSION_INVALID", message: "No live console session.",
        suggestion: "Sign in again at /admin/ with the admin token (sessions expire).")

    static let csrfTokenInvalid = HTTPError(
        status: 403, code: "CSRF_TOKEN_INVALID", message: "Missing or wrong X-CSRF-Token.",
        suggestion: "Send the csrf_token from GET /v1/admin/session as the X-CSRF-Token header.")
}
