import Foundation
import JSON
import XCTest

/// App Store Server Notifications V2 over real HTTP: `bouncer serve` trusting the test PKI, a fresh database,
/// notifications minted with `Tests/Fixtures/pki/sign-jws`, and the user's `GET /v1/subscriptions` answer after each.
final class NotificationE2ETests: SharedServerTestCase {
    static let metricsToken = "e2e-notify-metrics-token-0123456789"
    override class var serverLabel: String { "notify" }
    override class var serverOverrides: [String: String?] { ["BOUNCER_METRICS_TOKEN": metricsToken] }
    static let day = 86_400.0

    /// A tenant with mapped products and one user bound (through `POST /v1/receipts`) to a subscription.
    struct Subscriber {
        var tenant: Tenant
        var user: String
        /// The transaction the app posted.
        var initial: TransactionPayload
        var otid: String { initial.originalTransactionId }
        var bundle: String { tenant.bundleId }

        /// The initial transaction, re-signed now with changes (a refund, an extension …).
        func resigned(at signed: Int64 = E2E.ms(0), _ change: (inout TransactionPayload) -> Void = { _ in })
            -> TransactionPayload
        {
            var t = initial
            t.signedDate = signed
            change(&t)
            return t
        }

        /// A later transaction of the same purchase (a renewal, an upgrade).
        func next(start: Double, days: Double = 30, product: String = "com.e2e.pro.monthly") -> TransactionPayload {
            var t = TransactionPayload(bundleId: bundle, originalTransactionId: otid)
            t.productId = product
            t.purchaseDate = E2E.ms(start * NotificationE2ETests.day)
            t.expiresDate = E2E.ms((start + days) * NotificationE2ETests.day)
            t.signedDate = t.purchaseDate
            t.inAppOwnershipType = initial.inAppOwnershipType
            return t
        }

        func renewal(signed: Int64 = E2E.ms(0), _ change: (inout RenewalPayload) -> Void = { _ in })
            -> RenewalPayload
        {
            var r = RenewalPayload(originalTransactionId: otid)
            r.signedDate = signed
            change(&r)
            return r
        }

        func notification(_ type: String, _ subtype: String? = nil, transaction: TransactionPayload? = nil,
                          renewal: RenewalPayload? = nil, signed: Int64 = E2E.ms(0)) -> NotificationPayload {
            NotificationPayload(type, subtype, bundleId: bundle, transaction: transaction, renewal: renewal,
                                signedDate: signed)
        }
    }

    func subscriber(expired: Bool = false, ownership: String = "PURCHASED", bind: Bool = true,
                    bundle: String = E2E.uniqueBundle(), file: StaticString = #filePath, line: UInt = #line)
        throws -> Subscriber
    {
        let api = try api
        let tenant = try api.createProject(bundleId: bundle, file: file, line: line)
        try api.mapProduct(tenant, "com.e2e.pro.monthly", ["pro"], file: file, line: line)
        try api.mapProduct(tenant, "com.e2e.pro.yearly", ["pro", "yearly"], file: file, line: line)
        try api.mapProduct(tenant, "com.e2e.lifetime", ["lifetime"], file: file, line: line)
        var initial = TransactionPayload(bundleId: tenant.bundleId)
        initial.inAppOwnershipType = ownership
        // Signed ten minutes ago, so notifications re-signed "a minute ago" are newer statements.
        initial.purchaseDate = E2E.ms(-600)
        initial.originalPurchaseDate = initial.purchaseDate
        initial.signedDate = initial.purchaseDate
        if expired {
            initial.purchaseDate = E2E.ms(-31 * Self.day)
            initial.originalPurchaseDate = initial.purchaseDate
            initial.expiresDate = E2E.ms(-1 * Self.day)
            initial.signedDate = E2E.ms(-31 * Self.day)
        }
        let s = Subscriber(tenant: tenant, user: "user-\(E2E.uniqueId())", initial: initial)
        if bind {
            let r = try api.postReceipt(tenant.publicKey, try initial.mint(), user: s.user)
            XCTAssertEqual(r.status, 201, r.description, file: file, line: line)
        }
        return s
    }

    /// The user's answer: top-level status and the only subscription.
    func answer(_ s: Subscriber, file: StaticString = #filePath, line: UInt = #line) throws -> (String?, JSONValue) {
        let r = try api.user(s.tenant.publicKey, s.user)
        XCTAssertEqual(r.status, 200, r.description, file: file, line: line)
        let json = try r.json()
        XCTAssertEqual(json["subscriptions"]?.arrayValue?.count, 1, r.description, file: file, line: line)
        return (json["status"]?.stringValue, json["subscriptions"]?[0] ?? .null)
    }

    /// Asserts the listed fields of the user's subscription (and that the top-level status is the same).
    func assertAnswer(_ s: Subscriber, _ expected: [String: JSONValue], _ label: String,
                      file: StaticString = #filePath, line: UInt = #line) throws {
        let (status, subscription) = try answer(s, file: file, line: line)
        XCTAssertEqual(status, expected["status"]?.stringValue, "\(label): \(subscription)", file: file, line: line)
        for (key, value) in expected.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(subscription[key], value, "\(label): \(key) in \(subscription)", file: file, line: line)
        }
    }

