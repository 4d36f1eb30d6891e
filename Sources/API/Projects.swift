public import Domain
import Foundation
import HTTPCore
import JSON

/// `/v1/admin/projects[/:id]`: tenants, their settings and keys.
struct ProjectsController: APIController {
    /// The admin use cases (shared with the CLI), at this server's clock.
    let administration: ProjectAdministration

    var routes: [APIRoute] {
        [
            APIRoute(.post, "/v1/admin/projects", .adminAPI, access: .admin(.projectsWrite), createProject),
            APIRoute(.get, "/v1/admin/projects", .adminAPI, access: .admin(.projectsRead), listProjects),
            APIRoute(.get, "/v1/admin/projects/:id", .adminAPI, access: .admin(.projectsRead), showProject),
            APIRoute(.patch, "/v1/admin/projects/:id", .adminAPI, access: .admin(.projectsWrite), updateProject),
            APIRoute(.delete, "/v1/admin/projects/:id", .adminAPI, access: .admin(.projectsWrite), deleteProject),
            APIRoute(.post, "/v1/admin/projects/:id/rotate-keys", .adminAPI, access: .admin(.keysManage), rotateKeys),
        ]
    }

    static let createSuggestion = "Request body requires name (string) and bundle_id (string), and account_id (uuid) "
        + "when the server has more than one account (GET /v1/admin/accounts lists them; an API key's account is "
        + "implied). Optional: app_apple_id "
        + "(integer or null), environments ([\"Production\", \"Sandbox\"]), transfer_policy (transfer, share, block), "
        + "allow_xcode (boolean), require_secret_key_for_reads (boolean), "
        + "app_account_token_policy (ignore, require_match, prefer), app_purchase_entitlements "
        + "({\"purchased_before_version\": \"2.0\", \"entitlements\": [\"pro\"]} or null), " + consumptionSettingsHelp + ", "
        + "entitlement_tokens (boolean), entitlement_token_ttl_seconds (30 to 86400), " + sandboxHelp
        + ", finish_transactions (boolean)."
    static let updateSuggestion = "Send at least one of: name, bundle_id, app_apple_id (integer or null), environments, "
        + "transfer_policy (transfer, share, block), allow_xcode, require_secret_key_for_reads, "
        + "app_account_token_policy (ignore, require_match, prefer), app_purchase_entitlements "
        + "({\"purchased_before_version\": \"2.0\", \"entitlements\": [\"pro\"]} or null), " + consumptionSettingsHelp + ", "
        + "entitlement_tokens (boolean), entitlement_token_ttl_seconds (30 to 86400), " + sandboxHelp
        + ", finish_transactions (boolean)."
    static let sandboxHelp = "sandbox_access (all, allowlist), sandbox_allowed_user_ids (up to "
        + "\(SandboxAccessRules.maxAllowedUserIds) user ids)"
    static let consumptionSettingsHelp = "consumption_response (off, auto), consumption_customer_consented (boolean), "
        + "consumption_sample_content_provided (boolean), consumption_refund_preference (DECLINE, GRANT_FULL, "
        + "GRANT_PRORATED or null)"
    static let rotateSuggestion = "Optional body: {\"key\": \"public\" | \"secret\", \"grace_seconds\": 0 to "
        + "\(ProjectRules.maxGraceSeconds)}. Without key both keys rotate; the default grace is 2592000 (30 days) for "
        + "the public key and 86400 (24 h) for the secret key; 0 retires the old key at once."
    static let environmentNames = ProjectRules.selectableEnvironments.map(\.rawValue)
    static let policyNames = TransferPolicy.allCases.map(\.rawValue)
    static let tokenPolicyNames = AppAccountTokenPolicy.allCases.map(\.rawValue)
    static let keyKindNames = ProjectKeyKind.allCases.map(\.rawValue)

