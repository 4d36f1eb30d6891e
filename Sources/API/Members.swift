public import Domain
import Foundation
import HTTPCore
import JSON

/// `/v1/admin/accounts/:id/members[/:memberId[/totp]]` and `/v1/admin/invites/accept`: the people of an account.
/// The gate has checked `members.manage` and that the principal reaches the account in the path (`RouteScope`); the
/// use case checks roles (no one gives or touches a role above their own).
struct MembersController: APIController {
    let admin: AdminAuth

    var routes: [APIRoute] {
        let members = "/v1/admin/accounts/:id/members"
        return [
            APIRoute(.post, members, .adminAPI, access: .admin(.membersManage), invite),
            APIRoute(.get, members, .adminAPI, access: .admin(.membersManage), list),
            APIRoute(.get, members + "/:memberId", .adminAPI, access: .admin(.membersManage), show),
            APIRoute(.patch, members + "/:memberId", .adminAPI, access: .admin(.membersManage), changeRole),
            APIRoute(.delete, members + "/:memberId", .adminAPI, access: .admin(.membersManage), remove),
            APIRoute(.post, members + "/:memberId/totp", .adminAPI, access: .admin(.membersManage),
                     errors: ErrorContext(encryptionKey: .storeMemberSecret), enableTOTP).forSelf("memberId"),
            // Public (the invitee has no credential yet), behind the same lockout as sign-in.
            APIRoute(.post, "/v1/admin/invites/accept", .adminAPI, access: .consoleSession, acceptInvite),
        ]
    }

    static let inviteSuggestion = "Request body requires email (string) and role (owner, admin, developer, viewer, "
        + "support), e.g. {\"email\": \"dev@example.com\", \"role\": \"developer\"}. No one gives a role above their own."
    static let roleSuggestion = "Request body requires role (owner, admin, developer, viewer, support), e.g. "
        + "{\"role\": \"viewer\"}. No one gives or changes a role above their own."
    static let acceptSuggestion = "Request body requires invite_token (the iv_… token of the invite) and password "
        + "(at least \(MemberRules.minPasswordLength) characters)."
    static let memberIdSuggestion = "Use the member's id (a UUID) from GET /v1/admin/accounts/{id}/members."
    static let roleNames = Role.allCases.map(\.rawValue)

    private func use() throws -> MemberAdministration {
        try unwired(admin.members, "Members are not configured.", "members")
    }

