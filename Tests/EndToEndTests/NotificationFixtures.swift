import Foundation
import JSON
import XCTest

/// A renewal info payload (JWSRenewalInfoDecodedPayload), signed by the test PKI.
struct RenewalPayload {
    var originalTransactionId: String
    var productId = "com.e2e.pro.monthly"
    var autoRenewProductId = "com.e2e.pro.monthly"
    var autoRenewStatus: Int64 = 1
    var expirationIntent: Int64?
    var isInBillingRetryPeriod: Bool?
    var gracePeriodExpiresDate: Int64?
    var priceIncreaseStatus: Int64?
    var offerType: Int64?
    var offerIdentifier: String?
    var renewalDate: Int64?
    var signedDate = E2E.ms(0)
    var environment = "Sandbox"
    /// More members, signed as given (`renewalBillingPlanType`, `commitmentInfo`, `eligibleWinBackOfferIds`,
    /// hostile values).
    var extra: [(String, JSONValue)] = []

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("originalTransactionId", .string(originalTransactionId)),
            ("productId", .string(productId)),
            ("autoRenewProductId", .string(autoRenewProductId)),
            ("autoRenewStatus", JSONValue(autoRenewStatus)),
            ("signedDate", JSONValue(signedDate)),
            ("environment", .string(environment)),
            ("recentSubscriptionStartDate", JSONValue(E2E.ms(-90 * 86_400))),
        ]
        if let expirationIntent { pairs.append(("expirationIntent", JSONValue(expirationIntent))) }
        if let isInBillingRetryPeriod { pairs.append(("isInBillingRetryPeriod", .bool(isInBillingRetryPeriod))) }
        if let gracePeriodExpiresDate { pairs.append(("gracePeriodExpiresDate", JSONValue(gracePeriodExpiresDate))) }
        if let priceIncreaseStatus { pairs.append(("priceIncreaseStatus", JSONValue(priceIncreaseStatus))) }
        if let offerType { pairs.append(("offerType", JSONValue(offerType))) }
        if let offerIdentifier { pairs.append(("offerIdentifier", .string(offerIdentifier))) }
        if let renewalDate { pairs.append(("renewalDate", JSONValue(renewalDate))) }
        pairs += extra
        return .object(JSONObject(pairs))
    }
}

/// An App Store Server Notification V2 payload (responseBodyV2DecodedPayload); `mint()` signs the nested
/// transaction and renewal info first, then the notification, as Apple does.
struct NotificationPayload {
    /// What the notification carries besides its header fields.
    enum Body {
        /// `data` (bundle, environment, optional nested JWS).
        case data
        /// `summary` (RENEWAL_EXTENSION / SUMMARY).
        case summary
        /// `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
        case externalPurchaseToken
        /// `appData` with a signed app transaction (RESCIND_CONSENT).
        case appData(AppTransactionPayload)
    }

    var type: String
    var subtype: String?
    var uuid = UUID().uuidString.lowercased()
    var signedDate = E2E.ms(0)
    var bundleId: String
    var environment = "Sandbox"
    var body = Body.data
    var transaction: TransactionPayload?
    var renewal: RenewalPayload?
    /// More `data` fields (e.g. `consumptionRequestReason`).
    var extra: [(String, JSONValue)] = []

    init(_ type: String, _ subtype: String? = nil, bundleId: String, transaction: TransactionPayload? = nil,
         renewal: RenewalPayload? = nil, signedDate: Int64 = E2E.ms(0)) {
        self.type = type
        self.subtype = subtype
        self.bundleId = bundleId
        self.transaction = transaction
        self.renewal = renewal
        self.signedDate = signedDate
    }

