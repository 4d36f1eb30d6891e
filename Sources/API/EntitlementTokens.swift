import Domain
import HTTPCore

/// Entitlement tokens: `GET /v1/subscriptions/:publicKey/:userId/token` and the JWKS that verifies them.
struct EntitlementTokensController: APIController {
    let keys: KeyAuth
    /// `nil` answers 503 on both routes.
    let tokens: EntitlementTokens?

    var routes: [APIRoute] {
        [
            APIRoute(.get, "/v1/subscriptions/:publicKey/:userId/token", .appRead,
                     publicKey: SubscriptionsController.subscriptionsKeySuggestion,
                     errors: ErrorContext(encryptionKey: .signTokens), getEntitlementToken),
            APIRoute(.get, "/.well-known/jwks.json", .client, access: .anyone, getJWKS),
        ]
    }

    static let tokenUserIdSuggestion =
        "Put the user id (1 to 256 characters) in the URL path: GET /v1/subscriptions/:public_key/:user_id/token."

    /// `GET /v1/subscriptions/:publicKey/:userId/token` (secret key required): a signed token of what the user is
    /// entitled to now, for services that check entitlements without calling Bouncer.
    func getEntitlementToken(_ request: Request, _ project: Project) throws -> Response {
        guard request.headers["Authorization"] != nil else { throw HTTPError.tokenSecretKeyRequired }
        try keys.authorizeRead(request, project: project)
        let userId = try PathParameters.userId(request, project: project, suggestion: Self.tokenUserIdSuggestion)
        let issued = try Self.tokens(tokens).issue(project: project, userId: userId)
        var body = JSONBody(capacity: 128 + issued.token.utf8.count)
        body.beginObject()
        body.field("token", issued.token)
        body.field("expires_at", issued.expiresAt)
        body.endObject()
        var headers = HTTPHeaders()
        headers.set("Cache-Control", "no-store")
        return Response.json(200, body.bytes, headers: headers)
    }

    /// `GET /.well-known/jwks.json`: the public keys that verify entitlement tokens (RFC 7517), current first.
    /// Public and cacheable for 5 minutes; a verifier meeting an unknown `kid` refetches (a rotation happened).
    func getJWKS(_ request: Request) throws -> Response {
        let keys = try Self.tokens(tokens).publishedKeys()
        var body = JSONBody(capacity: 32 + 192 * keys.count)
        body.beginObject()
        body.objects("keys", keys) { key, body in
            body.field("kty", "EC")
            body.field("crv", "P-256")
            body.field("kid", key.kid)
            body.field("x", key.x)
            body.field("y", key.y)
            body.field("use", "sig")
            body.field("alg", "ES256")
        }
        body.endObject()
        var headers = HTTPHeaders()
        headers.set("Cache-Control", "public, max-age=\(Self.jwksMaxAgeSeconds)")
        return Response.json(200, body.bytes, headers: headers)
    }

    /// How long a JWKS answer may be cached.
    static let jwksMaxAgeSeconds = 300

    /// The `"entitlement_token"` of a receipt's 201 answer, when the project enables tokens and a user was bound.
    /// The token lists only what `granting` (the posted purchase, just bound to the user) grants now: a receipt
    /// needs only the public key, so it proves nothing about the user's other purchases; their whole set is the
    /// secret-key route's. The purchase is already recorded, so a token that cannot be issued (no encryption key,
    /// the database busy) is left out (`nil`) and logged, never turned into an error.
    static func receiptToken(project: Project, userId: String?, granting: [OwnedPurchase],
                             request: Request, tokens: EntitlementTokens?, log: @Sendable (String) -> Void) -> String? {
        guard project.entitlementTokens, let userId else { return nil }
        do {
            return try Self.tokens(tokens).issue(project: project, userId: userId,
                                                 holdings: UserHoldings(purchases: granting, appTransactions: [])).token
        } catch {
            log(ErrorMapping.logLine(request, status: 201, "entitlement token not issued: \(String(reflecting: error))"))
            return nil
        }
    }

    private static func tokens(_ tokens: EntitlementTokens?) throws -> EntitlementTokens {
        try unwired(tokens, "Entitlement tokens are not configured.", "entitlementTokens")
    }
}
