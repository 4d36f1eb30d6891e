public import Foundation

/// Apple's App Store Server API, as the use cases need it (implemented over `HTTPClient` and `Crypto` by the
/// `AppStoreServerAPI` module, wired by the executable).
///
/// Every method blocks the calling thread (bounded by the client's timeouts and retries) and returns what Apple
/// sent **unverified**: signed values are JWS strings that the caller must pass through `SignedDataVerifying`
/// exactly like posted data. Nothing from the network is trusted because of where it came from.
///
/// Every method throws `AppStoreAPIError`. `environment` picks the base URL (`.production` or `.sandbox`; Xcode
/// and LocalTesting have no server and throw `.invalidRequest`).
public protocol AppleServerAPI: Sendable {
    /// Get Transaction Info (`GET /inApps/v1/transactions/{transactionId}`): the signed transaction.
    func transactionInfo(transactionId: String, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> String

    /// Get All Subscription Statuses (`GET /inApps/v1/subscriptions/{transactionId}`): every subscription group's
    /// latest signed transaction and renewal info for the customer that `transactionId` belongs to.
    func subscriptionStatuses(transactionId: String, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> [SignedSubscriptionStatus]

    /// Get Transaction History v2 (`GET /inApps/v2/history/{transactionId}`), one page; pass the previous page's
    /// `revision` to continue.
    func transactionHistory(transactionId: String, revision: String?, environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> TransactionHistoryPage

    /// Get Notification History (`POST /inApps/v1/notifications/history`), one page; pass the previous page's
    /// `paginationToken` to continue. Apple keeps 180 days.
    func notificationHistory(from start: Date, to end: Date, paginationToken: String?, environment: StoreEnvironment,
                             credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> NotificationHistoryPage

    /// Send Consumption Information (`PUT /inApps/v2/transactions/consumption/{transactionId}`, the current
    /// request format). Succeeds on Apple's `202`.
    func sendConsumptionInformation(transactionId: String, _ information: ConsumptionInformation,
                                    environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError)

    /// Request a Test Notification (`POST /inApps/v1/notifications/test`): the token to ask about it.
    func requestTestNotification(environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> String

    /// Get Test Notification Status (`GET /inApps/v1/notifications/test/{token}`).
    func testNotificationStatus(token: String, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> TestNotificationStatus

    /// Extend a Subscription Renewal Date (`PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`).
    func extendRenewalDate(originalTransactionId: String, _ request: RenewalExtensionRequest,
                           environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> RenewalExtensionResult

    /// Look Up Order ID (`GET /inApps/v1/lookup/{orderId}`): whether the order id of a customer's emailed receipt
    /// is one of this app's, and its signed transactions. Apple serves it in Production only.
    func lookUpOrder(orderId: String, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> SignedOrderLookup

    // The newer endpoints (issue 25); their request and answer types are in AppleTransactionEndpoints.swift.

    /// Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`): the customer's
    /// signed AppTransaction, found by any of their transaction ids.
    func appTransactionInfo(transactionId: String, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> String

    /// Set App Account Token (`PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`).
    func setAppAccountToken(originalTransactionId: String, token: UUID, environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError)

    /// Get Refund History (`GET /inApps/v2/refund/lookup/{transactionId}[?revision=]`), one page of the customer's
    /// refunded transactions (ascending `revocationDate`).
    func refundHistory(transactionId: String, revision: String?, environment: StoreEnvironment,
                       credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> TransactionHistoryPage

    /// Extend Subscription Renewal Dates for All Active Subscribers (`POST /inApps/v1/subscriptions/extend/mass`):
    /// Apple's request identifier (ours, echoed).
    func extendRenewalDatesForAll(_ request: MassRenewalExtensionRequest, environment: StoreEnvironment,
                                  credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> UUID

    /// Get Status of Subscription Renewal Date Extensions
    /// (`GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`).
    func massRenewalExtensionStatus(productId: String, requestIdentifier: UUID, environment: StoreEnvironment,
                                    credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> MassRenewalExtensionStatus

    /// Finish Transaction (`POST /inApps/v1/transactions/{transactionId}/finish`): the server delivered the purchase.
    func finishTransaction(transactionId: String, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError)
}

/// Apple's `OrderLookupResponse`, unverified: `status` 0 (the order is the app's) with at least one signed
/// transaction, or 1 (not a valid order id for the app) with none.
public struct SignedOrderLookup: Sendable, Equatable {
    /// Apple's `OrderLookupStatus`: 0 valid, 1 invalid (other values are passed on as Apple sent them).
    public var status: Int
    /// The order's transactions (JWS), empty when Apple sent none.
    public var signedTransactions: [String]

    /// Creates a value.
    public init(status: Int, signedTransactions: [String]) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}

/// What signing Apple's JWT needs: the project's opened credentials and its bundle id (the `bid` claim), and the
/// project they are of (whose account a call counts toward, `MeteredAppleServerAPI`).
public struct AppStoreAPICredentials: Sendable, CustomStringConvertible {
    /// Issuer id, key id, fingerprint and the PKCS#8 PEM (never printed).
    public var credentials: UnsealedAppStoreCredentials
    /// The app's bundle id.
    public var bundleId: String
    /// The project the credentials are of.
    public var projectId: UUID

    /// Metadata only (delegates to `UnsealedAppStoreCredentials`).
    public var description: String {
        "AppStoreAPICredentials(\(credentials), bundleId: \(bundleId), projectId: \(projectId.lowercasedText))"
    }
}

/// Why a call to Apple failed. `description` is safe to log: it never contains a token, key or signed value.
public struct AppStoreAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, as the use cases act on it.
    public enum Kind: String, Sendable, Equatable {
        /// Apple says the id (transaction, original transaction, test-notification token) does not exist in that
        /// environment (`404`, e.g. errorCode 4040010 TransactionIdNotFoundError).
        case notFound
        /// Apple refused our JWT (`401`): wrong issuer id, key id, key, bundle id, or a revoked key.
        case unauthorized
        /// Apple kept failing, rate-limited us beyond what we wait, timed out, or could not be reached: try again
        /// later; never a verdict on a purchase.
        case unavailable
        /// Apple rejected the request itself (`400`/`403`/other `4xx`): a bug or an input Apple does not accept.
        case rejected
        /// Apple answered `2xx` with a body we cannot read (not JSON, a field missing or of the wrong type).
        case invalidResponse
        /// The request cannot be made: no server for that environment, or the credentials' key does not load.
        case invalidRequest
    }

    /// What kind.
    public var kind: Kind
    /// The HTTP status Apple answered, when it answered.
    public var httpStatus: Int?
    /// Apple's `errorCode` (e.g. 4040010), when its body had one.
    public var appleErrorCode: Int?
    /// Apple's `errorMessage`, when its body had one (Apple's words: safe to log).
    public var appleErrorMessage: String?
    /// Seconds to wait before trying again (`Retry-After`, or the client's own estimate), for `.unavailable`.
    public var retryAfterSeconds: Int?
    /// Our own explanation (safe to log).
    public var reason: String

    /// Creates an error.
    public init(_ kind: Kind, reason: String, httpStatus: Int? = nil, appleErrorCode: Int? = nil,
                appleErrorMessage: String? = nil, retryAfterSeconds: Int? = nil) {
        self.kind = kind
        self.reason = reason
        self.httpStatus = httpStatus
        self.appleErrorCode = appleErrorCode
        self.appleErrorMessage = appleErrorMessage
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// `kind: reason (HTTP status, Apple's code and message)`.
    public var description: String {
        var text = "\(kind.rawValue): \(reason)"
        if let httpStatus { text += " (HTTP \(httpStatus)" + (appleErrorCode.map { ", errorCode \($0)" } ?? "")
            + (appleErrorMessage.map { ", \($0)" } ?? "") + ")" }
        return text
    }
}

/// One subscription group's latest state, as Apple signed it (unverified).
public struct SignedSubscriptionStatus: Sendable, Equatable {
    /// The subscription group.
    public var subscriptionGroupIdentifier: String
    /// The original transaction id of the purchase.
    public var originalTransactionId: String
    /// Apple's status: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int
    /// The latest transaction (JWS).
    public var signedTransactionInfo: String
    /// The renewal info (JWS).
    public var signedRenewalInfo: String

    /// Creates a value.
    public init(subscriptionGroupIdentifier: String, originalTransactionId: String, status: Int,
                signedTransactionInfo: String, signedRenewalInfo: String) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.originalTransactionId = originalTransactionId
        self.status = status
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }
}

/// One page of one of Apple's signed histories (unverified JWS strings), in the order Apple lists them.
public struct SignedHistoryPage: Sendable, Equatable {
    /// The signed items on this page.
    public var signedItems: [String]
    /// Pass to the next call to continue (Apple's `revision` or `paginationToken`).
    public var next: String?
    /// Whether more pages follow.
    public var hasMore: Bool

    /// Creates a value.
    public init(signedItems: [String], next: String?, hasMore: Bool) {
        self.signedItems = signedItems
        self.next = next
        self.hasMore = hasMore
    }
}

/// One page of a customer's transaction history: signed transactions, `next` is the `revision`.
public typealias TransactionHistoryPage = SignedHistoryPage

/// One page of Notification History: the notifications' `signedPayload` strings as the webhook would have received
/// them, oldest first; `next` is the `paginationToken`.
public typealias NotificationHistoryPage = SignedHistoryPage

/// The body of Send Consumption Information in Apple's current (v2) format. Apple refuses any
/// `customerConsented` other than `true`, so the value carries none: the client always sends `true`, and the use
/// case must not build one without the customer's consent.
public struct ConsumptionInformation: Sendable, Equatable {
    /// Apple's `deliveryStatus`, e.g. `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`,
    /// `UNDELIVERED_SERVER_OUTAGE`, `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    /// How much of the purchase was used, in thousandths (0…100000 per Apple: milli-percent); `nil` when unknown.
    public var consumptionPercentage: Int?
    /// Whether the app offers a free sample or trial of the content.
    public var sampleContentProvided: Bool
    /// Apple's `refundPreference`: `DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`; `nil` for no preference.
    public var refundPreference: String?
}

/// What Get Test Notification Status says.
public struct TestNotificationStatus: Sendable, Equatable {
    /// One delivery attempt Apple made.
    public struct Attempt: Sendable, Equatable {
        /// When Apple tried.
        public var attemptDate: Date
        /// Apple's `sendAttemptResult`, e.g. `SUCCESS`, `TIMED_OUT`, `SSL_ISSUE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`.
        public var result: String

        /// Creates a value.
        public init(attemptDate: Date, result: String) {
            self.attemptDate = attemptDate
            self.result = result
        }
    }

    /// The test notification's signed payload (unverified).
    public var signedPayload: String
    /// Apple's attempts to deliver it, in order.
    public var sendAttempts: [Attempt]

    /// Creates a value.
    public init(signedPayload: String, sendAttempts: [Attempt]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// The body of Extend a Subscription Renewal Date.
public struct RenewalExtensionRequest: Sendable, Equatable {
    /// 1…90 days.
    public var extendByDays: Int
    /// Apple's `extendReasonCode`: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var reasonCode: Int
    /// A fresh UUID per request (Apple deduplicates by it).
    public var requestIdentifier: UUID
}

/// What Extend a Subscription Renewal Date answered.
public struct RenewalExtensionResult: Sendable, Equatable {
    /// The new renewal date, when Apple extended it.
    public var effectiveDate: Date?
    /// The purchase.
    public var originalTransactionId: String
    /// Whether Apple extended it.
    public var success: Bool
    /// The subscription period's web order line item id.
    public var webOrderLineItemId: String?

    /// Creates a value.
    public init(effectiveDate: Date?, originalTransactionId: String, success: Bool, webOrderLineItemId: String?) {
        self.effectiveDate = effectiveDate
        self.originalTransactionId = originalTransactionId
        self.success = success
        self.webOrderLineItemId = webOrderLineItemId
    }
}