    /// `POST /v1/admin/projects`: create a tenant; the secret key appears only in this response.
    func createProject(_ request: Request, _ principal: Principal) throws -> Response {
        var fields = try FieldValidator(request, suggestion: Self.createSuggestion)
        let name = fields.string("name", required: true, minLength: 0)
        let bundleId = fields.string("bundle_id", required: true, minLength: 0)
        let accountId = fields.uuid("account_id")
        let settings = Self.settings(&fields)
        var new = NewProject(name: name ?? "", bundleId: bundleId ?? "", settings: settings)
        new.accountId = accountId
        // The use case checks the rules too; asking them here reports type and rule problems in one answer (only
        // for fields that parsed: a missing name already says "Required").
        let ruleProblems = ProjectRules.problems(in: new).filter { problem in
            problem.path.first.map { fields.parsed($0) } ?? true
        }
        fields.add(ruleProblems)
        try fields.check(suggestion: Self.createSuggestion)
        let created = try RequestBody.translating(suggestion: Self.createSuggestion) {
            try administration.createProject(new, by: principal)
        }
        return Response.json(201, Self.projectBody(created))
    }

    /// `GET /v1/admin/projects`.
    func listProjects(_ request: Request, _ principal: Principal) throws -> Response {
        return Response.json(200, Self.projectsBody(try administration.projects(for: principal)))
    }

    /// `GET /v1/admin/projects/:id`.
    func showProject(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        return Response.json(200, Self.projectBody(try administration.project(id: id)))
    }

    /// `PATCH /v1/admin/projects/:id`: a validated partial update; `app_apple_id: null` clears it.
    func updateProject(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let body = try RequestBody.object(request, suggestion: Self.updateSuggestion)
        guard !body.isEmpty else {
            throw HTTPError.validation([ErrorDetail(path: [], message: "At least one field is required")],
                                      suggestion: Self.updateSuggestion)
        }
        var fields = FieldValidator(body)
        let name = fields.string("name", required: false, minLength: 0)
        let bundleId = fields.string("bundle_id", required: false, minLength: 0)
        var changes = Self.settings(&fields)
        changes.name = name
        changes.bundleId = bundleId
        fields.add(ProjectRules.problems(in: changes))
        try fields.check(suggestion: Self.updateSuggestion)
        let updated = try RequestBody.translating(suggestion: Self.updateSuggestion) {
            try administration.updateProject(id: id, changes)
        }
        return Response.json(200, Self.projectBody(updated))
    }

    /// `DELETE /v1/admin/projects/:id`: the project and all its data.
    func deleteProject(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        try administration.deleteProject(id: id)
        return Response(status: 204)
    }

    /// `POST /v1/admin/projects/:id/rotate-keys`: new keys; each replaced key keeps working for its grace
    /// (`KeyRotationRules`). No body (or `{}`) rotates both keys with their default graces.
    func rotateKeys(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let rotation = try Self.rotation(request)
        let rotated = try RequestBody.translating(suggestion: Self.rotateSuggestion) {
            try administration.rotateKeys(id: id, rotation)
        }
        return Response.json(200, Self.projectBody(rotated))
    }

    /// The rotation a request asks for: an empty body means both keys with their defaults.
    static func rotation(_ request: Request) throws(HTTPError) -> ProjectAdministration.Rotation {
        if request.body.isEmpty { return ProjectAdministration.Rotation() }
        var fields = try FieldValidator(request, suggestion: rotateSuggestion)
        let kind = fields.enumeration("key", keyKindNames).flatMap(ProjectKeyKind.init(rawValue:))
        let grace = fields.int("grace_seconds")
        if let grace { fields.add(ProjectRules.problems(graceSeconds: grace)) }
        try fields.check(suggestion: rotateSuggestion)
        if let kind { return ProjectAdministration.Rotation(kind: kind, graceSeconds: grace) }
        return ProjectAdministration.Rotation(graceSeconds: grace)
    }

    // MARK: - Parsing

