import Domain
import HTTPCore
import JSON

/// The failures the API itself detects (auth, validation, media type), in HTTP terms.
///
/// Handlers throw these, `DomainError` or `VerificationFailure`; `ErrorMapping.httpError(for:…)` maps the other two.
/// The server renders every `HTTPError` into the one error shape; the API never writes an error body.
extension HTTPError {
    static func validation(_ details: [ErrorDetail], suggestion: String) -> HTTPError {
        HTTPError(status: 400, code: "VALIDATION_ERROR", message: "Validation error", suggestion: suggestion,
                  details: details)
    }

    /// `curl -d` sends `application/x-www-form-urlencoded`: tell that user exactly what to add.
    static let formURLEncodedBody = HTTPError(
        status: 415, code: "UNSUPPORTED_MEDIA_TYPE",
        message: "Content-Type application/x-www-form-urlencoded is not supported; the body must be JSON.",
        suggestion: "Send the JSON body with Content-Type: application/json "
            + "(curl -d sends application/x-www-form-urlencoded: add -H 'Content-Type: application/json').")

    static let unsupportedMediaType = HTTPError(
        status: 415, code: "UNSUPPORTED_MEDIA_TYPE", message: "Unsupported Content-Type; the body must be JSON.",
        suggestion: "Send the JSON body with Content-Type: application/json.")

    /// The parser's description names the rule and the byte offset, never the input bytes, so it is safe to echo.
    static func invalidJSON(_ error: JSONError, suggestion: String) -> HTTPError {
        HTTPError(status: 400, code: "INVALID_JSON", message: "Invalid JSON: \(error.code) at byte \(error.offset)",
                  suggestion: suggestion)
    }

    static func invalidPublicKey(suggestion: String) -> HTTPError {
        HTTPError(status: 401, code: "AUTH_INVALID_PUBLIC_KEY", message: "Invalid public key.", suggestion: suggestion)
    }

    /// 401 `AUTH_SECRET_KEY_REQUIRED`: the route needs the project's secret key; `suggestion` says why this one does.
    static func requiresSecretKey(_ suggestion: String) -> HTTPError {
        HTTPError(status: 401, code: "AUTH_SECRET_KEY_REQUIRED", message: "Secret key required.", suggestion: suggestion)
    }

    static let secretKeyRequired = requiresSecretKey(
        "This project requires the secret key for reads: call from your backend with Authorization: Bearer sk_...")

    static let invalidSecretKey = HTTPError(
        status: 401, code: "AUTH_INVALID_SECRET_KEY", message: "Invalid secret key.",
        suggestion: "Send the project's current secret key as Authorization: Bearer sk_... (rotate keys if it was lost).")

    /// A public-key lookup by transaction id met a purchase another user holds (`OwnershipRules.effectivePolicy`):
    /// the same code as the `block` policy's refusal, a suggestion naming the proofs that do apply the policy.
    static let lookupOwnedByAnotherUser = HTTPError(
        status: 409, code: "PURCHASE_OWNED_BY_ANOTHER_USER", message: "This purchase belongs to another user.",
        suggestion: "A transaction id does not prove who bought the purchase, so with the public key alone it never "
            + "moves a purchase from the user who holds it. Post the signed transaction from the device "
            + "(signed_transaction_info), or call from your backend with Authorization: Bearer sk_... to apply the "
            + "project's transfer_policy.")

    static let adminDisabled = HTTPError(
        status: 404, code: "ADMIN_API_DISABLED", message: "Admin API is disabled.",
        suggestion: "Set BOUNCER_ADMIN_TOKEN on the server to enable the admin API, or use the bouncer CLI.")

    /// 401 `AUTH_INVALID_ADMIN_TOKEN`, with how this front end presents the token.
    static func adminTokenRefused(_ suggestion: String) -> HTTPError {
        HTTPError(status: 401, code: "AUTH_INVALID_ADMIN_TOKEN", message: "Invalid admin token.", suggestion: suggestion)
    }

    static let invalidAdminToken = adminTokenRefused("Send Authorization: Bearer <BOUNCER_ADMIN_TOKEN>.")

