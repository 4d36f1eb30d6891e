import Foundation
import XCTest

@testable import Domain

/// The before-version rule, dotted numeric versions, consent withdrawals, partial refunds and the notification
/// vocabulary, as tables.
final class AppPurchaseRulesTests: XCTestCase {
    func testDottedVersionsCompareNumericallyPartByPart() {
        let cases: [(String, String, Bool, UInt)] = [  // a < b
            ("1.9", "2.0", true, #line),
            ("1.10", "1.9", false, #line),
            ("1.9", "1.10", true, #line),
            ("2", "2.0", false, #line),
            ("2.0", "2", false, #line),
            ("2.0.0.1", "2", false, #line),
            ("1.99999", "2", true, #line),
            ("10", "2.0", false, #line),       // an iOS build number is a version like any other
            ("0", "0.0.1", true, #line),
            ("999999999", "1000000000", false, #line),  // too many digits: not a version (see below)
        ]
        for (a, b, less, line) in cases {
            guard let x = DottedVersion(a), let y = DottedVersion(b) else {
                XCTAssertEqual(b, "1000000000", "only the 10-digit case is unparseable", line: line)
                continue
            }
            XCTAssertEqual(x < y, less, "\(a) < \(b)", line: line)
        }
        XCTAssertEqual(DottedVersion("2"), DottedVersion("2.0.0"))
        XCTAssertEqual(DottedVersion("2")?.hashValue, DottedVersion("2.0.0")?.hashValue)
        for bad in ["", ".", "1.", ".1", "1..2", "1.a", "v1", "1.2-beta", " 1", "1 ", "١.٢", "1.2.3.4.5.6.7.8.9",
                    "1234567890", "+1", "-1"] {
            XCTAssertNil(DottedVersion(bad), "\(bad)")
        }
        XCTAssertNotNil(DottedVersion("1.2.3.4.5.6.7.8"))
    }

    func testThePurchasedBeforeVersionRule() {
        let setting = AppPurchaseEntitlements(purchasedBeforeVersion: "2.0", entitlements: ["pro", "legacy", "pro"])
        XCTAssertEqual(setting.entitlements, ["legacy", "pro"])
        func app(_ version: String?, rescinded: Date? = nil) -> StoredAppTransaction {
            StoredAppTransaction(appTransactionId: "1", environment: .production, originalApplicationVersion: version,
                                 originalPurchaseDate: Fixture.t0, consentRescindedAt: rescinded)
        }
        let cases: [(String?, AppPurchaseEntitlements?, [String], UInt)] = [
            ("1.9", setting, ["legacy", "pro"], #line),
            ("1", setting, ["legacy", "pro"], #line),
            ("2.0", setting, [], #line),
            ("2", setting, [], #line),
            ("2.0.1", setting, [], #line),
            ("11", setting, [], #line),
            ("1.9", nil, [], #line),
            (nil, setting, [], #line),
            ("1.9b", setting, [], #line),  // never guessed
            ("", setting, [], #line),
            ("1.9", AppPurchaseEntitlements(purchasedBeforeVersion: "x", entitlements: ["pro"]), [], #line),
        ]
        for (version, setting, expected, line) in cases {
            XCTAssertEqual(AppPurchaseRules.entitlements(for: app(version), setting: setting), expected, line: line)
        }
        // A consent withdrawal does not change entitlements.
        XCTAssertEqual(AppPurchaseRules.entitlements(for: app("1.0", rescinded: Fixture.t0), setting: setting),
                       ["legacy", "pro"])
    }

    func testTheSettingsProblems() {
        XCTAssertEqual(AppPurchaseRules.problems(in: AppPurchaseEntitlements(purchasedBeforeVersion: "2.0",
                                                                             entitlements: ["pro"])), [])
        XCTAssertEqual(
            AppPurchaseRules.problems(in: AppPurchaseEntitlements(purchasedBeforeVersion: "2.0-beta", entitlements: [""])),
            [
                FieldProblem(path: ["app_purchase_entitlements", "purchased_before_version"],
                             message: "Must be a dotted numeric version such as 2.0 (1 to 8 groups of 1 to 9 digits)"),
                FieldProblem(path: ["app_purchase_entitlements", "entitlements", "0"],
                             message: "String must contain at least 1 character(s)"),
            ])
        var new = NewProject(ProjectSettings(name: "n", bundleId: "b"))
        new.appPurchaseEntitlements = AppPurchaseEntitlements(purchasedBeforeVersion: "two", entitlements: ["pro"])
        XCTAssertEqual(ProjectRules.problems(in: new).map(\.path), [["app_purchase_entitlements", "purchased_before_version"]])
        var clear = ProjectChanges()
        clear.appPurchaseEntitlements = .some(nil)
        XCTAssertEqual(ProjectRules.problems(in: clear), [])
    }

    func testTheSummaryAddsAppPurchasesAndTheLatestConsentWithdrawal() {
        let setting = AppPurchaseEntitlements(purchasedBeforeVersion: "2.0", entitlements: ["pro"])
        let old = StoredAppTransaction(appTransactionId: "a", environment: .production, originalApplicationVersion: "1.0",
                                       originalPurchaseDate: Fixture.at(-100), consentRescindedAt: Fixture.at(5))
        let new = StoredAppTransaction(appTransactionId: "b", environment: .sandbox, originalApplicationVersion: "3.0",
                                       originalPurchaseDate: Fixture.at(-10), consentRescindedAt: Fixture.at(9))
        let monthly = OwnedPurchase(purchase: Fixture.purchase(Fixture.transaction("1", expires: 3600)),
                                    entitlements: ["monthly"])
        let summary = UserEntitlementSummary.summarize(
            UserHoldings(purchases: [monthly], appTransactions: [old, new]), setting: setting, at: Fixture.at(10))
        XCTAssertEqual(summary.status, .active)
        XCTAssertEqual(summary.entitlements, ["monthly", "pro"])
        XCTAssertEqual(summary.appPurchases.map(\.appTransaction.appTransactionId), ["b", "a"])  // newest first
        XCTAssertEqual(summary.appPurchases.map(\.entitlements), [[], ["pro"]])
        XCTAssertEqual(summary.consentRescindedAt, Fixture.at(9))

        let expiredOnly = UserEntitlementSummary.summarize(
            UserHoldings(purchases: [monthly], appTransactions: [new]), setting: setting, at: Fixture.at(7200))
        XCTAssertEqual(expiredOnly.status, .expired, "an app purchase granting nothing does not make the user active")
        XCTAssertEqual(expiredOnly.entitlements, [])
        let none = UserEntitlementSummary.summarize(UserHoldings(purchases: [], appTransactions: []), setting: setting,
                                                    at: Fixture.t0)
        XCTAssertEqual(none.status, .none)
        XCTAssertNil(none.consentRescindedAt)
    }

    func testOnlyRescindConsentWithAnAppTransactionWithdrawsConsent() {
        let app = AppTransactionFacts(appTransactionId: "1", bundleId: "b", environment: .sandbox,
                                      originalApplicationVersion: "1", originalPurchaseDate: nil,
                                      receiptCreationDate: Fixture.t0, payloadJSON: "{}")
        func facts(_ type: String, signed: Date?, app: AppTransactionFacts?) -> NotificationFacts {
            NotificationFacts(notificationUUID: UUID(), type: type, signedDate: signed, appTransaction: app, payloadJSON: "{}")
        }
        let now = Fixture.at(60)
        XCTAssertEqual(NotificationRules.consentRescindedAt(by: facts("RESCIND_CONSENT", signed: Fixture.at(1), app: app),
                                                            receivedAt: now), Fixture.at(1))
        XCTAssertEqual(NotificationRules.consentRescindedAt(by: facts("RESCIND_CONSENT", signed: nil, app: app),
                                                            receivedAt: now), now)
        XCTAssertNil(NotificationRules.consentRescindedAt(by: facts("RESCIND_CONSENT", signed: Fixture.t0, app: nil),
                                                          receivedAt: now))
        XCTAssertNil(NotificationRules.consentRescindedAt(by: facts("TEST", signed: Fixture.t0, app: app), receivedAt: now))
        XCTAssertEqual(NotificationRules.effect(of: facts("RESCIND_CONSENT", signed: Fixture.t0, app: app)), .recordOnly)
    }

    func testAPartialRefundKeepsAccessAndAFullOneRevokes() {
        func refunded(_ type: RevocationType?) -> TransactionFacts {
            var t = Fixture.transaction("1", expires: 3600, revoked: 100)
            t.revocationType = type
            t.revocationPercentage = type == .refundProrated ? 25_000 : nil
            return t
        }
        let cases: [(RevocationType?, EntitlementStatus, UInt)] = [
            (.refundProrated, .active, #line),
            (.refundFull, .revoked, #line),
            (.familyRevoke, .revoked, #line),
            (nil, .revoked, #line),  // before December 2025 every revocation was whole
            (RevocationType(rawValue: "REFUND_SOMETHING_NEW"), .revoked, #line),
        ]
        for (type, status, line) in cases {
            let t = refunded(type)
            XCTAssertEqual(StatusRules.evaluate(t, at: Fixture.at(200)), status, line: line)
            XCTAssertEqual(StatusRules.evaluate(Fixture.purchase(t), at: Fixture.at(200)).status, status, line: line)
            XCTAssertEqual(t.isPartialRefund, type == .refundProrated, line: line)
        }
    }

    /// Every notification type and subtype in Apple's documentation (changelog through April 2026) is recognised:
    /// none is counted as `unknown`.
    func testEveryDocumentedNotificationTypeAndSubtypeIsRecognised() {
        let types = [
            "SUBSCRIBED", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED", "DID_RENEW", "EXPIRED",
            "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED",
            "CONSUMPTION_REQUEST", "RENEWAL_EXTENDED", "REVOKE", "TEST", "RENEWAL_EXTENSION", "REFUND_REVERSED",
            "EXTERNAL_PURCHASE_TOKEN", "ONE_TIME_CHARGE", "RESCIND_CONSENT", "METADATA_UPDATE", "MIGRATION", "PRICE_CHANGE",
        ]
        let subtypes = [
            "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY",
            "BILLING_RETRY", "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY",
            "PRODUCT_NOT_FOR_SALE", "SUMMARY", "FAILURE", "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
        ]
        for type in types { XCTAssertTrue(NotificationType(rawValue: type).isDocumented, type) }
        for subtype in subtypes { XCTAssertTrue(NotificationSubtype(rawValue: subtype).isDocumented, subtype) }
        XCTAssertEqual(NotificationType.documented.map(\.rawValue).sorted(), types.sorted())
        XCTAssertEqual(NotificationSubtype.documented.map(\.rawValue).sorted(), subtypes.sorted())
        for unknown in ["MIGRATE", "subscribed", "SUBSCRIPTION_TELEPORTED", ""] {
            XCTAssertFalse(NotificationType(rawValue: unknown).isDocumented, unknown)
        }
        XCTAssertFalse(NotificationSubtype(rawValue: "TO_MARS").isDocumented)
    }
}
