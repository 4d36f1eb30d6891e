public import AppReceipt
public import AppStoreJWS
import Crypto
public import Domain
import Foundation
import JSON

/// Adapts `AppStoreJWS.SignedDataVerifier` to the Domain port: project settings become a verification policy,
/// verified payloads become Domain facts, verifier errors become `VerificationFailure` with the same code.
public struct AppStoreVerifier: SignedDataVerifying {
    /// Verifies JWS: the pinned roots and the chain cache.
    public let verifier: SignedDataVerifier
    /// Counts outcomes, chain-cache use and notification types for `/metrics` (the executable's `ServiceMetrics`).
    public var metrics: (any VerificationMetrics)?
    /// Verifies StoreKit 1 receipts: Apple Inc. Root, or the roots of `BOUNCER_ROOT_CERTIFICATES` when set.
    public var receipts: ReceiptVerifier

    /// An adapter over `verifier` and `receipts`, counting into `metrics`.
    public init(verifier: SignedDataVerifier, metrics: (any VerificationMetrics)? = nil, receipts: ReceiptVerifier = .apple) {
        self.verifier = verifier
        self.metrics = metrics
        self.receipts = receipts
    }

    public func verifyReceipt(_ base64: String, for project: Project) throws -> ReceiptFacts {
        let verified: VerifiedReceipt
        do {
            // The chain at the receipt's creation date (no `at`): like a JWS at its signedDate.
            verified = try receipts.verify(base64: base64, policy: Self.policy(for: project))
            metrics?.verification(kind: "receipt", result: "ok")
        } catch {
            metrics?.verification(kind: "receipt", result: error.code.rawValue)
            throw Self.failure(error, field: "receipt_data")
        }
        return Self.facts(verified)
    }

    /// Every in-app record as `TransactionFacts` under `ReceiptRules`, in receipt order.
    static func facts(_ verified: VerifiedReceipt) -> ReceiptFacts {
        let receipt = verified.payload
        let environment = StoreEnvironment(rawValue: verified.environment.rawValue)
        let created = receipt.creationDate.date
        let transactions = receipt.inAppPurchases.map { record -> TransactionFacts in
            let expires = record.expiresDate?.date
            return TransactionFacts(
                transactionId: record.transactionId,
                originalTransactionId: record.originalTransactionId ?? record.transactionId,
                productId: record.productId,
                type: ReceiptRules.productType(expiresDate: expires),
                environment: environment,
                purchaseDate: record.purchaseDate?.date ?? created,
                originalPurchaseDate: record.originalPurchaseDate?.date,
                expiresDate: expires,
                revocationDate: record.cancellationDate?.date,
                revocationReason: record.cancellationReason.map { Int(truncatingIfNeeded: $0) },
                signedDate: created,
                bundleId: receipt.bundleId,
                payloadJSON: payloadJSON(record, receipt: receipt))
        }
        return ReceiptFacts(
            bundleId: receipt.bundleId, environment: environment, creationDate: created,
            originalApplicationVersion: receipt.originalApplicationVersion, transactions: transactions)
    }

    /// The audit record of one in-app record: its decoded fields under verifyReceipt's `in_app` names (dates as
    /// the receipt's RFC 3339 text and as `_ms`), plus the receipt it came from. Undecoded attributes are not kept.
    static func payloadJSON(_ record: InAppPurchaseRecord, receipt: AppReceiptPayload) -> String {
        var pairs: [(String, JSONValue)] = [
            ("source", "receipt"),
            ("receipt_type", .string(receipt.receiptType)),
            ("bundle_id", .string(receipt.bundleId)),
            ("application_version", .string(receipt.applicationVersion)),
            ("receipt_creation_date", .string(receipt.creationDate.text)),
            ("receipt_creation_date_ms", JSONValue(receipt.creationDate.milliseconds)),
            ("product_id", .string(record.productId)),
            ("transaction_id", .string(record.transactionId)),
        ]
        func add(_ key: String, _ value: JSONValue?) { if let value { pairs.append((key, value)) } }
        func date(_ key: String, _ value: ReceiptDate?) {
            guard let value else { return }
            pairs.append((key, .string(value.text)))
            pairs.append((key + "_ms", JSONValue(value.milliseconds)))
        }
        add("original_transaction_id", record.originalTransactionId.map { .string($0) })
        add("quantity", record.quantity.map { JSONValue($0) })
        date("purchase_date", record.purchaseDate)
        date("original_purchase_date", record.originalPurchaseDate)
        date("expires_date", record.expiresDate)
        add("web_order_line_item_id", record.webOrderLineItemId.map { .string(String($0)) })
        date("cancellation_date", record.cancellationDate)
        add("cancellation_reason", record.cancellationReason.map { JSONValue($0) })
        add("is_trial_period", record.isTrialPeriod.map { .bool($0) })
        add("is_in_intro_offer_period", record.isInIntroOfferPeriod.map { .bool($0) })
        add("promotional_offer_id", record.promotionalOfferId.map { .string($0) })
        return JSONValue.object(JSONObject(pairs)).serializedString()
    }