    /// Too many wrong admin tokens from one client address (`FailureLockout`): refused before any comparison.
    static func tooManyAdminAuthFailures(retryAfterSeconds: Int) -> HTTPError {
        HTTPError(
            status: 429, code: "AUTH_TOO_MANY_FAILURES", message: "Too many failed admin sign-ins from this address.",
            suggestion: "Wait the number of seconds in Retry-After, then send the right BOUNCER_ADMIN_TOKEN; each "
                + "further lockout lasts twice as long.",
            headers: ["Retry-After": String(retryAfterSeconds)])
    }

    /// A `bk_…` bearer that is no live key: unknown, expired or revoked (one answer for all three).
    static let invalidAPIKey = HTTPError(
        status: 401, code: "AUTH_INVALID_API_KEY", message: "Invalid API key.",
        suggestion: "The key is unknown, expired or revoked. Send Authorization: Bearer <bk_… key>; an owner or admin "
            + "of the account creates keys with POST /v1/admin/accounts/{id}/api-keys.")

    /// Unknown email, wrong password, or an invite not accepted yet: one answer.
    static let memberSignInFailed = HTTPError(
        status: 401, code: "AUTH_INVALID_CREDENTIALS", message: "Invalid email or password.",
        suggestion: "Check the email and password. A new member sets a password with POST /v1/admin/invites/accept "
            + "first; repeated failures lock the address and the email out for a while (429 with Retry-After).")

    /// The password was right; TOTP is on and no code came.
    static let totpRequired = HTTPError(
        status: 401, code: "AUTH_TOTP_REQUIRED", message: "A TOTP code is required.",
        suggestion: "Send the same email and password again with \"totp\": the 6-digit code of your authenticator app.")

    /// The code was wrong, outside ±1 step of 30 s, or already used.
    static let totpInvalid = HTTPError(
        status: 401, code: "AUTH_TOTP_INVALID", message: "Invalid TOTP code.",
        suggestion: "Send the current 6-digit code of your authenticator app (each code works once; check the "
            + "device's clock).")

    /// Unknown, used or expired invite: one answer for the three.
    static let inviteInvalid = HTTPError(
        status: 400, code: "INVITE_INVALID", message: "Invalid invite token.",
        suggestion: "The invite is unknown, already used or expired (invites last 7 days). Ask an owner or admin of "
            + "the account to invite you again (POST /v1/admin/accounts/{id}/members).")

    static let consoleSignInFailed = adminTokenRefused("Enter the server's BOUNCER_ADMIN_TOKEN.")

    static let consoleSessionInvalid = HTTPError(
        status: 401, code: "CONSOLE_SESSION_INVALID", message: "No live console session.",
        suggestion: "Sign in again at /admin/ with the admin token (sessions expire).")

    static let csrfTokenInvalid = HTTPError(
        status: 403, code: "CSRF_TOKEN_INVALID", message: "Missing or wrong X-CSRF-Token.",
        suggestion: "Send the csrf_token from GET /v1/admin/session as the X-CSRF-Token header.")

    static let projectNotFound = HTTPError(
        status: 404, code: "PROJECT_NOT_FOUND", message: "Project not found.",
        suggestion: "Check the project id; GET /v1/admin/projects lists them.")

    /// 409, not 503: the refusal is final until the operator configures the key and restarts, and a 503 would
    /// carry `Retry-After` and invite retries that cannot succeed.
    /// 409 `ENCRYPTION_KEY_MISSING`: what was refused, and the operator's fix (a new key by default).
    static func noEncryptionKey(_ refused: String, suggestion: String = setEncryptionKey + " and restart.")
        -> HTTPError {
        HTTPError(status: 409, code: "ENCRYPTION_KEY_MISSING", message: refused + ": the server has no encryption key.",
                  suggestion: suggestion)
    }

    static let setEncryptionKey = "Set BOUNCER_ENCRYPTION_KEY on the server to 32 random bytes in base64 "
        + "(generate one with `openssl rand -base64 32`, keep it in your secret store)"

