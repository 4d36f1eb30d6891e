import Domain
import HTTPCore
import JSON

/// One entry of `details`: which field (a JSON path, array indices as strings) and what is wrong with it.
struct ValidationDetail: Sendable, Equatable {
    var path: [String]
    var message: String
}

/// A failure the API itself detects (auth, validation), already in HTTP terms.
///
/// Handlers throw this, `DomainError` or `VerificationFailure`; `ErrorResponse.response(for:…)` turns any of
/// them into the one error shape `{"error","code","details"?,"suggestion","request_id"?}`.
struct APIError: Error, Sendable {
    var status: Int
    var code: String
    var message: String
    var suggestion: String
    var details: [ValidationDetail] = []

    static func validation(_ details: [ValidationDetail], suggestion: String) -> APIError {
        APIError(status: 400, code: "VALIDATION_ERROR", message: "Validation error", suggestion: suggestion,
                 details: details)
    }

    static func unsupportedContentType(suggestion: String) -> APIError {
        APIError(status: 400, code: "VALIDATION_ERROR", message: "Content-Type must be application/json",
                 suggestion: suggestion,
                 details: [ValidationDetail(path: [], message: "Expected Content-Type: application/json")])
    }

    /// The parser's description names the rule and the byte offset, never the input bytes, so it is safe to echo.
    static func invalidJSON(_ error: JSONError, suggestion: String) -> APIError {
        APIError(status: 400, code: "INVALID_JSON", message: "Invalid JSON: \(error.code) at byte \(error.offset)",
                 suggestion: suggestion)
    }

    static func invalidPublicKey(suggestion: String) -> APIError {
        APIError(status: 401, code: "AUTH_INVALID_PUBLIC_KEY", message: "Invalid public key.", suggestion: suggestion)
    }

    static let secretKeyRequired = APIError(
        status: 401, code: "AUTH_SECRET_KEY_REQUIRED", message: "Secret key required.",
        suggestion: "This project requires the secret key for reads: call from your backend with Authorization: Bearer sk_...")

    static let invalidSecretKey = APIError(
        status: 401, code: "AUTH_INVALID_SECRET_KEY", message: "Invalid secret key.",
        suggestion: "Send the project's current secret key as Authorization: Bearer sk_... (rotate keys if it was lost).")

    static let adminDisabled = APIError(
        status: 404, code: "ADMIN_API_DISABLED", message: "Admin API is disabled.",
        suggestion: "Set BOUNCER_ADMIN_TOKEN on the server to enable the admin API, or use the bouncer CLI.")

    static let invalidAdminToken = APIError(
        status: 401, code: "AUTH_INVALID_ADMIN_TOKEN", message: "Invalid admin token.",
        suggestion: "Send Authorization: Bearer <BOUNCER_ADMIN_TOKEN>.")
}

/// The single place where errors become HTTP responses.
enum ErrorResponse {
    /// Seconds a client should wait before retrying after a 503.
    static let retryAfterSeconds = "1"

    /// The response for any error a handler threw. Unmapped errors become 500 `INTERNAL_ERROR` with the request
    /// id and no internals; the full error goes to `log` (never the body, keys or JWS: only the error value).
    static func response(for error: any Error, request: Request, log: @Sendable (String) -> Void) -> Response {
        switch error {
        case let error as APIError:
            return render(status: error.status, code: error.code, message: error.message,
                          suggestion: error.suggestion, details: error.details)
        case let failure as VerificationFailure:
            if failure.isRetryable {
                log(logLine(request, status: 503, "retryable verification failure: \(String(reflecting: failure))"))
                return serviceUnavailable(request)
            }
            var (title, suggestion) = verificationText(failure.code)
            if request.routeTemplate == notificationRoute {
                // Only Apple calls the webhook: point the operator at App Store Connect, not at StoreKit.
                suggestion = notificationVerificationSuggestion(failure.code)
            }
            return render(status: 400, code: failure.code, message: "\(title): \(failure.reason)",
                          suggestion: suggestion)
        case let error as DomainError:
            switch error.code {
            case .serviceUnavailable:
                log(logLine(request, status: 503, String(reflecting: error)))
                return serviceUnavailable(request)
            case .purchaseOwnedByAnotherUser:
                return render(
                    status: 409, code: error.code.rawValue, message: "This purchase belongs to another user.",
                    suggestion: "The project's transfer_policy is block: the first user keeps the purchase. "
                        + "Set transfer_policy to transfer or share to allow restores on other accounts.")
            case .projectNotFound:
                return projectNotFound
            case .productNotFound:
                return productNotFound
            case .transactionConflict:
                // Logged (project, transaction id, the differing fields: `underlying`), never the JWS.
                log(logLine(request, status: 409, String(reflecting: error)))
                return render(
                    status: 409, code: error.code.rawValue,
                    message: "Transaction conflict: the transaction id is already recorded with a different identity.",
                    suggestion: "This transaction id is already recorded with a different original_transaction_id, "
                        + "product_id or bundle_id in the same environment; nothing was written. Send the "
                        + "transaction exactly as StoreKit 2 returned it.")
            case .appAccountTokenMismatch:
                return render(
                    status: 403, code: error.code.rawValue, message: error.message,
                    suggestion: appAccountTokenSuggestion)
            case .invalidInput:
                return render(
                    status: 400, code: error.code.rawValue, message: "Validation error",
                    suggestion: "Correct the fields named in details and retry.",
                    details: error.details.map { ValidationDetail(path: $0.path, message: $0.message) })
            case .conflict:
                return render(
                    status: 409, code: error.code.rawValue, message: "The request conflicts with stored data.",
                    suggestion: "Reload the resource and retry.")
            default:
                return internalError(error, request: request, log: log)
            }
        default:
            return internalError(error, request: request, log: log)
        }
    }

