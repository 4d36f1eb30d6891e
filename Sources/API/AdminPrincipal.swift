import Domain
import Foundation
import HTTPCore

/// What an admin route's `:id` names, read from its pattern so a new route cannot forget to be scoped: the gate
/// checks that the principal reaches it before the permission (another account's resource is the 404 of a
/// nonexistent one; only then can a missing permission answer 403).
enum RouteScope: Equatable {
    /// `/v1/admin/projects/:id…`: a project.
    case project
    /// `/v1/admin/accounts/:id…`: an account.
    case account
    /// Anything else (lists, creations, the server's sessions): the handler scopes what it returns.
    case server

    init(pattern: String) {
        func under(_ prefix: String) -> Bool { pattern == prefix || pattern.hasPrefix(prefix + "/") }
        if under("/v1/admin/projects/:id") {
            self = .project
        } else if under("/v1/admin/accounts/:id") {
            self = .account
        } else {
            self = .server
        }
    }
}

extension AdminAuth {
    /// Who asks an admin route, once allowed: the operator (the admin token, or a console session standing in for
    /// it) or an API key (`bk_…`), which must reach the route's resource (`RouteScope`: else the resource's 404) and
    /// may do `permission` (else 403 `PERMISSION_DENIED` naming it).
    ///
    /// A wrong, expired or revoked key is 401 `AUTH_INVALID_API_KEY` and counts against the client's address like a
    /// wrong admin token (`failures`): the lockout is checked before the key is looked up.
    func principal(_ request: Request, route: APIRoute, permission: Permission) throws -> Principal {
        let principal = try authenticate(request)
        switch RouteScope(pattern: route.pattern) {
        case .project:
            let id = try PathParameters.projectId(request)
            if principal.accountId != nil {
                guard let project = try projects.project(id: id),
                      principal.reaches(project: id, ofAccount: project.accountId) else {
                    throw HTTPError.projectNotFound
                }
            }
        case .account:
            let id = try PathParameters.accountId(request)
            guard principal.reaches(account: id) else { throw AccountAdministration.notFound(id) }
            // The account's own resources (its keys, next its members) are beyond a key limited to some projects.
            guard principal.reachesWholeAccount else { throw DomainError.permissionDenied(permission) }
        case .server:
            break
        }
        if let parameter = route.selfParameter, principal.isMember(request.pathParameters[parameter]) {
            return principal
        }
        try principal.require(permission)
        return principal
    }

    /// The principal of the request's credentials, before any scope or permission.
    func authenticate(_ request: Request) throws -> Principal {
        if let accounts, let header = request.headers["Authorization"], let token = KeyAuth.bearerToken(header),
           AccountRules.isKeySyntax(token) {
            try checkLockout(request)
            guard let principal = try accounts.principal(presenting: token) else {
                throw failed(request, HTTPError.invalidAPIKey)
            }
            failures.recordSuccess(request.clientKey.description)
            return principal
        }
        if let member = try memberSession(request) { return member }
        try authorize(request)
        return .operator
    }
}

extension PathParameters {
    static let accountIdSuggestion = "Use the account's id (a UUID) from GET /v1/admin/accounts."

    /// The `:id` of `/v1/admin/accounts/:id/…`: 400 `VALIDATION_ERROR` unless a UUID.
    static func accountId(_ request: Request) throws(HTTPError) -> UUID {
        try uuid(request, "id", suggestion: accountIdSuggestion)
    }

    /// The path parameter `name` as a UUID: 400 `VALIDATION_ERROR` unless one.
    static func uuid(_ request: Request, _ name: String, suggestion: String) throws(HTTPError) -> UUID {
        guard let raw = request.pathParameters[name], let id = UUID(uuidString: raw) else {
            throw HTTPError.validation([ErrorDetail(path: [name], message: "Invalid uuid")], suggestion: suggestion)
        }
        return id
    }
}
