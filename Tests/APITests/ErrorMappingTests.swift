import API
import Domain
import Foundation
import HTTPCore
import JSON
import XCTest

final class ErrorMappingTests: XCTestCase {
    func testDatabaseOutageIs503WithRetryAfterOnEveryRoute() {
        let h = Harness()
        h.register("a.b.c", facts())
        h.projects.failure = .unavailable
        let responses = [
            h.postReceipt("a.b.c", userId: "u"),
            h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u"),
            h.admin(.get, "/v1/admin/projects"),
            h.admin(.post, "/v1/admin/projects", body: #"{"name":"A","bundle_id":"b"}"#),
            h.admin(.get, "/v1/admin/projects/00000000-0000-0000-0000-000000000900/products"),
        ]
        for response in responses {
            assertError(response, status: 503, code: "SERVICE_UNAVAILABLE", error: "Service temporarily unavailable.",
                        suggestion: "Retry after the delay in Retry-After. This says nothing about the purchase.")
            XCTAssertEqual(response.headers["Retry-After"], "1")
            XCTAssertEqual(response.json?["request_id"]?.stringValue, "req-test-1")
            XCTAssertFalse(response.text.contains("connection refused"), "no internals in the body")
        }
        XCTAssertTrue(h.log.all.allSatisfy { $0.contains(#""request_id":"req-test-1""#) && $0.contains(#""status":503"#) })
        XCTAssertEqual(h.log.all.count, responses.count)
    }

    func testPurchaseStoreOutageAfterVerificationIs503() {
        let h = Harness()
        h.register("a.b.c", facts())
        h.purchases.failure = .unavailable
        let response = h.postReceipt("a.b.c", userId: "u")
        assertError(response, status: 503, code: "SERVICE_UNAVAILABLE")
        XCTAssertEqual(response.headers["Retry-After"], "1")
        XCTAssertEqual(h.purchases.transactionCount, 0)
    }

    func testUnexpectedErrorIs500WithRequestIdAndNoInternals() {
        let h = Harness()
        h.register("a.b.c", facts())
        h.purchases.failure = .internalBug
        let response = h.postReceipt("a.b.c", userId: "u")
        XCTAssertEqual(response.status, 500)
        assertError(response, status: 500, code: "INTERNAL_ERROR", error: "Internal server error.",
                    suggestion: "Retry later; if it persists, report the request_id to the operator.")
        XCTAssertNil(response.json?["details"])
        XCTAssertEqual(h.log.all.count, 1)
        let line = h.log.all.first ?? ""
        let logged = try? JSONParser.parse(line)
        XCTAssertEqual(logged?["event"], "request_error", line)
        XCTAssertEqual(logged?["request_id"], "req-test-1", line)
        XCTAssertEqual(logged?["route"], "/v1/receipts/:publicKey", line)
        XCTAssertEqual(logged?["status"], 500, line)
        XCTAssertTrue(line.contains("SQLSTATE 42P01"), "the log keeps the cause: \(line)")
        XCTAssertFalse(line.contains("a.b.c"), "never the JWS")
        XCTAssertFalse(line.contains(Harness.publicKey), "never the key")
    }

    func testConflictIs409() {
        let response = mappedResponse(DomainError(.conflict, "duplicate", underlying: "23505"))
        assertError(response, status: 409, code: "CONFLICT", error: "The request conflicts with stored data.")
        XCTAssertFalse(response.text.contains("23505"))
    }

    func testTransactionConflictIs409AndLogsTheDifferingFieldsButNotTheJWS() throws {
        let h = Harness()
        h.register("a.b.c", facts())
        h.purchases.failure = .transactionConflict
        let response = h.postReceipt("a.b.c", userId: "u")
        XCTAssertEqual(response.status, 409)
        XCTAssertEqual(response.json?["code"]?.stringValue, "TRANSACTION_CONFLICT")
        XCTAssertEqual(response.json?["error"]?.stringValue,
                       "Transaction conflict: the transaction id is already recorded with a different identity.")
        XCTAssertEqual(response.json?["suggestion"]?.stringValue,
                       "This transaction id is already recorded with a different original_transaction_id, product_id or "
                        + "bundle_id in the same environment; nothing was written. Send the transaction exactly as "
                        + "StoreKit 2 returned it.")
        XCTAssertNil(response.json?["details"])
        XCTAssertEqual(h.log.all.count, 1)
        let line = h.log.all.first ?? ""
        let logged = try JSONParser.parse(line)
        XCTAssertEqual(logged["event"], "request_error", line)
        XCTAssertEqual(logged["status"], 409, line)
        XCTAssertEqual(logged["error"]?.stringValue?.hasSuffix(
            "(transaction conflict: project 00000000-0000-0000-0000-000000000001, environment Production, "
                + "transaction 2000, differing fields: product_id)"), true, line)
        XCTAssertFalse(line.contains("a.b.c"), "never the JWS")
    }

    func testNotFoundCodesFromTheStoreAre404() {
        assertError(mappedResponse(DomainError(.projectNotFound, "x")), status: 404, code: "PROJECT_NOT_FOUND")
        assertError(mappedResponse(DomainError(.productNotFound, "x")), status: 404, code: "PRODUCT_NOT_FOUND")
    }

    func testErrorStringsAreEscaped() {
        let h = Harness()
        h.verifier.register("q.u.o", .failure(VerificationFailure(code: .jwsVerificationFailed,
                                                                  reason: "bad \"x5c\"\n\\ chain")))
        let response = h.postReceipt("q.u.o")
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.json?["error"]?.stringValue, "JWS signature verification failed: bad \"x5c\"\n\\ chain")
    }

    /// StoreKit 1 receipt codes (AppReceipt's `VerificationError`s) have their own title and suggestion.
    func testReceiptVerificationCodesHaveTheirOwnTitleAndSuggestion() {
        let expected = [
            ("INVALID_RECEIPT_FORMAT", "Invalid receipt format: not a PKCS#7 SignedData receipt", "appStoreReceiptURL"),
            ("RECEIPT_VERIFICATION_FAILED", "Receipt verification failed: not a PKCS#7 SignedData receipt", "Apple Inc. Root"),
        ]
        for (code, error, suggestionFragment) in expected {
            let h = Harness()
            h.verifier.register("r.e.c", .failure(VerificationFailure(code: .init(rawValue: code), reason: "not a PKCS#7 SignedData receipt", step: "format")))
            let response = h.postReceipt("r.e.c")
            XCTAssertEqual(response.status, 400)
            XCTAssertEqual(response.json?["code"]?.stringValue, code)
            XCTAssertEqual(response.json?["error"]?.stringValue, error)
            XCTAssertTrue(response.json?["suggestion"]?.stringValue?.contains(suggestionFragment) == true, code)
            XCTAssertEqual(response.json?["details"]?[0]?["step"]?.stringValue, "format")
        }
    }
}

/// Maps one error through the API's single mapping, via a route whose store throws it.
func mappedResponse(_ error: DomainError) -> Response {
    let h = Harness()
    h.register("a.b.c", facts())
    let thrower = ThrowingPurchases(error: error)
    var router = Router()
    Routes.register(on: &router, APIDependencies(
        projects: h.projects, purchases: thrower, verifier: h.verifier, hasher: FakeHasher(), adminToken: nil,
        now: { Harness.now }, log: { _ in }))
    h.router = router
    return h.postReceipt("a.b.c")
}

struct ThrowingPurchases: PurchaseStore {
    let error: DomainError
    func recordTransaction(
        _ transaction: TransactionFacts, userId: String?, deviceId: String?, project: Project, now: Date
    ) throws -> RecordedTransaction { throw error }
    func ownedPurchases(userId: String, project: Project) throws -> [OwnedPurchase] { throw error }
}