    /// For `APP_ACCOUNT_TOKEN_MISMATCH`: how an app binds purchases to its accounts with StoreKit 2.
    static let appAccountTokenSuggestion =
        "This project's app_account_token_policy is require_match: the transaction's appAccountToken must equal the "
        + "posted user_id. At purchase, pass the signed-in user's UUID with "
        + "Product.PurchaseOption.appAccountToken(uuid) in StoreKit 2, and post that same UUID as user_id."

    static var projectNotFound: Response {
        render(status: 404, code: "PROJECT_NOT_FOUND", message: "Project not found.",
               suggestion: "Check the project id; GET /v1/admin/projects lists them.")
    }

    static var productNotFound: Response {
        render(status: 404, code: "PRODUCT_NOT_FOUND", message: "Product not found.",
               suggestion: "Check the product id; GET /v1/admin/projects/:id/products lists them.")
    }

    private static func serviceUnavailable(_ request: Request) -> Response {
        var response = render(
            status: 503, code: "SERVICE_UNAVAILABLE", message: "Service temporarily unavailable.",
            suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.",
            requestID: request.requestID)
        response.headers.set("Retry-After", retryAfterSeconds)
        return response
    }

    /// One structured (JSON) log line for a failed request, like the access log: the error value only, never the
    /// body, keys or JWS.
    static func logLine(_ request: Request, status: Int, _ error: String) -> String {
        JSONValue.object(JSONObject([
            ("event", "request_error"), ("request_id", .string(request.requestID)),
            ("route", .string(request.routeTemplate)), ("status", JSONValue(status)), ("error", .string(error)),
        ])).serializedString()
    }

    private static func internalError(
        _ error: any Error, request: Request, log: @Sendable (String) -> Void
    ) -> Response {
        log(logLine(request, status: 500, String(reflecting: error)))
        return render(status: 500, code: "INTERNAL_ERROR", message: "Internal server error.",
                      suggestion: "Retry later; if it persists, report the request_id to the operator.",
                      requestID: request.requestID)
    }

    /// Title and suggestion per verifier code; the verifier's reason completes the title.
    static func verificationText(_ code: String) -> (title: String, suggestion: String) {
        switch code {
        case "INVALID_JWS_FORMAT":
            return ("Invalid JWS format",
                    "Provide a valid JWS string (3 dot-separated base64url parts) from StoreKit 2 "
                        + "Transaction.jsonRepresentation.")
        case "JWS_UNSUPPORTED_ALGORITHM":
            return ("Unsupported JWS algorithm",
                    "StoreKit 2 signs with ES256: send the JWS exactly as StoreKit returned it.")
        case "JWS_VERIFICATION_FAILED":
            return ("JWS verification failed",
                    "Send the JWS exactly as StoreKit 2 returned it; it must be signed by Apple "
                        + "(or by Xcode when the project allows it).")
        case "BUNDLE_ID_MISMATCH":
            return ("Bundle ID mismatch",
                    "The transaction belongs to another app: use the public key of the project whose "
                        + "bundle_id matches the app.")
        case "ENVIRONMENT_NOT_ALLOWED":
            return ("Environment not allowed",
                    "Allow the environment in the project's settings (environments, allow_xcode) "
                        + "or post from an allowed build.")
        case "APP_APPLE_ID_MISMATCH":
            return ("App Apple ID mismatch",
                    "Set the project's app_apple_id to the app's Apple ID, or clear it.")
        default:
            return ("Signed data rejected", "Send the signed data exactly as Apple returned it.")
        }
    }

    /// The App Store Server Notifications webhook's route template.
    static let notificationRoute = "/v1/notifications/:publicKey"

    /// The webhook's suggestion per verifier code: the caller is Apple (or someone pretending to be), and the
    /// person reading the error is the operator who configured App Store Connect.
    static func notificationVerificationSuggestion(_ code: String) -> String {
        switch code {
        case "BUNDLE_ID_MISMATCH", "APP_APPLE_ID_MISMATCH", "ENVIRONMENT_NOT_ALLOWED":
            return "This notification is for another app or environment: in App Store Connect, use the URL with the "
                + "public key of the project whose bundle_id, app_apple_id and environments match the app."
        default:
            return "Only App Store Server Notifications V2 signed by Apple are accepted: send Apple's body "
                + "{\"signedPayload\": \"...\"} unchanged."
        }
    }

    /// The error body: `error`, `code`, `details` (when any), `suggestion`, `request_id` (5xx).
    static func render(
        status: Int, code: String, message: String, suggestion: String, details: [ValidationDetail] = [],
        requestID: String? = nil
    ) -> Response {
        var body = JSONBody(capacity: 160)
        body.raw(#"{"error":"#)
        body.string(message)
        body.raw(#","code":"#)
        body.string(code)
        if !details.isEmpty {
            body.raw(#","details":["#)
            for (i, detail) in details.enumerated() {
                if i > 0 { body.raw(",") }
                body.raw(#"{"path":"#)
                body.strings(detail.path)
                body.raw(#","message":"#)
                body.string(detail.message)
                body.raw("}")
            }
            body.raw("]")
        }
        body.raw(#","suggestion":"#)
        body.string(suggestion)
        if let requestID {
            body.raw(#","request_id":"#)
            body.string(requestID)
        }
        body.raw("}")
        return Response.json(status, body.bytes)
    }
}