    /// `POST …/members` `{email, role}` → 201 with the invite token, shown this once.
    func invite(_ request: Request, _ principal: Principal) throws -> Response {
        let accountId = try PathParameters.accountId(request)
        var fields = try FieldValidator(request, suggestion: Self.inviteSuggestion)
        let email = fields.string("email", required: true, minLength: 1, maxLength: MemberRules.maxEmailLength)
        let role = Self.role(&fields)
        try fields.check(suggestion: Self.inviteSuggestion)
        guard let email, let role else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Invalid member")], suggestion: Self.inviteSuggestion)
        }
        let invited = try RequestBody.translating(suggestion: Self.inviteSuggestion) {
            try use().invite(accountId: accountId, email: email, role: role, by: principal)
        }
        return Response.json(201, Representations.member(invited), headers: ["Cache-Control": "no-store"])
    }

    /// `GET …/members`: `{"members":[…]}`, oldest first.
    func list(_ request: Request, _ principal: Principal) throws -> Response {
        let members = try use().members(accountId: try PathParameters.accountId(request))
        return Response.json(200, Representations.members(members))
    }

    /// `GET …/members/:memberId`.
    func show(_ request: Request, _ principal: Principal) throws -> Response {
        let (accountId, id) = try Self.ids(request)
        return Self.memberResponse(200, try use().member(accountId: accountId, id: id))
    }

    /// `PATCH …/members/:memberId` `{role}`: the member's sessions end.
    func changeRole(_ request: Request, _ principal: Principal) throws -> Response {
        let (accountId, id) = try Self.ids(request)
        var fields = try FieldValidator(request, suggestion: Self.roleSuggestion)
        let role = Self.role(&fields)
        try fields.check(suggestion: Self.roleSuggestion)
        guard let role else {
            throw HTTPError.validation([ErrorDetail(path: ["role"], message: "Required")], suggestion: Self.roleSuggestion)
        }
        return Self.memberResponse(200, try use().changeRole(accountId: accountId, id: id, to: role, by: principal))
    }

    /// `DELETE …/members/:memberId` → 204: the member and their sessions are gone.
    func remove(_ request: Request, _ principal: Principal) throws -> Response {
        let (accountId, id) = try Self.ids(request)
        try use().remove(accountId: accountId, id: id, by: principal)
        return Response(status: 204)
    }

    /// `POST …/members/:memberId/totp` → 200 `{otpauth_uri}`: the secret's only appearance; sign-in asks for a code
    /// from then on. A signed-in member may call it for themself without `members.manage` (`forSelf`).
    func enableTOTP(_ request: Request, _ principal: Principal) throws -> Response {
        let (accountId, id) = try Self.ids(request)
        let enabled = try use().enableTOTP(accountId: accountId, id: id, by: principal)
        var out = JSONBody(capacity: 256)
        out.beginObject()
        out.field("member_id", enabled.member.id.lowercasedText)
        out.field("totp_enabled", true)
        out.field("otpauth_uri", enabled.uri)
        out.endObject()
        return Response.json(200, out.bytes, headers: ["Cache-Control": "no-store"])
    }

    /// `POST /v1/admin/invites/accept` `{invite_token, password}` → 200 with the member: the password is set, the
    /// invite used up. An unknown, used or expired token is one answer (400 `INVITE_INVALID`), counted against the
    /// client's address like a wrong admin token.
    func acceptInvite(_ request: Request) throws -> Response {
        try admin.checkLockout(request)
        var fields = try FieldValidator(request, suggestion: Self.acceptSuggestion)
        let token = fields.string("invite_token", required: true, minLength: 1, maxLength: 128)
        let password = fields.string("password", required: true, minLength: 0)
        if let password { fields.add(MemberRules.problems(password: password)) }
        try fields.check(suggestion: Self.acceptSuggestion)
        guard let token, let password else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Invalid body")], suggestion: Self.acceptSuggestion)
        }
        do {
            let member = try use().acceptInvite(token: token, password: password)
            admin.failures.recordSuccess(request.clientKey.description)
            return Self.memberResponse(200, member)
        } catch let error as DomainError where error.code == .inviteInvalid {
            throw admin.failed(request, HTTPError.inviteInvalid)
        }
    }

    // MARK: - Parsing and rendering

    static func ids(_ request: Request) throws -> (account: UUID, member: UUID) {
        (try PathParameters.accountId(request),
         try PathParameters.uuid(request, "memberId", suggestion: memberIdSuggestion))
    }

    static func role(_ fields: inout FieldValidator) -> Role? {
        let name = fields.enumeration("role", roleNames)
        if name == nil && !fields.has("role") { fields.fail(["role"], "Required") }
        return name.flatMap(Role.init(rawValue:))
    }

    static func memberResponse(_ status: Int, _ member: Member) -> Response {
        var out = JSONBody(capacity: 384)
        writeMember(member, inviteToken: nil, into: &out)
        return Response.json(status, out.bytes)
    }

    /// `{"id","account_id","email","role","status","totp_enabled","invite_token"?,"invite_expires_at","created_at",
    /// "updated_at"}`; `invite_token` only when just invited. Never a password, digest or TOTP secret.
    static func writeMember(_ member: Member, inviteToken: String?, into body: inout JSONBody) {
        body.beginObject()
        body.field("id", member.id.lowercasedText)
        body.field("account_id", member.accountId.lowercasedText)
        body.field("email", member.email)
        body.field("role", member.role.rawValue)
        body.field("status", member.active ? "active" : "invited")
        body.field("totp_enabled", member.totpEnabled)
        if let inviteToken { body.field("invite_token", inviteToken) }
        body.field("invite_expires_at", member.inviteExpiresAt)
        body.field("created_at", member.createdAt)
        body.field("updated_at", member.updatedAt)
        body.endObject()
    }
}

// MARK: - Sign-in and sessions of members

