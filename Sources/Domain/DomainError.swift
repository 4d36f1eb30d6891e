/// A failure with a stable machine-readable code, raised by rules and by the adapters behind the ports.
///
/// `description` is safe to show a client; `underlying` (internals, causes) is for logs only.
public struct DomainError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable error code; new codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code as clients see it, e.g. `SERVICE_UNAVAILABLE`.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The database (or another dependency) is unreachable: retry later; never a verdict on a purchase.
        public static let serviceUnavailable = Code("SERVICE_UNAVAILABLE")
        /// `block` transfer policy: another user already holds the purchase.
        public static let purchaseOwnedByAnotherUser = Code("PURCHASE_OWNED_BY_ANOTHER_USER")
        /// No project with that id.
        public static let projectNotFound = Code("PROJECT_NOT_FOUND")
        /// No product with that id in the project.
        public static let productNotFound = Code("PRODUCT_NOT_FOUND")
        /// The request conflicts with stored data (e.g. a duplicate key).
        public static let conflict = Code("CONFLICT")
        /// Signed data names a transaction id already recorded (same project and environment) with another
        /// identity (`originalTransactionId`, `productId` or `bundleId`): refused, nothing written.
        public static let transactionConflict = Code("TRANSACTION_CONFLICT")
        /// Input breaks a rule of the use case (a length, a count, a range); `details` names each field.
        public static let invalidInput = Code("VALIDATION_ERROR")
        /// `require_match` policy: the transaction's `appAccountToken` names another user than the posted `user_id`.
        public static let appAccountTokenMismatch = Code("APP_ACCOUNT_TOKEN_MISMATCH")
        /// The project has no App Store Server API credentials.
        public static let appStoreCredentialsNotFound = Code("APP_STORE_CREDENTIALS_NOT_FOUND")
        /// A request needs the project's App Store Server API credentials (a lookup by transaction id, an offer
        /// signature, reconciliation) and the project has none: the caller's request cannot work until an admin
        /// stores them (unlike `.appStoreCredentialsNotFound`, which answers a request about the credentials).
        public static let appStoreCredentialsMissing = Code("APP_STORE_CREDENTIALS_MISSING")
        /// `BOUNCER_ENCRYPTION_KEY` is not set: secrets cannot be sealed (or opened). Final until the operator sets it.
        public static let encryptionKeyMissing = Code("ENCRYPTION_KEY_MISSING")
        /// A sealed value names an encryption key that is neither `BOUNCER_ENCRYPTION_KEY` nor
        /// `BOUNCER_ENCRYPTION_KEY_PREVIOUS`.
        public static let encryptionKeyUnknown = Code("ENCRYPTION_KEY_UNKNOWN")
        /// A sealed value failed authentication: altered bytes, or moved to another row.
        public static let sealedSecretCorrupt = Code("SEALED_SECRET_CORRUPT")
        /// Recording the request's Xcode (StoreKit Testing) transactions would take the project past its cap of Xcode
        /// transaction rows (`BOUNCER_MAX_XCODE_TRANSACTIONS_PER_PROJECT`): refused, nothing written. Final until rows
        /// are erased or the operator raises the cap.
        public static let xcodeLimitReached = Code("XCODE_LIMIT_REACHED")
        /// No Production or Sandbox purchase with that original transaction id in the project.
        public static let purchaseNotFound = Code("PURCHASE_NOT_FOUND")
        /// Apple does not know the test notification token (in the environment asked).
        public static let testNotificationNotFound = Code("TEST_NOTIFICATION_NOT_FOUND")
        /// Apple refused to extend the subscription: not eligible (errorCode 4030004, or 4030007 Family Sharing).
        public static let subscriptionExtensionIneligible = Code("SUBSCRIPTION_EXTENSION_INELIGIBLE")
        /// Apple refused to extend the subscription: already extended twice in the past year (errorCode 4030005).
        public static let subscriptionExtensionLimitReached = Code("SUBSCRIPTION_EXTENSION_LIMIT_REACHED")
        /// No accepted mass renewal extension with that request identifier in the project.
        public static let renewalExtensionNotFound = Code("RENEWAL_EXTENSION_NOT_FOUND")
        /// A reconciliation of the project is already running (on this or another instance): try again when it
        /// has finished.
        public static let reconcileInProgress = Code("RECONCILE_IN_PROGRESS")
        /// The project has not enabled `entitlement_tokens`: no token is issued for it.
        public static let entitlementTokensDisabled = Code("ENTITLEMENT_TOKENS_DISABLED")
        /// No transaction with that id recorded for the project (support's search by transaction id).
        public static let transactionNotFound = Code("TRANSACTION_NOT_FOUND")
        /// No grant with that id for that user of the project.
        public static let grantNotFound = Code("GRANT_NOT_FOUND")
        /// A webhook URL that is refused: not https, malformed, or resolving to a loopback, private, link-local or
        /// otherwise non-public address (SSRF), unless private networks are allowed by the operator.
        public static let webhookURLNotAllowed = Code("WEBHOOK_URL_NOT_ALLOWED")
        /// The project has no webhook.
        public static let webhookNotConfigured = Code("WEBHOOK_NOT_CONFIGURED")
        /// No webhook event with that id in the project.
        public static let webhookEventNotFound = Code("WEBHOOK_EVENT_NOT_FOUND")
        /// The caller's role lacks the permission the route needs; `details` names it (`Permission`).
        public static let permissionDenied = Code("PERMISSION_DENIED")
        /// No account with that id, or one the caller may not see (the same answer, so nothing leaks).
        public static let accountNotFound = Code("ACCOUNT_NOT_FOUND")
        /// The account still owns projects, so it cannot be deleted.
        public static let accountHasProjects = Code("ACCOUNT_HAS_PROJECTS")
        /// No API key with that id in the account.
        public static let apiKeyNotFound = Code("API_KEY_NOT_FOUND")
        /// No member with that id in the account.
        public static let memberNotFound = Code("MEMBER_NOT_FOUND")
        /// The account already has a member with that email.
        public static let memberEmailTaken = Code("MEMBER_EMAIL_TAKEN")
        /// The change would leave the account without an active owner.
        public static let lastOwner = Code("LAST_OWNER")
        /// An invite token that is unknown, used or expired (one answer for the three).
        public static let inviteInvalid = Code("INVITE_INVALID")
        /// A real-time retention request signed too long ago (or too far ahead of our clock): no offer.
        public static let retentionRequestStale = Code("RETENTION_REQUEST_STALE")
        /// A real-time retention request whose requestIdentifier was answered before: no offer.
        public static let retentionRequestReplayed = Code("RETENTION_REQUEST_REPLAYED")
        /// No retention rule of the project matched: Apple shows the default message.
        public static let retentionNoMatchingRule = Code("RETENTION_NO_MATCHING_RULE")
        /// Apple already holds a retention message with that id (MessageAlreadyExistsError).
        public static let retentionMessageExists = Code("RETENTION_MESSAGE_EXISTS")
        /// Apple already holds a retention image with that id (ImageAlreadyExistsError).
        public static let retentionImageExists = Code("RETENTION_IMAGE_EXISTS")
        /// Apple holds no retention message with that id (MessageNotFoundError).
        public static let retentionMessageNotFound = Code("RETENTION_MESSAGE_NOT_FOUND")
        /// Apple holds no retention image with that id (ImageNotFoundError).
        public static let retentionImageNotFound = Code("RETENTION_IMAGE_NOT_FOUND")
        /// No default message is configured at Apple for that product and locale (DefaultMessageNotFoundError).
        public static let retentionDefaultMessageNotFound = Code("RETENTION_DEFAULT_MESSAGE_NOT_FOUND")
        /// Apple refused a Retention Messaging request for another documented reason (its words in the message).
        public static let retentionRejectedByApple = Code("RETENTION_REJECTED_BY_APPLE")
        /// See `rawValue`.
        public var description: String { rawValue }
    }

    /// What went wrong, stable.
    public var code: Code
    /// A human sentence safe for clients.
    public var message: String
    /// Internal detail for logs (SQLSTATE, server message…); never sent to clients.
    public var underlying: String?
    /// For `.invalidInput`: every field that broke a rule, safe for clients.
    public var details: [FieldProblem]

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: String? = nil, details: [FieldProblem] = []) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.details = details
    }

    /// Safe for clients.
    public var description: String { "\(code): \(message)" }
    /// Includes the underlying cause; for logs.
    public var debugDescription: String {
        underlying.map { "\(code): \(message) (\($0))" } ?? description
    }
}