    static let encryptionKeyMissing = noEncryptionKey("App Store credentials cannot be stored")

    /// Like `encryptionKeyMissing`, on the routes that call Apple with credentials stored earlier: they are sealed
    /// under a key this server no longer has, so generating a new key would not open them.
    static let credentialsEncryptionKeyMissing = noEncryptionKey(
        "The project's App Store credentials cannot be opened",
        suggestion: "Set BOUNCER_ENCRYPTION_KEY on the server to the key the credentials were stored under and "
            + "restart, or store the credentials again after setting a new key.")

    /// Like `encryptionKeyMissing` (409, final until the operator acts), in the words of the token route.
    static let tokenEncryptionKeyMissing = noEncryptionKey(
        "Entitlement tokens cannot be signed",
        suggestion: setEncryptionKey + " and restart: the signing key is generated then and stored encrypted under it.")

    /// `POST /v1/app-transactions` with `transaction_id` and `user_id` but only the public key: Apple is not asked.
    static let appTransactionLookupSecretKeyRequired = requiresSecretKey(
        "A transaction id does not prove who the customer is: to bind user_id to the app transaction Apple "
            + "returns, call from your backend with Authorization: Bearer sk_... (or post signed_app_transaction from "
            + "the device).")

    static let tokenSecretKeyRequired = requiresSecretKey(
        "Entitlement tokens are issued to backends: send the project's secret key as "
            + "Authorization: Bearer sk_... (apps get a token in the 201 of POST /v1/receipts/:public_key).")

    /// A lookup by transaction id would call Apple beyond its budget (`LookupBudget`): nothing was asked or written.
    static func appleLookupRateLimited(_ decision: RateLimitDecision, perClient: Bool) -> HTTPError {
        var headers = HTTPHeaders()
        headers.set("Retry-After", String(decision.retryAfterSeconds))
        let whose = perClient ? "from your address" : "for this project"
        return HTTPError(
            status: 429, code: "APPLE_LOOKUP_RATE_LIMITED", message: "Too many lookups by transaction id \(whose).",
            suggestion: "Retry after the number of seconds in Retry-After, or send the StoreKit 2 signed transaction as "
                + "signed_transaction_info instead (it needs no call to Apple). Lookups by transaction_id are limited "
                + "because each costs calls to Apple with the project's key.",
            headers: headers)
    }

    /// A StoreKit 1 receipt with more in-app records than `BOUNCER_MAX_RECEIPT_RECORDS`: nothing was written.
    static func tooManyReceiptRecords(_ count: Int, limit: Int) -> HTTPError {
        HTTPError(
            status: 413, code: "RECEIPT_TOO_MANY_RECORDS",
            message: "The receipt carries \(count) in-app records; this server takes at most \(limit).",
            suggestion: "Real receipts hold far fewer records; post the StoreKit 2 signed transactions "
                + "(signed_transaction_info) instead, or ask the operator to raise BOUNCER_MAX_RECEIPT_RECORDS.",
            details: [ErrorDetail(path: ["receipt_data"], message: "\(count) in-app records, limit \(limit)")])
    }

    static let productNotFound = HTTPError(
        status: 404, code: "PRODUCT_NOT_FOUND", message: "Product not found.",
        suggestion: "Check the product id; GET /v1/admin/projects/:id/products lists them.")

    /// Offers are signed only for products mapped in the project.
    static let offerProductNotFound = HTTPError(
        status: 404, code: "PRODUCT_NOT_FOUND", message: "Product not found in this project.",
        suggestion: "Offers are signed only for the project's mapped products: map the product first with PUT "
            + "/v1/admin/projects/:id/products/:productId (or `bouncer product set`), then retry.")
}

extension ErrorDetail {
    /// A domain rule's problem with an input, as the error body's detail.
    init(_ problem: FieldProblem) {
        self.init(path: problem.path, message: problem.message)
    }
}