    /// The optional settings shared by create and update, as changes (`name` and `bundle_id` are the caller's):
    /// `app_apple_id: null` and `app_purchase_entitlements: null` are `.some(nil)` (clear).
    static func settings(_ fields: inout FieldValidator) -> ProjectChanges {
        var settings = ProjectChanges()
        // No maxItems for environments (the contract has none): duplicates collapse and the body limit bounds work.
        settings.appAppleId = fields.nullableInt("app_apple_id", minimum: 1)
        if let names = fields.array("environments", required: false, element: {
            fields, value, path in fields.checkEnum(value, path: path, environmentNames)
        }) {
            var unique: [StoreEnvironment] = []
            for name in names where !unique.contains(StoreEnvironment(rawValue: name)) {
                unique.append(StoreEnvironment(rawValue: name))
            }
            settings.environments = unique
        }
        settings.transferPolicy = fields.enumeration("transfer_policy", policyNames).flatMap(TransferPolicy.init)
        settings.allowXcode = fields.bool("allow_xcode")
        settings.requireSecretKeyForReads = fields.bool("require_secret_key_for_reads")
        settings.appAccountTokenPolicy = fields.enumeration("app_account_token_policy", tokenPolicyNames)
            .flatMap(AppAccountTokenPolicy.init(rawValue:))
        settings.consumption = consumptionSettings(&fields)
        settings.appPurchaseEntitlements = appPurchaseEntitlements(&fields)
        settings.entitlementTokens = fields.bool("entitlement_tokens")
        settings.entitlementTokenTTLSeconds = fields.int("entitlement_token_ttl_seconds")
        settings.finishTransactions = fields.bool("finish_transactions")
        settings.sandboxAccess = fields.enumeration("sandbox_access", SandboxAccess.allCases.map(\.rawValue))
            .flatMap(SandboxAccess.init(rawValue:))
        // Lengths and count are SandboxAccessRules' (one answer lists every problem).
        settings.sandboxAllowedUserIds = fields.array("sandbox_allowed_user_ids", required: false) {
            fields, value, path in fields.checkString(value, path: path, minLength: 0, maxLength: nil)
        }
        return settings
    }

    static let consumptionResponseNames = ConsumptionResponse.allCases.map(\.rawValue)
    static let refundPreferenceNames = RefundPreference.allCases.map(\.rawValue)

    /// The refund defense settings (`consumption_*`); `consumption_refund_preference: null` clears it.
    static func consumptionSettings(_ fields: inout FieldValidator) -> ConsumptionSettings.Changes {
        var changes = ConsumptionSettings.Changes()
        changes.response = fields.enumeration("consumption_response", consumptionResponseNames)
            .flatMap(ConsumptionResponse.init(rawValue:))
        changes.customerConsented = fields.bool("consumption_customer_consented")
        changes.sampleContentProvided = fields.bool("consumption_sample_content_provided")
        if let value = fields.object["consumption_refund_preference"] {
            if value.isNull {
                changes.refundPreference = .some(nil)
            } else if let name = fields.checkEnum(value, path: ["consumption_refund_preference"], refundPreferenceNames) {
                changes.refundPreference = .some(RefundPreference(rawValue: name))
            }
        }
        return changes
    }

    /// `app_purchase_entitlements`: `{"purchased_before_version", "entitlements"}` or `null`; the rules (dotted
    /// numeric version, entitlement names) are the use case's (`AppPurchaseRules.problems`), added by the caller.
    static func appPurchaseEntitlements(_ fields: inout FieldValidator) -> AppPurchaseEntitlements?? {
        let key = "app_purchase_entitlements"
        guard let value = fields.object[key] else { return nil }
        if value.isNull { return .some(nil) }
        guard case .object(let object) = value else {
            fields.fail([key], "Expected object or null")
            return nil
        }
        var nested = FieldValidator(object)
        let version = nested.string("purchased_before_version", required: true, maxLength: 64)
        let entitlements = nested.array("entitlements", required: true, maxItems: ProjectRules.maxEntitlements) {
            fields, value, path in fields.checkString(value, path: path, minLength: 1, maxLength: 128)
        }
        for detail in nested.details { fields.fail([key] + detail.path, detail.message) }
        guard let version, let entitlements else { return nil }
        return .some(AppPurchaseEntitlements(purchasedBeforeVersion: version, entitlements: entitlements))
    }

