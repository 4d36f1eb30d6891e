public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Bouncer's public API for iOS/macOS apps and Swift backends: post purchases, read what a user is entitled to.
///
/// ```swift
/// let bouncer = BouncerClient(baseURL: URL(string: "https://bouncer.example.com")!, publicKey: "pk_...")
/// for await update in Transaction.updates {
///     _ = try await bouncer.postSignedTransaction(update.jwsRepresentation, userId: userId)
/// }
/// ```
///
/// Every method throws `BouncerError`. Answers `503` and `429` are retried per `retryPolicy` (honouring
/// `Retry-After`); nothing else is. The secret key, when given, is sent only as `Authorization: Bearer` on reads and
/// never appears in `description` or `dump`: give it to backends only, never ship it in an app. Apple platforms:
/// macOS 12 / iOS 15 and later (async `URLSession`).
@available(macOS 12.0, iOS 15.0, tvOS 15.0, watchOS 8.0, *)
public struct BouncerClient: Sendable {
    /// The server, e.g. `https://bouncer.example.com` (a path prefix is kept: `https://host/bouncer`).
    public let baseURL: URL
    /// The project's public key (`pk_…`); it ships inside apps.
    public let publicKey: String
    /// The project's secret key (`sk_…`), for backends: reads when the project requires it, and tokens.
    private let secretKey: String?
    /// The session requests go through (its configuration's proxy, TLS and cache settings apply).
    public let session: URLSession
    /// Seconds each request may take (`URLRequest.timeoutInterval`).
    public let timeout: TimeInterval
    /// When 503 and 429 are retried.
    public let retryPolicy: RetryPolicy

    /// A client for one project.
    public init(baseURL: URL, publicKey: String, secretKey: String? = nil, session: URLSession = .shared,
                timeout: TimeInterval = 30, retryPolicy: RetryPolicy = .default) {
        self.baseURL = baseURL
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.session = session
        self.timeout = timeout.isFinite && timeout > 0 ? timeout : 30
        self.retryPolicy = retryPolicy
    }

    /// Whether a secret key was configured (the key itself is never exposed).
    public var hasSecretKey: Bool { secretKey != nil }

    // MARK: - Purchases

    /// Posts a StoreKit 2 signed transaction (`VerificationResult<Transaction>.jwsRepresentation`): Bouncer verifies
    /// it, records it (bound to `userId` when given) and answers what it grants now.
    public func postSignedTransaction(_ signedTransaction: String, userId: String? = nil, deviceId: String? = nil)
        async throws(BouncerError) -> ReceiptResult {
        try await send("POST", ["v1", "receipts", publicKey],
                       body: ReceiptRequest(signedTransactionInfo: signedTransaction, userId: userId, deviceId: deviceId),
                       expecting: 201)
    }

    /// Posts a transaction id: Bouncer asks Apple's App Store Server API for it (the project needs App Store
    /// credentials), records it and answers like `postSignedTransaction`. `503 APPLE_UNAVAILABLE` is retried.
    public func postTransactionId(_ transactionId: String, userId: String? = nil, deviceId: String? = nil)
        async throws(BouncerError) -> ReceiptResult {
        try await send("POST", ["v1", "receipts", publicKey],
                       body: ReceiptRequest(transactionId: transactionId, userId: userId, deviceId: deviceId),
                       expecting: 201)
    }

    /// Posts a StoreKit 1 app receipt (base64, as `Bundle.main.appStoreReceiptURL` holds it): Bouncer verifies it
    /// locally and records every in-app record; the answer's `transactions` lists them.
    public func postReceipt(receiptData: String, userId: String? = nil, deviceId: String? = nil)
        async throws(BouncerError) -> ReceiptResult {
        try await send("POST", ["v1", "receipts", publicKey],
                       body: ReceiptRequest(receiptData: receiptData, userId: userId, deviceId: deviceId),
                       expecting: 201)
    }