/// The single place where domain and verification errors become `HTTPError`s (the server renders them).
enum ErrorMapping {
    /// The `HTTPError` for an error a handler threw, or nil when it has no mapping: the caller rethrows it and the
    /// server answers 500 `INTERNAL_ERROR` with the request id. Causes of 5xx go to `log` (the error value only,
    /// never the body, keys or JWS).
    /// `context` is what the route declared its errors are about (`APIRoute.errors`): which signed field, which use of
    /// the encryption key, which kind of product.
    static func httpError(
        for error: any Error, request: Request, context: ErrorContext = .standard, log: @Sendable (String) -> Void
    ) -> HTTPError? {
        switch error {
        case let error as HTTPError:
            return error
        case let failure as VerificationFailure:
            if failure.isRetryable {
                log(logLine(request, status: 503, "retryable verification failure: \(String(reflecting: failure))"))
                return serviceUnavailable
            }
            let isWebhook = context.signedData == .notification
            var (title, suggestion) = verificationText(failure.code)
            if isWebhook {
                // Only Apple calls the webhook: point the operator at App Store Connect, not at StoreKit.
                suggestion = notificationVerificationSuggestion(failure.code)
            } else if context.signedData == .retentionRequest {
                suggestion = retentionVerificationSuggestion(failure.code)
            }
            let signedField: String
            switch context.signedData {
            case .notification, .retentionRequest: signedField = "signedPayload"
            case .appTransaction: signedField = "signed_app_transaction"
            case .transaction: signedField = "signed_transaction_info"
            }
            let field = failure.field ?? signedField
            return HTTPError(
                status: 400, code: failure.code.rawValue, message: "\(title): \(failure.reason)", suggestion: suggestion,
                details: [ErrorDetail(path: [field] + (failure.payloadField.map { [$0] } ?? []), message: failure.reason,
                                      step: failure.step ?? "format")])
        case let error as AppStoreAPIError:
            return appStoreError(error, request: request, log: log)
        case let error as DomainError:
            let answer = domainError(error, context: context)
            if answer == nil || loggedDomainCodes.contains(error.code) {
                log(logLine(request, status: answer?.status ?? 500, String(reflecting: error)))
            }
            return answer
        default:
            log(logLine(request, status: 500, String(reflecting: error)))
            return nil
        }
    }

    /// The domain errors whose cause goes to the log (the error value: project, ids, Apple's code), besides every
    /// code without an answer (a 500).
    static let loggedDomainCodes: Set<DomainError.Code> = [
        .serviceUnavailable, .transactionConflict, .encryptionKeyUnknown, .sealedSecretCorrupt, .xcodeLimitReached,
        .subscriptionExtensionIneligible, .subscriptionExtensionLimitReached,
    ]

