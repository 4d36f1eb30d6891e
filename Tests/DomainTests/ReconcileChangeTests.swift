import Domain
import Foundation
import XCTest

/// `ReconcileChange.between`: what the change log records for a purchase before and after a reconciled fact.
final class ReconcileChangeTests: XCTestCase {
    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)

    static func state(expires: Date?, revoked: Date? = nil, signed: Date = t0) -> PurchaseState {
        PurchaseState(originalTransactionId: "1", latestTransactionId: "2", productId: "p", type: .autoRenewable,
                      environment: .production, purchaseDate: t0, expiresDate: expires, revocationDate: revoked,
                      latestSignedDate: signed)
    }

    func testNoChangeIsNoEntry() {
        let s = Self.state(expires: Self.t0.addingTimeInterval(100))
        XCTAssertNil(ReconcileChange.between(s, s, runId: 1, via: .subscriptionStatus, at: Self.t0))
    }

    func testStatusesAreEvaluatedAtTheRunsClock() throws {
        let now = Self.t0.addingTimeInterval(10)
        let table: [(PurchaseState?, PurchaseState, EntitlementStatus?, EntitlementStatus)] = [
            (nil, Self.state(expires: now.addingTimeInterval(1)), nil, .active),
            (Self.state(expires: now.addingTimeInterval(1)), Self.state(expires: now.addingTimeInterval(1), revoked: now,
                                                                         signed: now), .active, .revoked),
            (Self.state(expires: now.addingTimeInterval(-1)), Self.state(expires: now.addingTimeInterval(30), signed: now),
             .expired, .active),
            (Self.state(expires: now), Self.state(expires: now, signed: now), .expired, .expired),
        ]
        for (i, (before, after, expectedBefore, expectedAfter)) in table.enumerated() {
            let change = try XCTUnwrap(ReconcileChange.between(before, after, runId: 7, via: .transactionInfo, at: now),
                                       "row \(i)")
            XCTAssertEqual(change.beforeStatus, expectedBefore, "row \(i)")
            XCTAssertEqual(change.afterStatus, expectedAfter, "row \(i)")
            XCTAssertEqual(change.runId, 7)
            XCTAssertEqual(change.beforeExpiresDate, before?.expiresDate)
            XCTAssertEqual(change.afterRevocationDate, after.revocationDate)
            XCTAssertEqual(change.at, now)
        }
    }

    func testARecoveredNotificationIsNamed() throws {
        let uuid = UUID()
        let facts = NotificationFacts(notificationUUID: uuid, type: "REFUND", payloadJSON: "{}")
        let change = try XCTUnwrap(ReconcileChange.between(
            nil, Self.state(expires: nil), runId: 1, via: .notificationHistory, notification: facts, at: Self.t0))
        XCTAssertEqual(change.notificationUUID, uuid)
        XCTAssertEqual(change.notificationType, "REFUND")
        XCTAssertEqual(change.via, .notificationHistory)
    }
}