/// One field that broke a rule: its JSON path (array indices as strings) and a zod-style message.
public struct FieldProblem: Sendable, Equatable {
    /// E.g. `["entitlements", "3"]`; empty for the whole input.
    public var path: [String]
    /// E.g. `String must contain at most 128 character(s)`.
    public var message: String

    /// Creates a value.
    public init(path: [String], message: String) {
        self.path = path
        self.message = message
    }

    /// The rule of an identifier Apple issues (a transaction id, an order id): at most `maxLength` UTF-8 bytes, not
    /// empty, every byte `allowed`; `kind` names it in the message (e.g. "an App Store order id (letters and digits
    /// only)"). Empty: fine.
    public static func identifier(_ value: String, path: [String], maxLength: Int, kind: String,
                                  allowed: (UInt8) -> Bool) -> [FieldProblem] {
        guard value.utf8.count <= maxLength else {
            return [FieldProblem(path: path, message: "String must contain at most \(maxLength) character(s)")]
        }
        guard !value.isEmpty, value.utf8.allSatisfy(allowed) else {
            return [FieldProblem(path: path, message: "Must be \(kind)")]
        }
        return []
    }
}

/// Signed data that was not accepted: forged, malformed, or not for this project.
///
/// The verifier adapter translates its own errors into this, keeping the verifier's stable code
/// (`INVALID_JWS_FORMAT`, `JWS_VERIFICATION_FAILED`, `BUNDLE_ID_MISMATCH`, …) and reason.
public struct VerificationFailure: Error, Sendable, CustomStringConvertible {
    /// The verifier's stable codes; `rawValue` is the wire string clients see in the error body's `code`.
    ///
    /// The API's error mapping switches over these exhaustively, so a new code gets its own title and suggestion
    /// there (or the compiler says where it is missing).
    /// Equal when they are the same case (`init(rawValue:)` never makes `.unrecognized` of a known string).
    public enum Code: Hashable, Sendable, CustomStringConvertible {
        /// `INVALID_JWS_FORMAT`: structure, base64, JSON, `x5c` shape, or a missing required payload field.
        case invalidJWSFormat
        /// `JWS_UNSUPPORTED_ALGORITHM`: `alg` is anything but `ES256`.
        case unsupportedAlgorithm
        /// `JWS_VERIFICATION_FAILED`: chain, validity, marker OID, key or signature.
        case jwsVerificationFailed
        /// `BUNDLE_ID_MISMATCH`: the signed bundle id is not the project's.
        case bundleIdMismatch
        /// `ENVIRONMENT_NOT_ALLOWED`: the signed environment is not allowed by the project.
        case environmentNotAllowed
        /// `APP_APPLE_ID_MISMATCH`: the signed appAppleId is not the project's.
        case appAppleIdMismatch
        /// `INVALID_RECEIPT_FORMAT`: a StoreKit 1 receipt that is not base64 PKCS#7 or has a malformed payload.
        case invalidReceiptFormat
        /// `RECEIPT_VERIFICATION_FAILED`: a StoreKit 1 receipt's signature or chain did not verify.
        case receiptVerificationFailed
        /// A code this build has no words for (a verifier newer than its mapping): passed through unchanged.
        case unrecognized(String)