    /// The answer to a domain error, or nil (a 500) for a code without one.
    static func domainError(_ error: DomainError, context: ErrorContext) -> HTTPError? {
        if let answer = domainAnswers[error.code] {
            return HTTPError(status: answer.status, code: error.code.rawValue, message: answer.message ?? error.message,
                             suggestion: answer.suggestion)
        }
        switch error.code {
        case .serviceUnavailable:
            return serviceUnavailable
        case .projectNotFound:
            return .projectNotFound
        case .productNotFound:
            // The offer route's caller is an app: the fix is an admin's mapping, not another id to look up.
            switch context.product {
            case .offer: return .offerProductNotFound
            case .mapping: return .productNotFound
            }
        case .permissionDenied:
            return HTTPError(
                status: 403, code: error.code.rawValue, message: error.message,
                suggestion: "Use a credential whose role has the permission named in details (the README's "
                    + "\"Accounts, roles and API keys\" lists each role's), or ask an owner of the account for one.",
                details: error.details.map(ErrorDetail.init))
        case .inviteInvalid:
            return .inviteInvalid
        case .invalidInput:
            return .validation(error.details.map(ErrorDetail.init), suggestion: "Correct the fields named in details and retry.")
        case .encryptionKeyMissing:
            // Storing refuses before anything is sealed; every other route can only meet stored credentials.
            switch context.encryptionKey {
            case .signTokens: return .tokenEncryptionKeyMissing
            case .storeCredentials: return .encryptionKeyMissing
            case .openCredentials: return .credentialsEncryptionKeyMissing
            case .storeWebhookSecret:
                return .noEncryptionKey("The webhook's signing secret cannot be stored")
            case .storeMemberSecret:
                return .noEncryptionKey("The TOTP secret cannot be stored")
            }
        case .encryptionKeyUnknown, .sealedSecretCorrupt:
            // The operator's problem, not the caller's: a 500 with a code that names it, the cause in the log.
            return HTTPError(
                status: 500, code: error.code.rawValue, message: "Stored credentials cannot be decrypted.",
                suggestion: "The operator must set BOUNCER_ENCRYPTION_KEY_PREVIOUS to the key that sealed them "
                    + "(then run `bouncer credentials reencrypt`), or store the credentials again.")
        case .webhookURLNotAllowed:
            return HTTPError(
                status: 400, code: error.code.rawValue, message: "Webhook URL not allowed: \(error.message)",
                suggestion: "Use an https URL whose host name resolves only to public addresses (not loopback, "
                    + "private, link-local or unique-local). For a receiver on a private network in development, "
                    + "the operator can set BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=1.",
                details: error.details.map(ErrorDetail.init))
        case .xcodeLimitReached:
            return HTTPError(
                status: 409, code: error.code.rawValue, message: error.message,
                suggestion: "Xcode (StoreKit Testing) data, which anyone can sign, is capped per project; nothing "
                    + "was written. Test with a new project, or ask the operator to raise "
                    + "BOUNCER_MAX_XCODE_TRANSACTIONS_PER_PROJECT.",
                details: error.details.map(ErrorDetail.init))
        default:
            return nil
        }
    }