    // MARK: - Rendering

    /// `{"projects":[…]}`, as `GET /v1/admin/projects` lists them.
    static func projectsBody(_ projects: [AdministeredProject]) -> [UInt8] {
        JSONBody.list("projects", projects, capacity: 64 + 600 * projects.count, writeProject)
    }

    static func projectBody(_ project: AdministeredProject) -> [UInt8] {
        var body = JSONBody(capacity: 768)
        writeProject(project, into: &body)
        return body.bytes
    }

    /// A project with its live keys; `secret_key` only when the use case just issued one.
    static func writeProject(_ administered: AdministeredProject, into body: inout JSONBody) {
        let project = administered.project
        body.beginObject()
        body.field("id", project.id.lowercasedText)
        body.field("account_id", project.accountId.lowercasedText)
        body.field("name", project.name)
        body.field("bundle_id", project.bundleId)
        body.field("app_apple_id", project.appAppleId)
        body.field("environments", project.environments.map(\.rawValue))
        body.field("transfer_policy", project.transferPolicy.rawValue)
        body.field("allow_xcode", project.allowXcode)
        body.field("require_secret_key_for_reads", project.requireSecretKeyForReads)
        body.field("app_account_token_policy", project.appAccountTokenPolicy.rawValue)
        body.field("consumption_response", project.consumption.response.rawValue)
        body.field("consumption_customer_consented", project.consumption.customerConsented)
        body.field("consumption_sample_content_provided", project.consumption.sampleContentProvided)
        body.field("consumption_refund_preference", project.consumption.refundPreference?.rawValue)
        if let setting = project.appPurchaseEntitlements {
            body.key("app_purchase_entitlements")
            body.beginObject()
            body.field("purchased_before_version", setting.purchasedBeforeVersion)
            body.field("entitlements", setting.entitlements)
            body.endObject()
        } else {
            body.null("app_purchase_entitlements")
        }
        body.field("entitlement_tokens", project.entitlementTokens)
        body.field("entitlement_token_ttl_seconds", project.entitlementTokenTTLSeconds)
        body.field("sandbox_access", project.sandbox.access.rawValue)
        body.field("sandbox_allowed_user_ids", project.sandbox.allowedUserIds)
        body.field("finish_transactions", project.finishTransactions)
        body.field("public_key", project.publicKey)
        body.objects("public_keys", administered.publicKeys) { key, body in
            body.field("key", key.publicKey ?? "")
            writeLifetime(createdAt: key.createdAt, expiresAt: key.expiresAt, into: &body)
        }
        body.objects("secret_keys", administered.secretKeys) { key, body in
            body.field("last4", key.last4)
            writeLifetime(createdAt: key.createdAt, expiresAt: key.expiresAt, into: &body)
        }
        body.field("created_at", project.createdAt)
        body.field("updated_at", project.updatedAt)
        if let secretKey = administered.newSecretKey { body.field("secret_key", secretKey) }
        body.endObject()
    }

    /// A key's `created_at` and `expires_at` (null while the key has no end).
    private static func writeLifetime(createdAt: Date, expiresAt: Date?, into body: inout JSONBody) {
        body.field("created_at", createdAt)
        body.field("expires_at", expiresAt)
    }
}

extension NewProject {
    /// A new project named `name` for `bundleId`, with the documented defaults except where `settings` says
    /// otherwise (its `name` and `bundleId` are not read): how the admin API and `bouncer project create` build one.
    public init(name: String, bundleId: String, settings: ProjectChanges) {
        var changes = settings
        changes.name = nil
        changes.bundleId = nil
        self.init(changes.applied(to: ProjectSettings(name: name, bundleId: bundleId)))
    }
}