    public func verifyTransaction(_ jws: String, for project: Project) throws -> TransactionFacts {
        var facts = Self.facts(try counted("transaction") { () throws(VerificationError) in
            try verifier.verifyTransaction(jws, policy: Self.policy(for: project))
        })
        facts.signedJWS = jws
        return facts
    }

    public func verifyAppTransaction(_ jws: String, for project: Project) throws -> AppTransactionFacts {
        let verified = try counted("appTransaction") { () throws(VerificationError) in
            try verifier.verifyAppTransaction(jws, policy: Self.policy(for: project))
        }
        guard let facts = Self.facts(verified) else {
            throw Self.unusablePayload(
                "payload field appTransactionId is required but missing (StoreKit sends it since iOS 18.4)")
        }
        return facts
    }

    public func verifyNotification(_ jws: String, for project: Project) throws -> NotificationFacts {
        let verified = try counted("notification") { () throws(VerificationError) in
            try verifier.verifyNotification(jws, policy: Self.policy(for: project))
        }
        let n = verified.notification
        guard let uuid = UUID(uuidString: n.notificationUUID) else {
            throw Self.unusablePayload("notificationUUID is not a UUID")
        }
        let environment = n.data?.environment ?? n.summary?.environment ?? n.appData?.environment
            ?? n.externalPurchaseToken.map { $0.environment }
        return NotificationFacts(
            notificationUUID: uuid,
            type: n.notificationType.rawValue,
            subtype: n.subtype?.rawValue,
            signedDate: n.signedDate,
            environment: environment.map { StoreEnvironment(rawValue: $0.rawValue) },
            transaction: verified.transaction.map {
                var facts = Self.facts($0)
                facts.signedJWS = n.data?.signedTransactionInfo
                return facts
            },
            renewal: verified.renewalInfo.flatMap(Self.facts),
            appTransaction: verified.appTransaction.flatMap(Self.facts),
            payloadJSON: verified.payloadString)
    }

    public func verifyRetentionRequest(_ jws: String, for project: Project) throws -> RetentionRequest {
        let verified = try counted("realtime_request") { () throws(VerificationError) in
            try verifier.verifyRealtimeRequest(jws, policy: Self.policy(for: project))
        }
        let payload = verified.payload
        // The payload names its app only by appAppleId: a Production request is tied to the project only when the
        // project knows its app's id (the policy then requires the same id).
        if payload.environment == .production, project.appAppleId == nil {
            throw VerificationFailure(
                code: .appAppleIdMismatch,
                reason: "a Production retention request is accepted only by a project with app_apple_id set",
                step: VerificationError.Step.claims.contractName)
        }
        return payload
    }

    public func verifyRenewalInfo(_ jws: String, for project: Project) throws -> RenewalFacts {
        let verified = try counted("renewal_info") { () throws(VerificationError) in
            try verifier.verifyRenewalInfo(jws, policy: Self.policy(for: project))
        }
        guard let facts = Self.facts(verified) else {
            throw Self.unusablePayload("renewal info has no originalTransactionId")
        }
        return facts
    }

    /// Runs one verification and counts its outcome under `kind` (`ok` with the chain cache and notification type, or
    /// the error's code); a verifier error becomes the port's `VerificationFailure`.
    private func counted<Verified: CountedVerification>(
        _ kind: String, _ verify: () throws(VerificationError) -> Verified
    ) throws(VerificationFailure) -> Verified {
        do {
            let verified = try verify()
            metrics?.verified(kind: kind, verified.details, notification: verified.countedNotification)
            return verified
        } catch {
            metrics?.verification(kind: kind, result: error.code.rawValue)
            throw Self.failure(error)
        }
    }

    /// A signed payload the verifier accepted that lacks what Bouncer needs of it: refused like a missing required
    /// field (`INVALID_JWS_FORMAT`, the contract's `format` step).
    static func unusablePayload(_ reason: String) -> VerificationFailure {
        VerificationFailure(code: .invalidJWSFormat, reason: reason, step: VerificationError.Step.payload.contractName)
    }

    static func policy(for project: Project) -> VerificationPolicy {
        VerificationPolicy(
            bundleId: project.bundleId,
            environments: Set(project.environments.map { AppStoreEnvironment(rawValue: $0.rawValue) }),
            appAppleId: project.appAppleId,
            allowXcode: project.allowXcode)
    }

    /// The port's `VerificationFailure` for a JWS's or a receipt's `VerificationError`; `field` is the request field
    /// the signed data came in, when the route does not imply it.
    static func failure(_ error: VerificationError, field: String? = nil) -> VerificationFailure {
        VerificationFailure(
            code: .init(rawValue: error.code.rawValue), reason: error.reason, isRetryable: error.isRetryable,
            step: error.step.contractName, field: field, payloadField: error.field)
    }