        /// Each known code with its wire string: the one table both directions read.
        private static let wireStrings: [(code: Code, wire: String)] = [
            (.invalidJWSFormat, "INVALID_JWS_FORMAT"), (.unsupportedAlgorithm, "JWS_UNSUPPORTED_ALGORITHM"),
            (.jwsVerificationFailed, "JWS_VERIFICATION_FAILED"), (.bundleIdMismatch, "BUNDLE_ID_MISMATCH"),
            (.environmentNotAllowed, "ENVIRONMENT_NOT_ALLOWED"), (.appAppleIdMismatch, "APP_APPLE_ID_MISMATCH"),
            (.invalidReceiptFormat, "INVALID_RECEIPT_FORMAT"), (.receiptVerificationFailed, "RECEIPT_VERIFICATION_FAILED"),
        ]

        /// The known case for a wire string, else `.unrecognized` (so `.unrecognized` never holds a known string).
        public init(rawValue: String) {
            self = Self.wireStrings.first { $0.wire == rawValue }?.code ?? .unrecognized(rawValue)
        }

        /// The wire string, e.g. `JWS_VERIFICATION_FAILED`.
        public var rawValue: String {
            if case .unrecognized(let code) = self { return code }
            return Self.wireStrings.first { $0.code == self }?.wire ?? ""
        }

        /// See `rawValue`.
        public var description: String { rawValue }
    }

    /// The verifier's stable code.
    public var code: Code
    /// Why, in words safe for clients (which step failed and on what).
    public var reason: String
    /// True only when the failure was ours (e.g. a revocation check could not be reached), not the data's.
    public var isRetryable: Bool
    /// The verification step that failed, as the contract names it: `format`, `header`, `chain`, `signature` or
    /// `claims` (the API reports it in `details[].step`).
    public var step: String?
    /// The request field that held the rejected data, when it is not the route's usual one (`receipt_data`).
    public var field: String?
    /// The field inside the signed data at fault, when one is (`expiresDate`, `in_app[3].expires_date`): the API
    /// reports `details[].path` as the request field then this.
    public var payloadField: String?

    /// Creates a failure.
    public init(code: Code, reason: String, isRetryable: Bool = false, step: String? = nil, field: String? = nil,
                payloadField: String? = nil) {
        self.code = code
        self.reason = reason
        self.isRetryable = isRetryable
        self.step = step
        self.field = field
        self.payloadField = payloadField
    }

    /// See `reason`.
    public var description: String { "\(code.rawValue): \(reason)" }
}
