public import Domain
import Foundation
import HTTPCore

/// The console's session: `POST /v1/admin/session` trades the admin token for an `HttpOnly`, `SameSite=Strict`
/// cookie; admin routes then accept that cookie (plus `X-CSRF-Token` on state-changing methods) instead of the
/// bearer token (`AdminAuth.authenticatingConsoleSession`). The browser never holds the admin token after sign-in,
/// and never in script-readable storage.
struct ConsoleController: APIController {
    static let sessionPath = "/v1/admin/session"
    static let signInSuggestion = "Send {\"token\": \"<BOUNCER_ADMIN_TOKEN>\"} with Content-Type: application/json."

    let admin: AdminAuth
    /// Console settings the executable chose (`BOUNCER_CONSOLE_*`).
    let console: ConsoleSettings

    var routes: [APIRoute] {
        [
            APIRoute(.post, Self.sessionPath, .adminAPI, access: .consoleSession, signIn),
            APIRoute(.get, Self.sessionPath, .adminAPI, access: .consoleSession, showSession),
            APIRoute(.delete, Self.sessionPath, .adminAPI, access: .consoleSession, signOut),
            APIRoute(.delete, "/v1/admin/sessions", .adminAPI, access: .admin(.sessionsManage), signOutEverywhere),
        ]
    }

    /// `POST /v1/admin/session`: checks the admin token like the bearer path (lockout first, then digests in
    /// constant time), stores a new session by its hash, bound to the admin token's fingerprint, sets the cookie and
    /// answers the CSRF token.
    func signIn(_ request: Request) throws -> Response {
        guard let adminDigest = admin.digest, let adminFingerprint = admin.fingerprint else {
            throw HTTPError.adminDisabled
        }
        try admin.checkLockout(request)
        let store = try admin.sessionStore()
        let body = try RequestBody.object(request, suggestion: Self.signInSuggestion)
        if body.contains(key: "email") || body.contains(key: "password") { return try memberSignIn(request, body) }
        var fields = FieldValidator(body)
        let token = fields.string("token", required: true, minLength: 1, maxLength: 1024)
        try fields.check(suggestion: Self.signInSuggestion)
        guard let token, ProjectKeys.constantTimeEquals(admin.hasher.hash(token), adminDigest) else {
            throw admin.failed(request, HTTPError.consoleSignInFailed)
        }
        admin.failures.recordSuccess(request.clientKey.description)
        let sessionToken = ConsoleSessionRules.generateToken()
        let now = admin.now()
        let expires = now.addingTimeInterval(Double(console.sessionLifetimeSeconds))
        try store.createSession(tokenHash: admin.hasher.hash(sessionToken), adminFingerprint: adminFingerprint,
                                createdAt: now, expiresAt: expires)
        return sessionCreated(sessionToken, expires: expires)
    }

    /// 201 with the session's cookie and CSRF token.
    func sessionCreated(_ sessionToken: String, expires: Date) -> Response {
        var headers = HTTPHeaders()
        headers.add("Set-Cookie", cookie(value: sessionToken, maxAge: console.sessionLifetimeSeconds))
        headers.add("Cache-Control", "no-store")
        return Response.json(201, sessionBody(sessionToken, expires: expires), headers: headers)
    }

    /// `GET /v1/admin/session`: the current session's CSRF token and expiry (a reloaded page asks here), and who it
    /// acts as: `kind`, and for a member `account_id`, `role` and `email`; `permissions` from the role table (the
    /// console hides what they leave out; the server refuses it anyway).
    func showSession(_ request: Request) throws -> Response {
        guard admin.digest != nil else { throw HTTPError.adminDisabled }
        guard let token = AdminAuth.sessionCookie(request), let session = try admin.liveSession(token) else {
            throw HTTPError.consoleSessionInvalid
        }
        var email: String?
        if case .member(let id, let accountId, _) = session.principal, let members = admin.members {
            email = try? members.member(accountId: accountId, id: id).email
        }
        let body = sessionBody(token, expires: session.expiresAt, who: session.principal, email: email)
        return Response.json(200, body, headers: ["Cache-Control": "no-store"])
    }

    /// `DELETE /v1/admin/session`: signs out (CSRF-checked when the session is live) and clears the cookie.
    func signOut(_ request: Request) throws -> Response {
        guard admin.digest != nil else { throw HTTPError.adminDisabled }
        if let token = AdminAuth.sessionCookie(request), try admin.liveSession(token) != nil {
            try admin.checkCSRF(request, sessionToken: token)
            _ = try admin.sessionStore().deleteSession(tokenHash: admin.hasher.hash(token))
        }
        return Response(status: 204, headers: ["Set-Cookie": cookie(value: "", maxAge: 0), "Cache-Control": "no-store"])
    }

    /// `DELETE /v1/admin/sessions`: ends every console session ("sign out everywhere"), the caller's included. Needs
    /// the admin token, or a live session with its CSRF token (`AdminAuth.authenticatingConsoleSession` ran first).
    func signOutEverywhere(_ request: Request) throws -> Response {
        _ = try admin.sessionStore().deleteAllSessions()
        return Response(status: 204, headers: ["Set-Cookie": cookie(value: "", maxAge: 0), "Cache-Control": "no-store"])
    }

    private func cookie(value: String, maxAge: Int) -> String {
        "\(ConsoleSessionRules.cookieName)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (console.secureCookie ? "; Secure" : "")
    }

    /// `{csrf_token, expires_at}`, and with `who` (the session route's answer) `kind`, `account_id`, `role`,
    /// `permissions` and `email`.
    private func sessionBody(_ token: String, expires: Date, who: Principal? = nil, email: String? = nil) -> [UInt8] {
        var body = JSONBody(capacity: 640)
        body.beginObject()
        body.field("csrf_token", ConsoleSessionRules.csrfToken(sessionToken: token, hasher: admin.hasher))
        body.field("expires_at", expires)
        if let who {
            body.field("kind", who.kind)
            if let accountId = who.accountId { body.field("account_id", accountId.lowercasedText) }
            if let role = who.role { body.field("role", role.rawValue) }
            if let email { body.field("email", email) }
            let permissions = who.role?.permissions ?? Set(Permission.allCases)
            body.field("permissions", permissions.sorted().map(\.rawValue))
        }
        body.endObject()
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
