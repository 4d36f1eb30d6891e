import Foundation
import XCTest
@testable import AppStoreJWS

/// Issue 21, item 8, for every JWS kind: each date field of renewal info, notifications (their own, the external
/// purchase token's and their nested JWS') and app transactions, run through the extremes. Outside `SignedDateRange`
/// (or beyond Int64) the verifier refuses with `INVALID_JWS_FORMAT` naming the field; its two ends verify.
final class SignedDateRangeTests: XCTestCase {
    let policy = VerificationPolicy(bundleId: "com.bouncer.test", environments: [.sandbox, .production], appAppleId: 42)
    /// Just outside the range on both sides, Int64's extremes, and a number no Int64 holds.
    static let extremes = ["9223372036854775807", "-9223372036854775808", "-62135769600001", "253402300800000", "1e300"]
    /// The range's two ends.
    static let ends = ["-62135769600000", "253402300799999"]

    func verifier() throws -> SignedDataVerifier { SignedDataVerifier(roots: try Fixture.testRoots()) }

    static func renewal(_ extra: String = "", signedDate: String = "1760000000000") -> String {
        #"{"originalTransactionId":"2000000000000001","autoRenewStatus":1,"environment":"Production","signedDate":\#(signedDate)\#(extra)}"#
    }

    static func notification(_ data: String, signedDate: String = "1760000000000") -> String {
        #"{"notificationType":"DID_RENEW","notificationUUID":"u-1","version":"2.0","signedDate":\#(signedDate),"data":{"bundleId":"com.bouncer.test","environment":"Production","appAppleId":42\#(data),"status":1}}"#
    }

    static func token(created: String = "1760000000000", _ extra: String = "") -> String {
        #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"UNREPORTED","notificationUUID":"u-2","signedDate":1760000000000,"externalPurchaseToken":{"externalPurchaseId":"SANDBOX_abc","tokenCreationDate":\#(created),"appAppleId":42,"bundleId":"com.bouncer.test"\#(extra)}}"#
    }

    static func app(created: String = "1760000000000", purchased: String = "1700000000000", _ extra: String = "") -> String {
        #"{"receiptType":"Production","bundleId":"com.bouncer.test","applicationVersion":"7","receiptCreationDate":\#(created),"originalPurchaseDate":\#(purchased),"appTransactionId":"704","appAppleId":42\#(extra)}"#
    }

    /// Every date field as (the field `details` names, a verification of the payload with `value` there).
    func cases(_ value: String) throws -> [(field: String, verify: () throws -> Void)] {
        let v = try verifier(), policy = policy
        func renewal(_ payload: String) -> () throws -> Void {
            { _ = try v.verifyRenewalInfo(try Fixture.sign(payload), policy: policy) }
        }
        func notification(_ payload: String) -> () throws -> Void {
            { _ = try v.verifyNotification(try Fixture.sign(payload), policy: policy) }
        }
        func app(_ payload: String) -> () throws -> Void {
            { _ = try v.verifyAppTransaction(try Fixture.sign(payload), policy: policy) }
        }
        var all: [(String, () throws -> Void)] = [("signedDate", renewal(Self.renewal(signedDate: value)))]
        for field in ["gracePeriodExpiresDate", "recentSubscriptionStartDate", "renewalDate"] {
            all.append((field, renewal(Self.renewal(#","\#(field)":\#(value)"#))))
        }
        all.append(("signedDate", notification(Self.notification("", signedDate: value))))
        all.append(("externalPurchaseToken.tokenCreationDate", notification(Self.token(created: value))))
        all.append(("externalPurchaseToken.tokenExpirationDate",
                    notification(Self.token(#","tokenExpirationDate":\#(value)"#))))
        let nestedRenewal = try Fixture.sign(Self.renewal(#","renewalDate":\#(value)"#))
        all.append(("data.signedRenewalInfo.renewalDate",
                    notification(Self.notification(#","signedRenewalInfo":"\#(nestedRenewal)""#))))
        let nestedTransaction = try Fixture.sign(Fixture.transactionPayload(
            environment: "Production", extra: #","expiresDate":\#(value)"#))
        all.append(("data.signedTransactionInfo.expiresDate",
                    notification(Self.notification(#","signedTransactionInfo":"\#(nestedTransaction)""#))))
        all.append(("receiptCreationDate", app(Self.app(created: value))))
        all.append(("originalPurchaseDate", app(Self.app(purchased: value))))
        all.append(("preorderDate", app(Self.app(#","preorderDate":\#(value)"#))))
        return all
    }

    func testEveryRenewalNotificationAndAppTransactionDateAtTheExtremesIsAFormatErrorNamingTheField() throws {
        for value in Self.extremes {
            for (field, verify) in try cases(value) {
                do {
                    try verify()
                    XCTFail("\(field) = \(value) verified")
                } catch let error as VerificationError {
                    XCTAssertEqual(error.code, .invalidJWSFormat, "\(field) = \(value): \(error)")
                    XCTAssertEqual(error.step, .payload, "\(field) = \(value): \(error)")
                    XCTAssertEqual(error.field, field, "\(field) = \(value): \(error)")
                }
            }
        }
    }

    func testTheRangesEndsVerifyWhereTheyAreNotTheEffectiveDate() throws {
        for value in Self.ends {
            // The effective date (signedDate, receiptCreationDate) also judges the chain: its ends are refused there.
            for (field, verify) in try cases(value) where !["signedDate", "receiptCreationDate"].contains(field) {
                XCTAssertNoThrow(try verify(), "\(field) = \(value)")
            }
        }
    }
}
