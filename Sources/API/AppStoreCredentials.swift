import Domain
import Foundation
import HTTPCore
import JSON

/// `/v1/admin/projects/:id/app-store-credentials`: the project's In-App Purchase key, stored sealed.
struct AppStoreCredentialsController: APIController {
    /// The credential use cases (shared with the CLI), at this server's clock.
    let administration: CredentialAdministration

    var routes: [APIRoute] {
        let path = "/v1/admin/projects/:id/app-store-credentials"
        let storing = ErrorContext(encryptionKey: .storeCredentials)
        return APIRoute.adminResource(path, write: .credentialsManage, errors: storing, put: putAppStoreCredentials, get: getAppStoreCredentials,
                                      delete: deleteAppStoreCredentials)
    }

    /// Where each value lives in App Store Connect (the In-App Purchase key is what the App Store Server API takes).
    static let credentialsSuggestion = "Request body requires issuer_id, key_id and private_key. In App Store "
        + "Connect, Users and Access > Integrations > In-App Purchase: the Issuer ID (a UUID) is shown above the "
        + "keys, the Key ID (10 characters) next to each key, and private_key is the whole .p8 file "
        + "(-----BEGIN PRIVATE KEY-----, a P-256 key in PKCS#8 PEM), downloadable once when the key is generated."

    /// `PUT /v1/admin/projects/:id/app-store-credentials`: check the key (P-256, PKCS#8), seal it, store it; the
    /// answer shows the metadata and the key's fingerprint, never the key.
    func putAppStoreCredentials(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        var fields = try FieldValidator(request, suggestion: Self.credentialsSuggestion)
        // Lengths and formats are the use case's rules (AppStoreCredentialRules); here only types and presence.
        let issuerId = fields.string("issuer_id", required: true, minLength: 0)
        let keyId = fields.string("key_id", required: true, minLength: 0)
        let privateKey = fields.string("private_key", required: true, minLength: 0)
        try fields.check(suggestion: Self.credentialsSuggestion)
        let stored = try RequestBody.translating(suggestion: Self.credentialsSuggestion) {
            try administration.setCredentials(
                projectId: id, issuerId: issuerId ?? "", keyId: keyId ?? "", privateKeyPEM: privateKey ?? "")
        }
        return Response.json(200, Self.credentialsBody(stored))
    }

    /// `GET /v1/admin/projects/:id/app-store-credentials`: the metadata only.
    func getAppStoreCredentials(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        return Response.json(200, Self.credentialsBody(try administration.credentials(projectId: id)))
    }

    /// `DELETE /v1/admin/projects/:id/app-store-credentials`.
    func deleteAppStoreCredentials(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        try administration.deleteCredentials(projectId: id)
        return Response(status: 204)
    }

    /// `{"issuer_id","key_id","key_fingerprint","created_at","updated_at"}`: there is no field for the key.
    static func credentialsBody(_ credentials: AppStoreCredentials) -> [UInt8] {
        var body = JSONBody(capacity: 256)
        body.beginObject()
        body.field("issuer_id", credentials.issuerId)
        body.field("key_id", credentials.keyId)
        body.field("key_fingerprint", credentials.keyFingerprint)
        body.field("created_at", credentials.createdAt)
        body.field("updated_at", credentials.updatedAt)
        body.endObject()
        return body.bytes
    }
}