    // MARK: - One test per type and subtype

    struct Case {
        var name: String
        var expired = false
        var ownership = "PURCHASED"
        /// The notifications to deliver, in order, and the fields the user's subscription must then show.
        var run: (Subscriber) -> ([NotificationPayload], [String: JSONValue])
    }

    static let active: [String: JSONValue] = [
        "status": "active", "entitlements": ["pro"], "in_grace_period": false, "in_billing_retry": false,
    ]

    static func merged(_ base: [String: JSONValue], _ extra: [String: JSONValue]) -> [String: JSONValue] {
        base.merging(extra) { _, new in new }
    }

    static var cases: [Case] { [
        Case(name: "SUBSCRIBED/INITIAL_BUY") { s in
            ([s.notification("SUBSCRIBED", "INITIAL_BUY", transaction: s.resigned(), renewal: s.renewal())],
             merged(active, ["auto_renew_enabled": true, "product_id": "com.e2e.pro.monthly"]))
        },
        Case(name: "SUBSCRIBED/RESUBSCRIBE", expired: true) { s in
            let t = s.next(start: -0.001)
            return ([s.notification("SUBSCRIBED", "RESUBSCRIBE", transaction: t, renewal: s.renewal())],
                    merged(active, ["current_period_end": .string(E2E.iso(t.expiresDate ?? 0))]))
        },
        Case(name: "DID_RENEW", expired: true) { s in
            let t = s.next(start: -0.001)
            return ([s.notification("DID_RENEW", transaction: t, renewal: s.renewal())],
                    merged(active, ["current_period_end": .string(E2E.iso(t.expiresDate ?? 0)),
                                    "auto_renew_enabled": true]))
        },
        Case(name: "DID_RENEW/BILLING_RECOVERY", expired: true) { s in
            let failed = s.notification(
                "DID_FAIL_TO_RENEW", transaction: s.resigned(at: E2E.ms(-60)),
                renewal: s.renewal(signed: E2E.ms(-60)) { $0.isInBillingRetryPeriod = true; $0.expirationIntent = 2 },
                signed: E2E.ms(-60))
            let recovered = s.notification(
                "DID_RENEW", "BILLING_RECOVERY", transaction: s.next(start: -0.0001),
                renewal: s.renewal { $0.isInBillingRetryPeriod = false })
            return ([failed, recovered], merged(active, ["expiration_intent": nil]))
        },
        Case(name: "DID_CHANGE_RENEWAL_PREF/UPGRADE") { s in
            let t = s.next(start: -0.0001, days: 365, product: "com.e2e.pro.yearly")
            return ([s.notification("DID_CHANGE_RENEWAL_PREF", "UPGRADE", transaction: t,
                                    renewal: s.renewal { $0.productId = t.productId; $0.autoRenewProductId = t.productId })],
                    ["status": "active", "product_id": "com.e2e.pro.yearly", "entitlements": ["pro", "yearly"],
                     "current_period_end": .string(E2E.iso(t.expiresDate ?? 0)),
                     "auto_renew_product_id": "com.e2e.pro.yearly"])
        },
        Case(name: "DID_CHANGE_RENEWAL_PREF/DOWNGRADE") { s in
            ([s.notification("DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", transaction: s.resigned(),
                             renewal: s.renewal { $0.autoRenewProductId = "com.e2e.pro.basic" })],
             merged(active, ["product_id": "com.e2e.pro.monthly", "auto_renew_product_id": "com.e2e.pro.basic"]))
        },
        Case(name: "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED") { s in
            ([s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: s.resigned(),
                             renewal: s.renewal { $0.autoRenewStatus = 0 })],
             merged(active, ["auto_renew_enabled": false]))
        },
        Case(name: "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_ENABLED") { s in
            ([s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: s.resigned(at: E2E.ms(-30)),
                             renewal: s.renewal(signed: E2E.ms(-30)) { $0.autoRenewStatus = 0 }, signed: E2E.ms(-30)),
              s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", transaction: s.resigned(),
                             renewal: s.renewal())],
             merged(active, ["auto_renew_enabled": true]))
        },
        Case(name: "OFFER_REDEEMED/UPGRADE", expired: true) { s in
            let t = s.next(start: -0.0001, days: 90, product: "com.e2e.pro.yearly")
            return ([s.notification("OFFER_REDEEMED", "UPGRADE", transaction: t,
                                    renewal: s.renewal { $0.offerType = 2; $0.offerIdentifier = "winback-90" })],
                    ["status": "active", "product_id": "com.e2e.pro.yearly", "entitlements": ["pro", "yearly"]])
        },
        Case(name: "DID_FAIL_TO_RENEW/GRACE_PERIOD", expired: true) { s in
            let grace = E2E.ms(15 * day)
            return ([s.notification("DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: s.resigned(),
                                    renewal: s.renewal {
                                        $0.isInBillingRetryPeriod = true; $0.gracePeriodExpiresDate = grace
                                        $0.expirationIntent = 2
                                    })],
                    ["status": "active", "entitlements": ["pro"], "in_grace_period": true, "in_billing_retry": true,
                     "grace_period_expires_date": .string(E2E.iso(grace)), "expiration_intent": 2])
        },
        Case(name: "DID_FAIL_TO_RENEW (no grace period)", expired: true) { s in
            ([s.notification("DID_FAIL_TO_RENEW", transaction: s.resigned(),
                             renewal: s.renewal { $0.isInBillingRetryPeriod = true; $0.expirationIntent = 2 })],
             ["status": "expired", "entitlements": [], "in_grace_period": false, "in_billing_retry": true,
              "grace_period_expires_date": nil])
        },
        Case(name: "GRACE_PERIOD_EXPIRED", expired: true) { s in
            let grace = E2E.ms(-60)
            return ([s.notification("DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: s.resigned(at: E2E.ms(-20 * day)),
                                    renewal: s.renewal(signed: E2E.ms(-20 * day)) {
                                        $0.isInBillingRetryPeriod = true; $0.gracePeriodExpiresDate = grace
                                    }, signed: E2E.ms(-20 * day)),
                     s.notification("GRACE_PERIOD_EXPIRED", transaction: s.resigned(),
                                    renewal: s.renewal {
                                        $0.isInBillingRetryPeriod = true; $0.gracePeriodExpiresDate = grace
                                    })],
                    ["status": "expired", "entitlements": [], "in_grace_period": false, "in_billing_retry": true,
                     "grace_period_expires_date": .string(E2E.iso(grace))])
        },
        Case(name: "EXPIRED/VOLUNTARY", expired: true) { s in
            ([s.notification("EXPIRED", "VOLUNTARY", transaction: s.resigned(),
                             renewal: s.renewal { $0.autoRenewStatus = 0; $0.expirationIntent = 1 })],
             ["status": "expired", "entitlements": [], "expiration_intent": 1, "auto_renew_enabled": false])
        },
        Case(name: "EXPIRED/BILLING_RETRY", expired: true) { s in
            ([s.notification("EXPIRED", "BILLING_RETRY", transaction: s.resigned(),
                             renewal: s.renewal {
                                 $0.autoRenewStatus = 0; $0.expirationIntent = 2; $0.isInBillingRetryPeriod = false
                             })],
             ["status": "expired", "entitlements": [], "expiration_intent": 2, "in_billing_retry": false])
        },
        Case(name: "EXPIRED/PRICE_INCREASE", expired: true) { s in
            ([s.notification("EXPIRED", "PRICE_INCREASE", transaction: s.resigned(),
                             renewal: s.renewal { $0.autoRenewStatus = 0; $0.expirationIntent = 3 })],
             ["status": "expired", "entitlements": [], "expiration_intent": 3])
        },
        Case(name: "EXPIRED/PRODUCT_NOT_FOR_SALE", expired: true) { s in
            ([s.notification("EXPIRED", "PRODUCT_NOT_FOR_SALE", transaction: s.resigned(),
                             renewal: s.renewal { $0.autoRenewStatus = 0; $0.expirationIntent = 4 })],
             ["status": "expired", "entitlements": [], "expiration_intent": 4])
        },
        Case(name: "REFUND") { s in
            let revoked = E2E.ms(-5)
            return ([s.notification("REFUND", transaction: s.resigned {
                         $0.revocationDate = revoked; $0.revocationReason = 0 }, renewal: s.renewal())],
                    ["status": "revoked", "entitlements": [], "revocation_date": .string(E2E.iso(revoked)),
                     "auto_renew_enabled": false])
        },
        Case(name: "REFUND_DECLINED") { s in
            ([s.notification("REFUND_DECLINED", transaction: s.resigned(), renewal: s.renewal())],
             merged(active, ["revocation_date": nil]))
        },
        Case(name: "REFUND_REVERSED") { s in
            let revoked = E2E.ms(-120)
            return ([s.notification("REFUND", transaction: s.resigned(at: E2E.ms(-60)) {
                         $0.revocationDate = revoked; $0.revocationReason = 1 }, signed: E2E.ms(-60)),
                     s.notification("REFUND_REVERSED", transaction: s.resigned())],
                    merged(active, ["revocation_date": nil]))
        },
        Case(name: "REVOKE (family sharing)", ownership: "FAMILY_SHARED") { s in
            let revoked = E2E.ms(-5)
            return ([s.notification("REVOKE", transaction: s.resigned { $0.revocationDate = revoked },
                                    renewal: s.renewal())],
                    ["status": "revoked", "entitlements": [], "ownership_type": "FAMILY_SHARED",
                     "revocation_date": .string(E2E.iso(revoked))])
        },
        Case(name: "RENEWAL_EXTENDED", expired: true) { s in
            let extended = E2E.ms(5 * day)
            return ([s.notification("RENEWAL_EXTENDED", transaction: s.resigned { $0.expiresDate = extended })],
                    merged(active, ["current_period_end": .string(E2E.iso(extended))]))
        },
        Case(name: "RENEWAL_EXTENSION/SUMMARY (recorded only)") { s in
            var n = s.notification("RENEWAL_EXTENSION", "SUMMARY")
            n.body = .summary
            return ([n], merged(active, ["current_period_end": .string(E2E.iso(s.initial.expiresDate ?? 0))]))
        },
        Case(name: "RENEWAL_EXTENSION/FAILURE") { s in
            ([s.notification("RENEWAL_EXTENSION", "FAILURE", transaction: s.resigned(), renewal: s.renewal())], active)
        },
        Case(name: "PRICE_INCREASE/PENDING") { s in
            ([s.notification("PRICE_INCREASE", "PENDING", transaction: s.resigned(),
                             renewal: s.renewal { $0.priceIncreaseStatus = 0 })], active)
        },
        Case(name: "PRICE_INCREASE/ACCEPTED") { s in
            ([s.notification("PRICE_INCREASE", "ACCEPTED", transaction: s.resigned(),
                             renewal: s.renewal { $0.priceIncreaseStatus = 1 })], active)
        },
        Case(name: "CONSUMPTION_REQUEST") { s in
            var n = s.notification("CONSUMPTION_REQUEST", transaction: s.resigned(), renewal: s.renewal())
            n.extra = [("consumptionRequestReason", "UNINTENDED_PURCHASE")]
            return ([n], active)
        },
        Case(name: "TEST") { s in
            ([s.notification("TEST")], active)
        },
        Case(name: "EXTERNAL_PURCHASE_TOKEN/UNREPORTED") { s in
            var n = s.notification("EXTERNAL_PURCHASE_TOKEN", "UNREPORTED")
            n.body = .externalPurchaseToken
            return ([n], active)
        },
        Case(name: "EXTERNAL_PURCHASE_TOKEN/CREATED") { s in
            var n = s.notification("EXTERNAL_PURCHASE_TOKEN", "CREATED")
            n.body = .externalPurchaseToken
            return ([n], active)
        },
        Case(name: "EXTERNAL_PURCHASE_TOKEN/ACTIVE_TOKEN_REMINDER") { s in
            var n = s.notification("EXTERNAL_PURCHASE_TOKEN", "ACTIVE_TOKEN_REMINDER")
            n.body = .externalPurchaseToken
            return ([n], active)
        },
        Case(name: "ONE_TIME_CHARGE") { s in
            var lifetime = TransactionPayload(bundleId: s.bundle)
            lifetime.productId = "com.e2e.lifetime"
            lifetime.type = "Non-Consumable"
            lifetime.expiresDate = nil
            return ([s.notification("ONE_TIME_CHARGE", transaction: lifetime)], active)
        },
        Case(name: "RESCIND_CONSENT (consent recorded, entitlements kept)") { s in
            var n = s.notification("RESCIND_CONSENT")
            n.body = .appData(AppTransactionPayload(bundleId: s.bundle))
            return ([n], active)
        },
        Case(name: "METADATA_UPDATE (Advanced Commerce)") { s in
            ([s.notification("METADATA_UPDATE", transaction: s.resigned {
                $0.extra = [("advancedCommerceInfo", ["requestReferenceId": "e2e-ref", "period": "P1M"])]
            }, renewal: s.renewal())], active)
        },
        Case(name: "MIGRATION (Advanced Commerce)") { s in
            ([s.notification("MIGRATION", transaction: s.resigned(), renewal: s.renewal())], active)
        },
        Case(name: "PRICE_CHANGE (Advanced Commerce)") { s in
            ([s.notification("PRICE_CHANGE", transaction: s.resigned(), renewal: s.renewal())], active)
        },
        Case(name: "REFUND (partial: REFUND_PRORATED keeps access)") { s in
            ([s.notification("REFUND", transaction: s.resigned {
                $0.revocationDate = E2E.ms(-1)
                $0.revocationReason = 0
                $0.revocationType = "REFUND_PRORATED"
                $0.revocationPercentage = 40_000
                $0.extra = [("appTransactionId", "704E2E"), ("offerPeriod", "P1M"), ("offerDiscountType", "PAY_AS_YOU_GO")]
            })], merged(active, [
                "revocation_date": nil, "revocation_type": "REFUND_PRORATED", "revocation_percentage": 40_000,
                "partial_refund": true,
            ]))
        },
        Case(name: "A type Apple adds later") { s in
            ([s.notification("SUBSCRIPTION_TELEPORTED", "TO_MARS", transaction: s.resigned(), renewal: s.renewal())],
             active)
        },
    ] }

    func testEveryNotificationTypeAndSubtypeLandsInTheUsersAnswer() throws {
        let api = try api
        let db = try db
        for c in Self.cases {
            let s = try subscriber(expired: c.expired, ownership: c.ownership)
            let (notifications, expected) = c.run(s)
            for n in notifications { try api.deliver(s.tenant.publicKey, n) }
            try assertAnswer(s, expected, c.name)
            XCTAssertEqual(try db.count("notifications", project: s.tenant.id), notifications.count, c.name)
            let processed = try db.query("""
                SELECT count(*)::int8 AS n FROM notifications
                WHERE project_id = \(s.tenant.id)::uuid AND processed_at IS NOT NULL
                """).first?.decode("n", as: Int64.self)
            XCTAssertEqual(processed, Int64(notifications.count), c.name)
        }
        // Every type of the issue is in the table (and one Apple has not invented yet).
        let types = Set(Self.cases.map { $0.name.split(separator: "/")[0].split(separator: " ")[0] })
        XCTAssertEqual(types, [
            "SUBSCRIBED", "DID_RENEW", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED",
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
            "REVOKE", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "PRICE_INCREASE", "CONSUMPTION_REQUEST", "TEST",
            "EXTERNAL_PURCHASE_TOKEN", "ONE_TIME_CHARGE", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION",
            "PRICE_CHANGE", "A",
        ])
        // …and every documented subtype.
        let subtypes = Set(Self.cases.compactMap { c in
            c.name.split(separator: " ")[0].split(separator: "/").dropFirst().first.map(String.init)
        })
        XCTAssertEqual(subtypes, [
            "INITIAL_BUY", "RESUBSCRIBE", "BILLING_RECOVERY", "UPGRADE", "DOWNGRADE", "AUTO_RENEW_DISABLED",
            "AUTO_RENEW_ENABLED", "GRACE_PERIOD", "VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE",
            "SUMMARY", "FAILURE", "PENDING", "ACCEPTED", "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
        ])
        // Recognised, not counted as unknown: only the invented type is.
        let metrics = try api.client.get("/metrics", headers: ["Authorization": "Bearer \(Self.metricsToken)"])
        XCTAssertEqual(metrics.status, 200, metrics.description)
        let text = String(decoding: metrics.body, as: UTF8.self)
        for series in [#"{type="RESCIND_CONSENT",subtype="none"}"#, #"{type="EXTERNAL_PURCHASE_TOKEN",subtype="CREATED"}"#,
                       #"{type="EXTERNAL_PURCHASE_TOKEN",subtype="ACTIVE_TOKEN_REMINDER"}"#,
                       #"{type="METADATA_UPDATE",subtype="none"}"#, #"{type="MIGRATION",subtype="none"}"#,
                       #"{type="PRICE_CHANGE",subtype="none"}"#, #"{type="RENEWAL_EXTENSION",subtype="FAILURE"}"#] {
            XCTAssertTrue(text.contains("bouncer_notifications_total" + series), series)
        }
        let unknown = text.split(separator: "\n").filter { $0.hasPrefix("bouncer_notifications_total{type=\"unknown\"") }
        XCTAssertEqual(unknown, [#"bouncer_notifications_total{type="unknown",subtype="unknown"} 1"#])
    }

    // MARK: - The issue's "done when"

    func testRefundNotificationFlipsActiveUserToRevokedWithNoAppInvolvement() throws {
        let api = try api
        let s = try subscriber()
        try assertAnswer(s, Self.merged(Self.active, ["revocation_date": nil]), "before")
        let before = try api.user(s.tenant.publicKey, s.user).json()
        XCTAssertEqual(before["entitlements"], ["pro"])

        let refundedAt = E2E.ms(-2)
        try api.deliver(s.tenant.publicKey, s.notification(
            "REFUND", transaction: s.resigned { $0.revocationDate = refundedAt; $0.revocationReason = 0 }))

        let after = try api.user(s.tenant.publicKey, s.user).json()
        XCTAssertEqual(after["status"], "revoked")
        XCTAssertEqual(after["entitlements"], [])
        XCTAssertEqual(after["subscriptions"]?[0]?["status"], "revoked")
        XCTAssertEqual(after["subscriptions"]?[0]?["revocation_date"], .string(E2E.iso(refundedAt)))
    }

    func testNotificationsBeforeAnyReceiptApplyWhenTheUserIsBound() throws {
        let api = try api
        let db = try db
        let s = try subscriber(bind: false)
        try api.deliver(s.tenant.publicKey, s.notification(
            "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", renewal: s.renewal { $0.autoRenewStatus = 0 }))
        XCTAssertEqual(try db.count("pending_renewals", project: s.tenant.id), 1)
        try api.deliver(s.tenant.publicKey, s.notification("SUBSCRIBED", "INITIAL_BUY", transaction: s.resigned(at: E2E.ms(-30))))
        XCTAssertEqual(try db.count("purchases", project: s.tenant.id), 1)
        XCTAssertEqual(try db.count("pending_renewals", project: s.tenant.id), 0)
        XCTAssertEqual(try db.count("subscriptions", project: s.tenant.id), 0)
        XCTAssertEqual(try api.user(s.tenant.publicKey, s.user).json()["status"], "none")

        // The app posts the (older-signed) purchase with the user: bound, and the notified facts show at once.
        let r = try api.postReceipt(s.tenant.publicKey, try s.initial.mint(), user: s.user)
        XCTAssertEqual(r.status, 201, r.description)
        XCTAssertEqual(try r.json()["status"], "active")
        try assertAnswer(s, Self.merged(Self.active, ["auto_renew_enabled": false]), "bound after notifications")

        // A refund notification later reaches the bound user without the app.
        try api.deliver(s.tenant.publicKey, s.notification(
            "REFUND", transaction: s.resigned { $0.revocationDate = E2E.ms(-1) }))
        XCTAssertEqual(try api.user(s.tenant.publicKey, s.user).json()["status"], "revoked")
    }

    func testOneTimeChargeBecomesATransactionTheUserLaterBindsTo() throws {
        let api = try api
        let db = try db
        let s = try subscriber()
        var lifetime = TransactionPayload(bundleId: s.bundle)
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        try api.deliver(s.tenant.publicKey, s.notification("ONE_TIME_CHARGE", transaction: lifetime))
        XCTAssertEqual(try db.count("transactions", project: s.tenant.id), 2)
        XCTAssertEqual(try db.count("purchases", project: s.tenant.id), 2)
        let r = try api.postReceipt(s.tenant.publicKey, try lifetime.mint(), user: s.user)
        XCTAssertEqual(r.status, 201, r.description)
        let user = try api.user(s.tenant.publicKey, s.user).json()
        XCTAssertEqual(user["status"], "active")
        XCTAssertEqual(user["entitlements"], ["lifetime", "pro"])
    }

    func testRedeliveryIsDuplicateAndChangesNothing() throws {
        let api = try api
        let db = try db
        let s = try subscriber()
        var refund = s.notification("REFUND", transaction: s.resigned { $0.revocationDate = E2E.ms(-1) })
        let jws = try refund.mint()
        XCTAssertEqual(try api.notify(s.tenant.publicKey, jws).status, 200)
        let (_, afterFirst) = try answer(s)
        let rowsBefore = try db.query("""
            SELECT received_at::text AS r, processed_at::text AS p FROM notifications WHERE project_id = \(s.tenant.id)::uuid
            """).map { [try $0.decode("r", as: String.self), try $0.decode("p", as: String.self)] }

        let again = try api.notify(s.tenant.publicKey, jws)
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(try again.json(), ["status": "duplicate", "notification_uuid": .string(refund.uuid)])
        // Same UUID, different (even newer) facts: still a duplicate, still nothing changes.
        refund.transaction = s.resigned { $0.revocationDate = nil }
        refund.signedDate = E2E.ms(10)
        XCTAssertEqual(try api.notify(s.tenant.publicKey, try refund.mint()).json()["status"], "duplicate")

        XCTAssertEqual(try answer(s).1, afterFirst)
        XCTAssertEqual(afterFirst["status"], "revoked")
        XCTAssertEqual(try db.count("notifications", project: s.tenant.id), 1)
        let rowsAfter = try db.query("""
            SELECT received_at::text AS r, processed_at::text AS p FROM notifications WHERE project_id = \(s.tenant.id)::uuid
            """).map { [try $0.decode("r", as: String.self), try $0.decode("p", as: String.self)] }
        XCTAssertEqual(rowsAfter, rowsBefore)
    }

    /// subscribe → renew → fail (grace) → grace expired → recover → refund, as Apple would send them; the
    /// subscriber's initial transaction must be the first period (before day -60).
    func lifecycle(_ s: Subscriber, refund: Bool) -> [NotificationPayload] {
        let d = Self.day
        let t1 = s.initial
        let t2 = s.next(start: -60, days: 30)
        let grace = E2E.ms(-14 * d)
        let t3 = s.next(start: -10, days: 30)
        var out = [
            s.notification("SUBSCRIBED", "INITIAL_BUY", transaction: t1, renewal: s.renewal(signed: t1.signedDate),
                           signed: t1.signedDate),
            s.notification("DID_RENEW", transaction: t2, renewal: s.renewal(signed: t2.signedDate), signed: t2.signedDate),
            s.notification("DID_FAIL_TO_RENEW", "GRACE_PERIOD", transaction: t2,
                           renewal: s.renewal(signed: E2E.ms(-30 * d)) {
                               $0.isInBillingRetryPeriod = true; $0.gracePeriodExpiresDate = grace; $0.expirationIntent = 2
                           }, signed: E2E.ms(-30 * d)),
            s.notification("GRACE_PERIOD_EXPIRED", transaction: t2,
                           renewal: s.renewal(signed: grace) {
                               $0.isInBillingRetryPeriod = true; $0.gracePeriodExpiresDate = grace; $0.expirationIntent = 2
                           }, signed: grace),
            s.notification("DID_RENEW", "BILLING_RECOVERY", transaction: t3,
                           renewal: s.renewal(signed: t3.signedDate), signed: t3.signedDate),
        ]
        if refund {
            var refunded = t3
            refunded.signedDate = E2E.ms(-1 * d)
            refunded.revocationDate = E2E.ms(-1 * d)
            refunded.revocationReason = 0
            out.append(s.notification("REFUND", transaction: refunded, renewal: s.renewal(signed: E2E.ms(-1 * d)),
                                      signed: E2E.ms(-1 * d)))
        }
        return out
    }

    func testShuffledLifecycleEndsInTheSameStateAsInOrder() throws {
        let api = try api
        var generator = SeededGenerator(seed: 0x6E6F_7469_6679)
        for refund in [false, true] {
            var answers: [JSONValue] = []
            // One set of signed facts for all orders (each in its own project), so the answers compare exactly.
            var anchor = try subscriber(bind: false)
            anchor.initial.purchaseDate = E2E.ms(-90 * Self.day)
            anchor.initial.originalPurchaseDate = anchor.initial.purchaseDate
            anchor.initial.expiresDate = E2E.ms(-60 * Self.day)
            anchor.initial.signedDate = anchor.initial.purchaseDate
            // Minted once: every order's project is the same app (bundle id), so the same JWS serve them all.
            let template = try lifecycle(anchor, refund: refund).map { ($0.uuid, try $0.mint()) }
            let receipt = try anchor.initial.mint()
            let orders: [[Int]] = [Array(template.indices), Array(template.indices.reversed()),
                                   template.indices.shuffled(using: &generator),
                                   template.indices.shuffled(using: &generator)]
            for order in orders {
                var s = try subscriber(bind: false, bundle: anchor.bundle)
                s.initial = anchor.initial
                let bound = try api.postReceipt(s.tenant.publicKey, receipt, user: s.user)
                XCTAssertEqual(bound.status, 201, bound.description)
                for i in order {
                    let r = try api.notify(s.tenant.publicKey, template[i].1)
                    XCTAssertEqual(try r.json(), ["status": "processed", "notification_uuid": .string(template[i].0)])
                }
                let (status, answered) = try answer(s)
                var subscription = answered
                XCTAssertEqual(status, refund ? "revoked" : "active", "order \(order)")
                if case .object(var object) = subscription {
                    object["original_transaction_id"] = nil
                    subscription = .object(object)
                }
                answers.append(subscription)
            }
            for (i, answer) in answers.enumerated() {
                XCTAssertEqual(answer, answers[0], "order \(orders[i]) (refund: \(refund))")
            }
            XCTAssertEqual(answers[0]["in_grace_period"], false)
            XCTAssertEqual(answers[0]["in_billing_retry"], false)
            let recovered = try E2E.payload(ofJWS: template[4].1)["data"]?["signedTransactionInfo"]?.stringValue ?? ""
            XCTAssertEqual(answers[0]["current_period_end"],
                           .string(E2E.iso(try E2E.payload(ofJWS: recovered)["expiresDate"]?.int64Value ?? 0)))
        }
    }

    func testForgedOrForeignNotificationsAre4xxAndChangeNothing() throws {
        let api = try api
        let db = try db
        let s = try subscriber()
        let (_, before) = try answer(s)
        let refund = s.notification("REFUND", transaction: s.resigned { $0.revocationDate = E2E.ms(-1) })

        // Tampered payload: the signature no longer matches.
        let genuine = try refund.mint()
        let parts = genuine.split(separator: ".").map(String.init)
        var tamperedPayload = try refund.json()
        if case .object(var object) = tamperedPayload {
            object["subtype"] = "FORGED"
            tamperedPayload = .object(object)
        }
        let forgedBody = Data(tamperedPayload.serializedString().utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        assertError(try api.notify(s.tenant.publicKey, parts[0] + "." + forgedBody + "." + parts[2]), 400,
                    "JWS_VERIFICATION_FAILED")

        // Signed by a key under a root the server does not trust.
        let untrusted = try E2E.mint(try refund.json(), key: E2EPaths.pki.appendingPathComponent("keys/other-root.key").path)
        XCTAssertEqual(try api.notify(s.tenant.publicKey, untrusted).status, 400)

        // Genuinely signed, but for another app.
        var foreign = refund
        foreign.bundleId = "com.someone.else"
        assertError(try api.notify(s.tenant.publicKey, try foreign.mint()), 400, "BUNDLE_ID_MISMATCH")

        // The outer notification is ours but the nested transaction belongs to another app.
        var nestedForeign = refund
        nestedForeign.transaction?.bundleId = "com.someone.else"
        assertError(try api.notify(s.tenant.publicKey, try nestedForeign.mint()), 400, "BUNDLE_ID_MISMATCH")

        // Posted to another tenant's URL: that tenant's bundle does not match.
        let other = try api.createProject()
        assertError(try api.notify(other.publicKey, genuine), 400, "BUNDLE_ID_MISMATCH")

        // An unknown key and a malformed body.
        assertError(try api.notify("pk_" + String(repeating: "0", count: 32), genuine), 401, "AUTH_INVALID_PUBLIC_KEY")
        let bad = try api.client.post("/v1/notifications/\(s.tenant.publicKey)", json: ["signed_payload": "x"])
        assertError(bad, 400, "VALIDATION_ERROR")

        XCTAssertEqual(try db.count("notifications", project: s.tenant.id), 0)
        XCTAssertEqual(try db.count("notifications", project: other.id), 0)
        XCTAssertEqual(try answer(s).1, before)
        XCTAssertEqual(before["status"], "active")
    }

    func testAdminListShowsWhatWasReceivedNewestFirst() throws {
        let api = try api
        let s = try subscriber()
        let first = s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", transaction: s.resigned(),
                                   renewal: s.renewal { $0.autoRenewStatus = 0 }, signed: E2E.ms(-10))
        try api.deliver(s.tenant.publicKey, first)
        let test = s.notification("TEST")
        try api.deliver(s.tenant.publicKey, test)

        let all = try api.client.get("/v1/admin/projects/\(s.tenant.id)/notifications", headers: E2E.admin)
        XCTAssertEqual(all.status, 200, all.description)
        let list = try all.json()["notifications"]?.arrayValue ?? []
        XCTAssertEqual(list.map { $0["notification_uuid"] }, [.string(test.uuid), .string(first.uuid)])
        XCTAssertEqual(list.last?["type"], "DID_CHANGE_RENEWAL_STATUS")
        XCTAssertEqual(list.last?["subtype"], "AUTO_RENEW_DISABLED")
        XCTAssertEqual(list.last?["original_transaction_id"], .string(s.otid))
        XCTAssertEqual(list.last?["environment"], "Sandbox")
        XCTAssertEqual(list.last?["signed_date"], .string(E2E.iso(first.signedDate)))
        XCTAssertEqual(list.first?["original_transaction_id"], JSONValue.null)

        let filtered = try api.client.get(
            "/v1/admin/projects/\(s.tenant.id)/notifications?original_transaction_id=\(s.otid)&limit=5",
            headers: E2E.admin)
        XCTAssertEqual(try filtered.json()["notifications"]?.arrayValue?.count, 1)
        assertError(try api.client.get("/v1/admin/projects/\(s.tenant.id)/notifications?limit=5000", headers: E2E.admin),
                    400, "VALIDATION_ERROR")
        assertError(try api.client.get("/v1/admin/projects/\(s.tenant.id)/notifications"), 401, "AUTH_INVALID_ADMIN_TOKEN")
    }

    // MARK: - Win-back offers (issue 25 item 6)

    func testEligibleWinBackOfferIdsAreStoredAndShownAndHostileListsAreRefused() throws {
        let api = try api
        let db = try db
        let s = try subscriber()
        // Before any renewal info, and in renewal info without the field: [].
        let (_, first) = try answer(s)
        XCTAssertEqual(first["eligible_win_back_offer_ids"], [])
        try api.deliver(s.tenant.publicKey, s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED",
                                                            renewal: s.renewal(signed: E2E.ms(-300))))
        let (_, absent) = try answer(s)
        guard case .object(var expected) = first else { return XCTFail("\(first)") }
        expected["auto_renew_product_id"] = "com.e2e.pro.monthly"
        XCTAssertEqual(absent, .object(expected))

        // Apple's order (best first) is kept, stored as signed and shown as stored.
        let ids: JSONValue = ["winback-6m-half", "winback-1m-free"]
        try api.deliver(s.tenant.publicKey, s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED",
            renewal: s.renewal(signed: E2E.ms(-200)) {
                $0.autoRenewStatus = 0
                $0.extra = [("eligibleWinBackOfferIds", ids)]
            }))
        let stored = try db.query("""
            SELECT array_to_json(eligible_win_back_offer_ids)::text AS ids FROM purchases
            WHERE project_id = \(s.tenant.id)::uuid AND original_transaction_id = \(s.otid)
            """).first?.decode("ids", as: String?.self)
        XCTAssertEqual(stored, #"["winback-6m-half","winback-1m-free"]"#)
        let (_, shown) = try answer(s)
        expected["eligible_win_back_offer_ids"] = ids
        expected["auto_renew_enabled"] = false
        XCTAssertEqual(shown, .object(expected))

        // Hostile lists: too many ids, an id too long, an empty id, a number; each refused like any malformed
        // signed field, and nothing changes.
        let prefix = "Invalid JWS format: nested data.signedRenewalInfo: payload field eligibleWinBackOfferIds must "
        let hostile: [(JSONValue, String)] = [
            (.array((0...100).map { .string("wb-\($0)") }), "hold at most 100 strings"),
            (.array([.string(String(repeating: "w", count: 257))]), "hold strings of 1 to 256 bytes"),
            (.array([""]), "hold strings of 1 to 256 bytes"),
            (.array([.string("wb-1"), 7]), "be an array of strings"),
            ("wb-1", "be an array of strings"),
        ]
        for (index, (value, reason)) in hostile.enumerated() {
            let n = s.notification("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED",
                                   renewal: s.renewal(signed: E2E.ms(-100 + Double(index))) {
                                       $0.extra = [("eligibleWinBackOfferIds", value)]
                                   })
            let r = try api.notify(s.tenant.publicKey, try n.mint())
            assertError(r, 400, "INVALID_JWS_FORMAT", error: prefix + reason)
        }
        XCTAssertEqual(try db.count("notifications", project: s.tenant.id), 2)
        XCTAssertEqual(try answer(s).1, shown)
    }

}