    static func facts(_ v: VerifiedTransaction) -> TransactionFacts {
        let t = v.transaction
        return TransactionFacts(
            transactionId: t.transactionId,
            originalTransactionId: t.originalTransactionId,
            productId: t.productId,
            type: Domain.ProductType(rawValue: t.type.rawValue),
            environment: StoreEnvironment(rawValue: t.environment.rawValue),
            purchaseDate: t.purchaseDate,
            originalPurchaseDate: t.originalPurchaseDate,
            expiresDate: t.expiresDate,
            revocationDate: t.revocationDate,
            revocationReason: t.revocationReason.map { Int(truncatingIfNeeded: $0.rawValue) },
            appAccountToken: t.appAccountToken.flatMap { UUID(uuidString: $0) },
            ownershipType: t.inAppOwnershipType.map { OwnershipType(rawValue: $0.rawValue) },
            signedDate: t.signedDate,
            bundleId: t.bundleId,
            isUpgraded: t.isUpgraded ?? false,
            payloadJSON: v.payloadString,
            appTransactionId: t.appTransactionId,
            offerPeriod: t.offerPeriod,
            offerDiscountType: t.offerDiscountType,
            revocationType: t.revocationType,
            revocationPercentage: t.revocationPercentage,
            advancedCommerceInfoJSON: t.advancedCommerceInfo.map { $0.serializedString() })
    }

    /// Renewal info without an `originalTransactionId` cannot be tied to a purchase; it is dropped (the outer
    /// notification is still stored).
    static func facts(_ v: VerifiedRenewalInfo) -> RenewalFacts? {
        let r = v.renewalInfo
        guard let original = r.originalTransactionId else { return nil }
        return RenewalFacts(
            originalTransactionId: original,
            productId: r.productId,
            autoRenewProductId: r.autoRenewProductId,
            autoRenewStatus: r.autoRenewStatus.map { Int(truncatingIfNeeded: $0.rawValue) },
            expirationIntent: r.expirationIntent.map { Int(truncatingIfNeeded: $0.rawValue) },
            gracePeriodExpiresDate: r.gracePeriodExpiresDate,
            isInBillingRetryPeriod: r.isInBillingRetryPeriod,
            priceIncreaseStatus: r.priceIncreaseStatus.map { Int(truncatingIfNeeded: $0.rawValue) },
            offerType: r.offerType.map { Int(truncatingIfNeeded: $0.rawValue) },
            offerIdentifier: r.offerIdentifier,
            renewalDate: r.renewalDate,
            environment: StoreEnvironment(rawValue: r.environment.rawValue),
            signedDate: r.signedDate,
            payloadJSON: v.payloadString,
            appTransactionId: r.appTransactionId,
            offerPeriod: r.offerPeriod,
            offerDiscountType: r.offerDiscountType,
            advancedCommerceInfoJSON: r.advancedCommerceInfo.map { $0.serializedString() },
            eligibleWinBackOfferIds: r.eligibleWinBackOfferIds ?? [])
    }

    /// An app transaction without `appTransactionId` (StoreKit before iOS 18.4) cannot be keyed; `nil`.
    static func facts(_ v: VerifiedAppTransaction) -> AppTransactionFacts? {
        let a = v.appTransaction
        guard let id = a.appTransactionId, !id.isEmpty else { return nil }
        return AppTransactionFacts(
            appTransactionId: id, bundleId: a.bundleId, environment: a.receiptType,
            originalApplicationVersion: a.originalApplicationVersion, originalPurchaseDate: a.originalPurchaseDate,
            receiptCreationDate: a.receiptCreationDate, payloadJSON: v.payloadString)
    }
}

/// SHA-256 of secret keys, through the module that owns OpenSSL.
public struct SHA256SecretHasher: SecretKeyHashing {
    /// The hasher.
    public init() {}

    /// SHA-256 of `secret`'s UTF-8.
    public func hash(_ secret: String) -> [UInt8] { Digest.sha256(secret.utf8) }
}

/// What the verifier adapter counts; `/metrics` implements it.
public protocol VerificationMetrics: Sendable {
    /// One verification of `kind` (transaction, notification, …) with `result` (ok or the error code).
    func verification(kind: String, result: String)
    /// One successful verification: its result, its chain-cache use and, for a notification, its type.
    func verified(kind: String, _ details: VerificationDetails, notification payload: NotificationPayload?)
}

/// What `AppStoreVerifier.counted` reads from a verified result for the metrics.
protocol CountedVerification {
    /// How it was verified (the chain cache's hit or miss).
    var details: VerificationDetails { get }
    /// The notification whose type is counted, for a notification.
    var countedNotification: NotificationPayload? { get }
}

extension VerifiedPayload: CountedVerification {
    var countedNotification: NotificationPayload? { nil }
}

extension VerifiedNotification: CountedVerification {
    var countedNotification: NotificationPayload? { notification }
}