    /// The answers of the domain error codes whose status and wording are the same on every route (the code is the
    /// error's own; a `nil` message is the error's own too, which names what it is about).
    static let domainAnswers: [DomainError.Code: (status: Int, message: String?, suggestion: String)] = [
        .appStoreCredentialsNotFound: (
            404, "This project has no App Store credentials.",
            "Store them with PUT /v1/admin/projects/:id/app-store-credentials (or `bouncer project credentials set`)."),
        .entitlementTokensDisabled: (
            403, "Entitlement tokens are disabled for this project.",
            "An admin can enable them: PATCH /v1/admin/projects/{id} with {\"entitlement_tokens\": true} "
                + "(or `bouncer project update PROJECT_ID --entitlement-tokens on`)."),
        .purchaseOwnedByAnotherUser: (
            409, "This purchase belongs to another user.",
            "The project's transfer_policy is block: the first user keeps the purchase. "
                + "Set transfer_policy to transfer or share to allow restores on other accounts."),
        // Logged (project, transaction id, the differing fields: `underlying`), never the JWS.
        .transactionConflict: (
            409, "Transaction conflict: the transaction id is already recorded with a different identity.",
            "This transaction id is already recorded with a different original_transaction_id, "
                + "product_id or bundle_id in the same environment; nothing was written. Send the "
                + "transaction exactly as StoreKit 2 returned it."),
        .appStoreCredentialsMissing: (
            400, "The project has no App Store Server API credentials.",
            "An admin must store the project's In-App Purchase key first: PUT "
                + "/v1/admin/projects/{id}/app-store-credentials with issuer_id, key_id and private_key "
                + "(see the README's \"Connect to Apple\")."),
        .reconcileInProgress: (
            409, "A reconciliation of this project is already running.",
            "Wait for it to finish (GET /v1/admin/projects/{id}/reconcile/runs shows it) and retry; "
                + "only one run per project at a time, on any instance."),
        .grantNotFound: (
            404, "Grant not found.",
            "Check the grant id and the user id; GET /v1/admin/projects/{id}/users/{userId}/export "
                + "lists the user's grants."),
        .transactionNotFound: (
            404, "No transaction with that id in this project.",
            "Check the transaction id (digits only) and the project: only transactions Bouncer has "
                + "recorded for this project (posted to /v1/receipts, received in a notification or recovered "
                + "by reconciliation) are found."),
        .webhookNotConfigured: (
            404, "This project has no webhook.",
            "Configure one with PUT /v1/admin/projects/{id}/webhook and {\"url\": \"https://…\"}."),
        .webhookEventNotFound: (
            404, "Webhook event not found.",
            "Check the event id (evt_…); GET /v1/admin/projects/{id}/webhook/deliveries lists them."),
        .conflict: (409, "The request conflicts with stored data.", "Reload the resource and retry."),
        .purchaseNotFound: (
            404, "No such purchase in this project.",
            "Use the original transaction id of a Production or Sandbox purchase Bouncer has "
                + "recorded for this project (posted to /v1/receipts or received in a notification)."),
        .renewalExtensionNotFound: (
            404, "No such renewal extension in this project.",
            "Use the request_identifier that POST /v1/admin/projects/{id}/products/{productId}/extend returned "
                + "(with status 200) for this project and product."),
        .testNotificationNotFound: (
            404, "Apple does not know this test notification token.",
            "Use the token POST /v1/admin/projects/{id}/app-store/test-notification returned, with "
                + "the same environment query parameter."),
        .subscriptionExtensionIneligible: (
            422, "Apple says this subscription cannot be extended.",
            "Apple extends only active, paid subscription periods (not free trials, offer periods, "
                + "billing retry or grace, nor Family Sharing purchases). The attempt is recorded; nothing changed."),
        .retentionRequestStale: (
            401, "The retention request's signedDate is outside the freshness window.",
            "Apple's real-time requests are answered only within 5 minutes of their signedDate (1 minute ahead for "
                + "clock skew). The App Store shows the default message; check the server's clock."),
        .retentionRequestReplayed: (
            409, "This retention request (requestIdentifier) was already answered.",
            "Each real-time request is answered once; a replay gets no offer and the App Store shows the default "
                + "message."),
        .retentionNoMatchingRule: (
            404, "No retention rule matched.",
            "The App Store shows the product's default message. Add a rule with PUT "
                + "/v1/admin/projects/{id}/retention/rules, or try one with POST …/retention/simulate."),
        .retentionMessageExists: (
            409, nil,
            "Message ids are never reused at Apple: upload under a new UUID, or delete the old message first "
                + "(DELETE /v1/admin/projects/{id}/retention/messages/{messageId})."),
        .retentionImageExists: (
            409, nil,
            "Image ids are never reused at Apple: upload under a new UUID, or delete the old image first "
                + "(DELETE /v1/admin/projects/{id}/retention/images/{imageId})."),
        .retentionMessageNotFound: (
            404, nil,
            "GET /v1/admin/projects/{id}/retention/messages lists the messages Apple holds in that environment "
                + "(environment=Sandbox by default)."),
        .retentionImageNotFound: (
            404, nil,
            "GET /v1/admin/projects/{id}/retention/images lists the images Apple holds in that environment "
                + "(environment=Sandbox by default); upload the image before a message that uses it."),
        .retentionDefaultMessageNotFound: (
            404, nil,
            "No default message is configured for this product and locale in that environment: set one with PUT "
                + "/v1/admin/projects/{id}/retention/default-messages/{productId}/{locale}."),
        .retentionRejectedByApple: (
            422, nil,
            "Apple's reason is in the message: headers hold at most 66 characters, bodies 144, alt texts 150; a "
                + "default message must be approved; Production needs a passed performance test first."),
        .subscriptionExtensionLimitReached: (
            409, "This subscription was already extended as often as Apple allows.",
            "Apple allows two extensions per subscription in a 365-day period. The attempt is "
                + "recorded; nothing changed."),
        .appAccountTokenMismatch: (403, nil, appAccountTokenSuggestion),
        .accountNotFound: (404, "Account not found.", "Check the account id; GET /v1/admin/accounts lists them."),
        .accountHasProjects: (
            409, nil,
            "Delete the account's projects first (DELETE /v1/admin/projects/{id}; "
                + "GET /v1/admin/projects lists them with their account_id), then delete the account."),
        .apiKeyNotFound: (
            404, "API key not found.",
            "Check the key id; GET /v1/admin/accounts/{id}/api-keys lists the account's keys."),
        .memberNotFound: (
            404, "Member not found.", "Check the member id; GET /v1/admin/accounts/{id}/members lists them."),
        .memberEmailTaken: (
            409, nil,
            "Emails are unique per account (compared trimmed and lower-case); change "
                + "the existing member's role with PATCH instead, or remove them first."),
        .lastOwner: (
            409, nil,
            "An account keeps at least one active owner: make another member owner "
                + "(PATCH /v1/admin/accounts/{id}/members/{memberId} {\"role\": \"owner\"}) first."),
    ]

