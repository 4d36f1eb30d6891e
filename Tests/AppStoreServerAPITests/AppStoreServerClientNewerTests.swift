import AppStoreServerAPI
@testable import Domain
import Foundation
import JSON
import TestSupport
import XCTest

/// The newer endpoints (issue 25) against the fake Apple over TLS: exact paths and bodies, Apple's documented
/// errors, 429 waited for and 5xx retried.
extension AppStoreServerClientTests {
    func testAppTransactionInfoReturnsTheSignedAppTransaction() throws {
        apple.setAppTransaction(signed: "a.p.s", forTransactionIds: ["1000", "1001"], environment: .sandbox)
        XCTAssertEqual(try client().appTransactionInfo(transactionId: "1001", environment: .sandbox, credentials: credentials()),
                       "a.p.s")
        XCTAssertEqual(apple.requests.map(\.path), ["/inApps/v1/transactions/appTransactions/1001"])
        assertAPIError(.notFound, { _ = try client().appTransactionInfo(transactionId: "9", environment: .production,
                                                                         credentials: credentials()) }) {
            XCTAssertEqual($0.appleErrorCode, 4040010)
        }
    }

    func testSetAppAccountTokenPutsApplesBodyAndMapsItsErrors() throws {
        let token = UUID()
        apple.allowAppAccountToken("1000", environment: .production)
        apple.allowAppAccountToken("2000", family: true, environment: .production)
        apple.inject(.serverError(), on: .setAppAccountToken)   // retried: a PUT of a value
        try client().setAppAccountToken(originalTransactionId: "1000", token: token, environment: .production,
                                        credentials: credentials())
        XCTAssertEqual(apple.appAccountTokens(environment: .production), ["1000": token.uuidString.lowercased()])
        XCTAssertEqual(apple.requests.map(\.method), ["PUT", "PUT"])
        XCTAssertEqual(apple.requests.last?.path, "/inApps/v1/transactions/1000/appAccountToken")
        XCTAssertEqual(apple.requests.last?.jsonBody, ["appAccountToken": .string(token.uuidString.lowercased())])
        assertAPIError(.rejected, { try client().setAppAccountToken(originalTransactionId: "2000", token: token,
                                                                    environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.httpStatus, 400)
            XCTAssertEqual($0.appleErrorCode, 4000185)
        }
        assertAPIError(.notFound, { try client().setAppAccountToken(originalTransactionId: "3000", token: token,
                                                                    environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.appleErrorCode, 4040005)
        }
    }

    func testRefundHistoryPagesWithRevisionAndWaitsOutA429() throws {
        apple.setRefundHistory("1000", pages: [["r1", "r2"], ["r3"]], environment: .production)
        apple.inject(.rateLimited(retryAfter: 1), on: .refundHistory)
        let first = try client().refundHistory(transactionId: "1000", revision: nil, environment: .production,
                                               credentials: credentials())
        XCTAssertEqual(first.signedItems, ["r1", "r2"])
        XCTAssertTrue(first.hasMore)
        let second = try client().refundHistory(transactionId: "1000", revision: first.next, environment: .production,
                                                credentials: credentials())
        XCTAssertEqual(second.signedItems, ["r3"])
        XCTAssertFalse(second.hasMore)
        XCTAssertEqual(apple.requests.map(\.path), Array(repeating: "/inApps/v2/refund/lookup/1000", count: 3))
        XCTAssertEqual(apple.requests.last?.query.map(\.value), ["revision-1"])
        assertAPIError(.rejected, { _ = try client().refundHistory(transactionId: "1000", revision: "forged",
                                                                    environment: .production, credentials: credentials()) }) {
            XCTAssertEqual($0.appleErrorCode, 4000005)
        }
    }

    func testMassExtensionPostsApplesRequestAndReadsItsStatus() throws {
        apple.allowMassExtension(productId: "pro.monthly", environment: .production)
        let id = UUID()
        let request = MassRenewalExtensionRequest(requestIdentifier: id, extendByDays: 7, reasonCode: 3,
                                                  productId: "pro.monthly", storefronts: ["USA", "FRA"])
        XCTAssertEqual(try client().extendRenewalDatesForAll(request, environment: .production, credentials: credentials()), id)
        XCTAssertEqual(apple.requests.first?.path, "/inApps/v1/subscriptions/extend/mass")
        XCTAssertEqual(apple.requests.first?.jsonBody, [
            "requestIdentifier": .string(id.uuidString.lowercased()), "extendByDays": 7, "extendReasonCode": 3,
            "productId": "pro.monthly", "storefrontCountryCodes": ["USA", "FRA"],
        ])
        let pending = try client().massRenewalExtensionStatus(productId: "pro.monthly", requestIdentifier: id,
                                                              environment: .production, credentials: credentials())
        XCTAssertEqual(pending, MassRenewalExtensionStatus(complete: false, completeDate: nil, succeededCount: nil,
                                                           failedCount: nil))
        apple.completeMassExtension(id, succeeded: 40, failed: 2, at: 1_800_000_000_000, environment: .production)
        XCTAssertEqual(try client().massRenewalExtensionStatus(productId: "pro.monthly", requestIdentifier: id,
                                                               environment: .production, credentials: credentials()),
                       MassRenewalExtensionStatus(complete: true,
                                                  completeDate: Date(timeIntervalSince1970: 1_800_000_000),
                                                  succeededCount: 40, failedCount: 2))
        XCTAssertEqual(apple.requests.last?.path, "/inApps/v1/subscriptions/extend/mass/pro.monthly/\(id.uuidString.lowercased())")
        var other = request
        other.productId = "unknown"
        assertAPIError(.rejected, { _ = try client().extendRenewalDatesForAll(other, environment: .production,
                                                                               credentials: credentials()) }) {
            XCTAssertEqual($0.appleErrorCode, 4000023)
        }
    }

    func testFinishTransactionPostsAndRetries5xx() throws {
        apple.allowFinish("1000", environment: .sandbox)
        apple.inject(.serverError(status: 503), on: .finishTransaction)
        try client().finishTransaction(transactionId: "1000", environment: .sandbox, credentials: credentials())
        XCTAssertEqual(apple.finishedTransactions(environment: .sandbox), ["1000"])
        XCTAssertEqual(apple.requests.map(\.path), Array(repeating: "/inApps/v1/transactions/1000/finish", count: 2))
        XCTAssertEqual(apple.requests.map(\.method), ["POST", "POST"])
        assertAPIError(.notFound, { try client().finishTransaction(transactionId: "2", environment: .sandbox,
                                                                   credentials: credentials()) }) {
            XCTAssertEqual($0.appleErrorCode, 4040010)
        }
    }
}