    func json() throws -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("notificationType", .string(type)),
            ("notificationUUID", .string(uuid)),
            ("version", "2.0"),
            ("signedDate", JSONValue(signedDate)),
        ]
        if let subtype { pairs.append(("subtype", .string(subtype))) }
        switch body {
        case .data:
            var data: [(String, JSONValue)] = [
                ("bundleId", .string(bundleId)), ("bundleVersion", "42"), ("environment", .string(environment)),
            ]
            if let transaction { data.append(("signedTransactionInfo", .string(try transaction.mint()))) }
            if let renewal { data.append(("signedRenewalInfo", .string(try E2E.mint(renewal.json)))) }
            data += extra
            pairs.append(("data", .object(JSONObject(data))))
        case .summary:
            pairs.append(("summary", [
                "requestIdentifier": "b4a1c2d3-0000-4000-8000-00000000e2e0", "environment": .string(environment),
                "bundleId": .string(bundleId), "productId": "com.e2e.pro.monthly",
                "storefrontCountryCodes": ["USA", "FRA"], "failedCount": 0, "succeededCount": 3,
            ]))
        case .externalPurchaseToken:
            pairs.append(("externalPurchaseToken", [
                "externalPurchaseId": "SANDBOX_e2e-token-0001", "tokenCreationDate": JSONValue(signedDate),
                "bundleId": .string(bundleId), "tokenType": "SERVICES",
                "tokenExpirationDate": JSONValue(signedDate + 30 * 86_400_000),
            ]))
        case .appData(let appTransaction):
            pairs.append(("appData", [
                "bundleId": .string(bundleId), "environment": .string(environment),
                "signedAppTransactionInfo": .string(try appTransaction.mint()),
            ]))
        }
        return .object(JSONObject(pairs))
    }

    func mint() throws -> String { try E2E.mint(try json()) }
}

/// An app transaction payload (StoreKit `AppTransaction`), signed by the test PKI.
struct AppTransactionPayload {
    var appTransactionId = "7040" + E2E.uniqueId()
    var bundleId: String
    var receiptType = "Sandbox"
    var applicationVersion = "412"
    var originalApplicationVersion: String? = "1.9"
    var originalPurchaseDate: Int64 = E2E.ms(-400 * 86_400)
    var receiptCreationDate: Int64 = E2E.ms(-60)
    var includeId = true

    var json: JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("receiptType", .string(receiptType)), ("bundleId", .string(bundleId)),
            ("applicationVersion", .string(applicationVersion)), ("versionExternalIdentifier", 0),
            ("receiptCreationDate", JSONValue(receiptCreationDate)),
            ("originalPurchaseDate", JSONValue(originalPurchaseDate)),
            ("deviceVerification", "dGVzdA=="), ("deviceVerificationNonce", "1c0ebd39-2c4d-4a31-9a6b-2dd28fb0a3b1"),
            ("originalPlatform", "iOS"),
        ]
        if let originalApplicationVersion { pairs.append(("originalApplicationVersion", .string(originalApplicationVersion))) }
        if includeId { pairs.append(("appTransactionId", .string(appTransactionId))) }
        return .object(JSONObject(pairs))
    }

    func mint() throws -> String { try E2E.mint(json) }
}

extension API {
    /// `POST /v1/app-transactions/:publicKey`.
    func postAppTransaction(_ key: String, _ jws: String, user: String? = nil) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("signed_app_transaction", .string(jws))]
        if let user { pairs.append(("user_id", .string(user))) }
        return try client.post("/v1/app-transactions/\(key)", json: .object(JSONObject(pairs)))
    }

    /// `POST /v1/notifications/:publicKey` with Apple's body.
    func notify(_ key: String, _ jws: String) throws -> HTTPResponse {
        try client.post("/v1/notifications/\(key)", json: ["signedPayload": .string(jws)])
    }

    /// Mints and posts `notification`, asserting 200 `processed`.
    @discardableResult
    func deliver(_ key: String, _ notification: NotificationPayload, file: StaticString = #filePath, line: UInt = #line)
        throws -> HTTPResponse
    {
        let r = try notify(key, try notification.mint())
        XCTAssertEqual(r.status, 200, "\(notification.type)/\(notification.subtype ?? "-"): \(r)", file: file, line: line)
        XCTAssertEqual(try? r.json(), ["status": "processed", "notification_uuid": .string(notification.uuid)],
                       "\(notification.type)", file: file, line: line)
        return r
    }
}
