public import Domain
import Foundation
import HTTPCore
import JSON

/// `/v1/admin/accounts[/:id[/api-keys[/:keyId]]]`: the operator's customers, and the API keys that act for them.
/// The gate has checked the permission and that the principal reaches the account in the path (`RouteScope`).
struct AccountsController: APIController {
    /// The use cases; nil when the executable wired no account store (503).
    let administration: AccountAdministration?

    var routes: [APIRoute] {
        let account = "/v1/admin/accounts/:id"
        return [
            APIRoute(.post, "/v1/admin/accounts", .adminAPI, access: .admin(.accountsManage), createAccount),
            APIRoute(.get, "/v1/admin/accounts", .adminAPI, access: .admin(.accountsManage), listAccounts),
            APIRoute(.get, account, .adminAPI, access: .admin(.accountsManage), showAccount),
            APIRoute(.patch, account, .adminAPI, access: .admin(.accountsManage), updateAccount),
            APIRoute(.delete, account, .adminAPI, access: .admin(.accountsManage), deleteAccount),
            APIRoute(.post, account + "/api-keys", .adminAPI, access: .admin(.apiKeysManage), createAPIKey),
            APIRoute(.get, account + "/api-keys", .adminAPI, access: .admin(.apiKeysManage), listAPIKeys),
            APIRoute(.delete, account + "/api-keys/:keyId", .adminAPI, access: .admin(.apiKeysManage), revokeAPIKey),
        ]
    }

    static let accountSuggestion = "Request body requires name (string, 1 to 200 characters), e.g. {\"name\": \"Acme\"}."
    static let apiKeySuggestion = "Request body requires name (string, 1 to 200 characters) and role (owner, admin, "
        + "developer, viewer, support); optional project_ids (array of the account's project ids; omit for every "
        + "project) and expires_at (ISO 8601, in the future; omit for no end). A key may not do more than the "
        + "credential that creates it."
    static let keyIdSuggestion = "Use the key's id (a UUID) from GET /v1/admin/accounts/{id}/api-keys."
    static let roleNames = Role.allCases.map(\.rawValue)

    private func use() throws -> AccountAdministration {
        try unwired(administration, "Accounts are not configured.", "accounts")
    }

    /// `POST /v1/admin/accounts` `{name}` → 201.
    func createAccount(_ request: Request, _ principal: Principal) throws -> Response {
        let name = try Self.name(request)
        let account = try RequestBody.translating(suggestion: Self.accountSuggestion) {
            try use().createAccount(name: name)
        }
        return Response.json(201, Self.accountBody(account))
    }

    /// `GET /v1/admin/accounts`: `{"accounts":[…]}`, oldest first.
    func listAccounts(_ request: Request, _ principal: Principal) throws -> Response {
        let accounts = try use().accounts(for: principal)
        return Response.json(200, Representations.accounts(accounts))
    }

    /// `GET /v1/admin/accounts/:id`.
    func showAccount(_ request: Request, _ principal: Principal) throws -> Response {
        let id = try PathParameters.accountId(request)
        return Response.json(200, Self.accountBody(try use().account(id: id, for: principal)))
    }

    /// `PATCH /v1/admin/accounts/:id` `{name}`.
    func updateAccount(_ request: Request, _ principal: Principal) throws -> Response {
        let id = try PathParameters.accountId(request)
        let name = try Self.name(request)
        let account = try RequestBody.translating(suggestion: Self.accountSuggestion) {
            try use().renameAccount(id: id, name: name)
        }
        return Response.json(200, Self.accountBody(account))
    }

    /// `DELETE /v1/admin/accounts/:id` → 204; 409 `ACCOUNT_HAS_PROJECTS` while it owns any.
    func deleteAccount(_ request: Request, _ principal: Principal) throws -> Response {
        try use().deleteAccount(id: try PathParameters.accountId(request))
        return Response(status: 204)
    }