    /// Posts a signed app transaction (`AppTransaction.shared`'s `jwsRepresentation`): the paid-app purchase and
    /// what it grants under the project's `app_purchase_entitlements`.
    public func postAppTransaction(_ signedAppTransaction: String, userId: String? = nil)
        async throws(BouncerError) -> AppTransactionResult {
        try await send("POST", ["v1", "app-transactions", publicKey],
                       body: AppTransactionRequest(signedAppTransaction: signedAppTransaction, userId: userId),
                       expecting: 201)
    }

    // MARK: - Reads

    /// What `userId` is entitled to now, with each purchase. Sends the secret key when the client has one
    /// (required by projects with `require_secret_key_for_reads`).
    public func subscriptions(userId: String) async throws(BouncerError) -> UserSubscriptions {
        try await send("GET", ["v1", "subscriptions", publicKey, userId], body: Empty?.none, expecting: 200,
                       authorization: secretKey)
    }

    /// A signed entitlement token for `userId` (ES256, verifiable with `/.well-known/jwks.json`). Needs the secret
    /// key: without one, throws `.secretKeyMissing` and sends nothing.
    public func entitlementToken(userId: String) async throws(BouncerError) -> EntitlementToken {
        guard let secretKey else {
            throw BouncerError(kind: .secretKeyMissing, message: "Entitlement tokens need the project's secret key.",
                               suggestion: "Make the client with secretKey: (backends only; never ship it in an app).")
        }
        return try await send("GET", ["v1", "subscriptions", publicKey, userId, "token"], body: Empty?.none,
                              expecting: 200, authorization: secretKey)
    }

    // MARK: - Promotional offers

    /// A legacy promotional-offer signature for `productId`'s offer `offerId`, for
    /// `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`.
    public func legacyOfferSignature(productId: String, offerId: String, appAccountToken: UUID? = nil)
        async throws(BouncerError) -> LegacyOfferSignature {
        try await send("POST", ["v1", "offers", publicKey, "signatures"],
                       body: OfferRequest(productId: productId, offerId: offerId, format: "legacy",
                                          appAccountToken: appAccountToken?.uuidString.lowercased(), transactionId: nil),
                       expecting: 200)
    }

    /// A promotional-offer signature in the JWS format (iOS 18.4+ `promotionalOffer(_:compactJWS:)`); pass the
    /// customer's `transactionId` (or `appTransactionId`) when the offer needs it.
    public func jwsOfferSignature(productId: String, offerId: String, transactionId: String? = nil)
        async throws(BouncerError) -> String {
        let answer: JWSOfferSignature = try await send(
            "POST", ["v1", "offers", publicKey, "signatures"],
            body: OfferRequest(productId: productId, offerId: offerId, format: "jws", appAccountToken: nil,
                               transactionId: transactionId),
            expecting: 200)
        return answer.signature
    }
}

@available(macOS 12.0, iOS 15.0, tvOS 15.0, watchOS 8.0, *)
extension BouncerClient: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The server and public key; a secret key shows as `<redacted>`.
    public var description: String {
        "BouncerClient(baseURL: \(baseURL.absoluteString), publicKey: \(publicKey), secretKey: "
            + (secretKey == nil ? "nil" : "<redacted>") + ")"
    }

    /// Same as `description`: no key material.
    public var debugDescription: String { description }

    /// Keeps the secret key out of `dump` and `String(reflecting:)`.
    public var customMirror: Mirror {
        Mirror(self, children: ["baseURL": baseURL, "publicKey": publicKey,
                                "secretKey": secretKey == nil ? "nil" : "<redacted>",
                                "timeout": timeout, "retryPolicy": retryPolicy])
    }
}

// MARK: - Request bodies

private struct ReceiptRequest: Encodable {
    var signedTransactionInfo: String?
    var transactionId: String?
    var receiptData: String?
    var userId: String?
    var deviceId: String?
}

private struct AppTransactionRequest: Encodable {
    var signedAppTransaction: String
    var userId: String?
}

private struct OfferRequest: Encodable {
    var productId: String
    var offerId: String
    var format: String
    var appAccountToken: String?
    var transactionId: String?
}

private struct Empty: Encodable {}