    /// A call to Apple's App Store Server API that did not give an answer to act on. Never a verdict on the purchase
    /// unless Apple said the id does not exist (404). 502 and 503 are logged (the error's description: Apple's code
    /// and message, never the token or key).
    static func appStoreError(_ error: AppStoreAPIError, request: Request, log: @Sendable (String) -> Void) -> HTTPError {
        func logged(_ status: Int) { log(logLine(request, status: status, "App Store Server API: \(error)")) }
        switch error.kind {
        case .notFound:
            return HTTPError(
                status: 404, code: "TRANSACTION_NOT_FOUND", message: "Apple does not know this transaction id.",
                suggestion: "Check the transaction id (StoreKit 2 Transaction.id, digits only) and that the purchase "
                    + "was made in an environment the project allows (environments: Production, Sandbox).")
        case .unauthorized:
            logged(502)
            return HTTPError(
                status: 502, code: "APP_STORE_AUTH_FAILED", message: "Apple refused the project's App Store credentials.",
                suggestion: "In App Store Connect → Users and Access → Integrations → In-App Purchase, check that the "
                    + "Issuer ID and Key ID match the stored ones and that the key is active (not revoked), and that "
                    + "the project's bundle_id is the app's bundle ID; then store the credentials again with PUT "
                    + "/v1/admin/projects/{id}/app-store-credentials.")
        case .unavailable:
            logged(503)
            var headers = HTTPHeaders()
            headers.set("Retry-After", String(min(max(error.retryAfterSeconds ?? 30, 1), 3600)))
            return HTTPError(
                status: 503, code: "APPLE_UNAVAILABLE", message: "Apple's App Store Server API is unavailable.",
                suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.",
                headers: headers)
        case .rejected:
            logged(502)
            return HTTPError(
                status: 502, code: "APPLE_REQUEST_REJECTED", message: "Apple rejected the request.",
                suggestion: "Check the transaction id; if it is right, this is a Bouncer bug: report it with the "
                    + "request id.")
        case .invalidResponse:
            logged(502)
            return HTTPError(
                status: 502, code: "APPLE_INVALID_RESPONSE", message: "Apple's answer could not be used.",
                suggestion: "Retry later; if it persists, report it with the request id. Nothing was recorded.")
        case .invalidRequest:
            logged(500)
            return HTTPError(
                status: 500, code: "APP_STORE_REQUEST_INVALID", message: "The request to Apple could not be made.",
                suggestion: "The stored In-App Purchase key may be unusable: store the project's credentials again "
                    + "with PUT /v1/admin/projects/{id}/app-store-credentials.")
        }
    }

    /// For `APP_ACCOUNT_TOKEN_MISMATCH`: how an app binds purchases to its accounts with StoreKit 2.
    static let appAccountTokenSuggestion =
        "This project's app_account_token_policy is require_match: the transaction's appAccountToken must equal the "
        + "posted user_id. At purchase, pass the signed-in user's UUID with "
        + "Product.PurchaseOption.appAccountToken(uuid) in StoreKit 2, and post that same UUID as user_id."