    /// `POST /v1/admin/accounts/:id/api-keys` → 201 with the key's text, shown this once.
    func createAPIKey(_ request: Request, _ principal: Principal) throws -> Response {
        let accountId = try PathParameters.accountId(request)
        var fields = try FieldValidator(request, suggestion: Self.apiKeySuggestion)
        let name = fields.string("name", required: true, minLength: 0)
        let roleName = fields.enumeration("role", Self.roleNames)
        if roleName == nil && !fields.has("role") { fields.fail(["role"], "Required") }
        var projectIds: [UUID]?
        if let value = fields.object["project_ids"], !value.isNull {
            let texts = fields.array("project_ids", required: false, maxItems: AccountRules.maxKeyProjects) {
                fields, value, path in fields.checkUUID(value, path: path)?.uuidString
            }
            projectIds = texts?.compactMap(UUID.init(uuidString:))
        }
        var expiresAt: Date?
        if let value = fields.object["expires_at"], !value.isNull {
            if let text = value.stringValue, let date = CustomersController.parseTimestamp(text) {
                expiresAt = date
            } else {
                fields.fail(["expires_at"], "Invalid datetime (ISO 8601, e.g. 2027-01-01T00:00:00Z)")
            }
        }
        if let name { fields.add(AccountRules.problems(name: name)) }
        try fields.check(suggestion: Self.apiKeySuggestion)
        guard let name, let role = roleName.flatMap(Role.init(rawValue:)) else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "Invalid API key")],
                                       suggestion: Self.apiKeySuggestion)
        }
        let new = NewAPIKey(name: name, role: role, projectIds: projectIds, expiresAt: expiresAt)
        let issued = try RequestBody.translating(suggestion: Self.apiKeySuggestion) {
            try use().createAPIKey(accountId: accountId, new, by: principal)
        }
        return Response.json(201, Representations.apiKey(issued), headers: ["Cache-Control": "no-store"])
    }

    /// `GET /v1/admin/accounts/:id/api-keys`: `{"api_keys":[…]}`, oldest first, without their texts.
    func listAPIKeys(_ request: Request, _ principal: Principal) throws -> Response {
        let keys = try use().apiKeys(accountId: try PathParameters.accountId(request))
        return Response.json(200, Representations.apiKeys(keys))
    }

    /// `DELETE /v1/admin/accounts/:id/api-keys/:keyId` → 204: the key stops working at once.
    func revokeAPIKey(_ request: Request, _ principal: Principal) throws -> Response {
        let accountId = try PathParameters.accountId(request)
        let keyId = try PathParameters.uuid(request, "keyId", suggestion: Self.keyIdSuggestion)
        try use().revokeAPIKey(accountId: accountId, id: keyId)
        return Response(status: 204)
    }

    // MARK: - Parsing and rendering

    /// The `{name}` of an account's creation or update.
    static func name(_ request: Request) throws -> String {
        var fields = try FieldValidator(request, suggestion: accountSuggestion)
        let name = fields.string("name", required: true, minLength: 0)
        if let name { fields.add(AccountRules.problems(name: name)) }
        try fields.check(suggestion: accountSuggestion)
        return name ?? ""
    }

    static func accountBody(_ account: Account) -> [UInt8] {
        var body = JSONBody(capacity: 192)
        writeAccount(account, into: &body)
        return body.bytes
    }

    /// `{"id","name","created_at","updated_at"}`.
    static func writeAccount(_ account: Account, into body: inout JSONBody) {
        body.beginObject()
        body.field("id", account.id.lowercasedText)
        body.field("name", account.name)
        body.field("created_at", account.createdAt)
        body.field("updated_at", account.updatedAt)
        body.endObject()
    }

    /// `{"id","name","role","project_ids","last4","key"?,"created_at","expires_at","last_used_at"}`; `key` only when
    /// just created.
    static func writeAPIKey(_ key: APIKey, text: String?, into body: inout JSONBody) {
        body.beginObject()
        body.field("id", key.id.lowercasedText)
        body.field("account_id", key.accountId.lowercasedText)
        body.field("name", key.name)
        body.field("role", key.role.rawValue)
        if let projectIds = key.projectIds {
            body.field("project_ids", projectIds.map { $0.lowercasedText })
        } else {
            body.null("project_ids")
        }
        body.field("last4", key.last4)
        if let text { body.field("key", text) }
        body.field("created_at", key.createdAt)
        body.field("expires_at", key.expiresAt)
        body.field("last_used_at", key.lastUsedAt)
        body.endObject()
    }
}

extension Representations {
    /// An account as `GET /v1/admin/accounts/:id` returns it.
    public static func account(_ account: Account) -> [UInt8] { AccountsController.accountBody(account) }

    /// Accounts as `GET /v1/admin/accounts` lists them.
    public static func accounts(_ accounts: [Account]) -> [UInt8] {
        JSONBody.list("accounts", accounts, capacity: 64 + 160 * accounts.count, AccountsController.writeAccount)
    }

    /// An API key as `POST /v1/admin/accounts/:id/api-keys` returns it: with its text (`key`), shown this once.
    public static func apiKey(_ issued: IssuedAPIKey) -> [UInt8] {
        var body = JSONBody(capacity: 512)
        AccountsController.writeAPIKey(issued.key, text: issued.text, into: &body)
        return body.bytes
    }

    /// API keys as `GET /v1/admin/accounts/:id/api-keys` lists them, without their texts.
    public static func apiKeys(_ keys: [APIKey]) -> [UInt8] {
        JSONBody.list("api_keys", keys, capacity: 64 + 320 * keys.count) { key, body in
            AccountsController.writeAPIKey(key, text: nil, into: &body)
        }
    }
}