extension AdminAuth {
    /// The member of the request's session cookie, for a request without `Authorization` (the console's): nil when
    /// there is no cookie or it is the operator's session (which `authenticatingConsoleSession` already turned into
    /// the admin token). A state-changing request needs the session's CSRF token.
    func memberSession(_ request: Request) throws -> Principal? {
        guard !request.headers.contains("Authorization"), digest != nil, let token = Self.sessionCookie(request)
        else { return nil }
        guard let session = try liveSession(token) else { throw HTTPError.consoleSessionInvalid }
        guard session.principal != .operator else { return nil }
        if request.method != .get && request.method != .head {
            try checkCSRF(request, sessionToken: token)
        }
        return session.principal
    }

    /// The lockout key of an email (beside the client addresses' keys in the same `FailureLockout`).
    static func lockoutKey(email: String) -> String { "email:" + MemberRules.normalize(email: email) }
}

extension ConsoleController {
    static let memberSignInSuggestion = "Send {\"email\": \"…\", \"password\": \"…\"} (and \"totp\": the 6-digit code "
        + "once TOTP is on; \"account_id\" to choose among several accounts of the same email) with Content-Type: "
        + "application/json."

    /// `POST /v1/admin/session` `{email, password[, totp][, account_id]}`: a member's sign-in. Limited per client
    /// address and per email (both checked before anything is hashed, both counted on a failure); an unknown email
    /// and a wrong password answer the same, at the same PBKDF2 cost.
    func memberSignIn(_ request: Request, _ body: JSONObject) throws -> Response {
        let members = try unwired(admin.members, "Members are not configured.", "members")
        var fields = FieldValidator(body)
        let email = fields.string("email", required: true, minLength: 1, maxLength: MemberRules.maxEmailLength)
        let password = fields.string("password", required: true, minLength: 1, maxLength: MemberRules.maxPasswordBytes)
        let totp = fields.string("totp", required: false, minLength: 0, maxLength: 16)
        let accountId = fields.has("account_id") ? fields.uuid("account_id") : nil
        try fields.check(suggestion: Self.memberSignInSuggestion)
        guard let email, let password else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Invalid body")],
                                       suggestion: Self.memberSignInSuggestion)
        }
        let emailKey = AdminAuth.lockoutKey(email: email)
        if let retryAfter = admin.failures.check(emailKey) {
            throw HTTPError.tooManyAdminAuthFailures(retryAfterSeconds: retryAfter)
        }
        let store = try admin.sessionStore()
        let member: Member
        switch try members.signIn(email: email, password: password, totp: totp, accountId: accountId) {
        case .signedIn(let signedIn):
            member = signedIn
        case .failed:
            admin.failures.recordFailure(emailKey)
            throw admin.failed(request, HTTPError.memberSignInFailed)
        case .totpRequired:
            throw HTTPError.totpRequired
        case .totpInvalid:
            admin.failures.recordFailure(emailKey)
            throw admin.failed(request, HTTPError.totpInvalid)
        }
        admin.failures.recordSuccess(request.clientKey.description)
        admin.failures.recordSuccess(emailKey)
        let sessionToken = ConsoleSessionRules.generateToken()
        let now = admin.now()
        let expires = now.addingTimeInterval(Double(console.sessionLifetimeSeconds))
        try store.createMemberSession(tokenHash: admin.hasher.hash(sessionToken), accountId: member.accountId,
                                      memberId: member.id, createdAt: now, expiresAt: expires)
        return sessionCreated(sessionToken, expires: expires)
    }
}

extension Representations {
    /// A member as `POST /v1/admin/accounts/:id/members` returns it: with the invite token, shown this once.
    public static func member(_ invited: InvitedMember) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        MembersController.writeMember(invited.member, inviteToken: invited.inviteToken, into: &body)
        return body.bytes
    }

    /// Members as `GET /v1/admin/accounts/:id/members` lists them.
    public static func members(_ members: [Member]) -> [UInt8] {
        JSONBody.list("members", members, capacity: 64 + 320 * members.count) { member, body in
            MembersController.writeMember(member, inviteToken: nil, into: &body)
        }
    }
}