    /// A dependency (the database, a revocation check) is down: retry later; `Retry-After` is the server's.
    static let serviceUnavailable = HTTPError.serviceUnavailable(
        message: "Service temporarily unavailable.",
        suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.")

    /// One structured (JSON) log line for a failed request, like the access log: the error value only, never the
    /// body, keys or JWS.
    static func logLine(_ request: Request, status: Int, _ error: String) -> String {
        JSONValue.object(JSONObject([
            ("event", "request_error"), ("request_id", .string(request.requestID)),
            ("route", .string(request.routeTemplate)), ("status", JSONValue(status)), ("error", .string(error)),
        ])).serializedString()
    }

    /// Title and suggestion per verifier code; the verifier's reason completes the title.
    static func verificationText(_ code: VerificationFailure.Code) -> (title: String, suggestion: String) {
        switch code {
        case .invalidJWSFormat:
            return ("Invalid JWS format",
                    "Provide a valid JWS string (3 dot-separated base64url parts) from StoreKit 2 "
                        + "Transaction.jsonRepresentation.")
        case .unsupportedAlgorithm:
            return ("Unsupported JWS algorithm",
                    "StoreKit 2 signs with ES256: send the JWS exactly as StoreKit returned it.")
        case .jwsVerificationFailed:
            // The published contract's exact texts (anchors §0).
            return ("JWS signature verification failed",
                    "The JWS signature could not be verified against Apple's certificate chain. "
                        + "Ensure you are sending a genuine StoreKit 2 signed transaction.")
        case .bundleIdMismatch:
            return ("Bundle ID mismatch",
                    "The transaction belongs to another app: use the public key of the project whose "
                        + "bundle_id matches the app.")
        case .environmentNotAllowed:
            return ("Environment not allowed",
                    "Allow the environment in the project's settings (environments, allow_xcode) "
                        + "or post from an allowed build.")
        case .invalidReceiptFormat:
            return ("Invalid receipt format",
                    "Send the app receipt exactly as StoreKit 1 returns it: the base64 of the file at "
                        + "Bundle.main.appStoreReceiptURL (a PKCS#7 container), not a JWS or a transaction receipt.")
        case .receiptVerificationFailed:
            return ("Receipt verification failed",
                    "The receipt's signature or certificate chain did not verify against Apple Inc. Root at the "
                        + "receipt's creation date. Send a genuine, unmodified receipt; refresh it with "
                        + "SKReceiptRefreshRequest if it is damaged.")
        case .appAppleIdMismatch:
            return ("App Apple ID mismatch",
                    "Set the project's app_apple_id to the app's Apple ID, or clear it.")
        case .unrecognized:
            return ("Signed data rejected", "Send the signed data exactly as Apple returned it.")
        }
    }

    /// The webhook's suggestion per verifier code: the caller is Apple (or someone pretending to be), and the
    /// person reading the error is the operator who configured App Store Connect.
    /// Only the App Store calls the Get Retention Message endpoint; any refusal makes it show the default message.
    static func retentionVerificationSuggestion(_ code: VerificationFailure.Code) -> String {
        switch code {
        case .bundleIdMismatch, .appAppleIdMismatch, .environmentNotAllowed:
            return "This retention request is for another app or environment (the App Store shows the default "
                + "message): configure the Realtime URL with the public key of the project whose app_apple_id and "
                + "environments match the app (a Production request needs app_apple_id)."
        case .invalidJWSFormat, .unsupportedAlgorithm, .jwsVerificationFailed, .invalidReceiptFormat,
             .receiptVerificationFailed, .unrecognized:
            return "Only real-time retention requests signed by Apple are answered (the App Store shows the default "
                + "message otherwise): send Apple's body {\"signedPayload\": \"...\"} unchanged."
        }
    }

    static func notificationVerificationSuggestion(_ code: VerificationFailure.Code) -> String {
        switch code {
        case .bundleIdMismatch, .appAppleIdMismatch, .environmentNotAllowed:
            return "This notification is for another app or environment: in App Store Connect, use the URL with the "
                + "public key of the project whose bundle_id, app_apple_id and environments match the app."
        case .invalidJWSFormat, .unsupportedAlgorithm, .jwsVerificationFailed, .invalidReceiptFormat,
             .receiptVerificationFailed, .unrecognized:
            return "Only App Store Server Notifications V2 signed by Apple are accepted: send Apple's body "
                + "{\"signedPayload\": \"...\"} unchanged."
        }
    }
}
