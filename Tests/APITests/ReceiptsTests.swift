import Domain
import Foundation
import HTTPCore
import XCTest

final class ReceiptsTests: XCTestCase {
    let receiptSuggestion = "Request body requires signed_transaction_info (string). Optional: user_id, device_id."

    func testActiveSubscriptionAnswersTheIssueExampleExactly() {
        let h = Harness()
        h.register("a.b.c", facts())
        let response = h.postReceipt("a.b.c", userId: "user_123")
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.headers["Content-Type"], "application/json")
        XCTAssertEqual(response.text, #"{"valid":true,"transaction_id":"1000000123456789","#
            + #""original_transaction_id":"1000000123456000","product_id":"com.myapp.pro.yearly","#
            + #""entitlements":["pro"],"expires_date":"2027-03-20T00:00:00.000Z","status":"active","#
            + #""environment":"Production"}"#)
    }

    func testSamePostTwiceGivesTheSameAnswerAndOneRow() {
        let h = Harness()
        h.register("a.b.c", facts())
        let first = h.postReceipt("a.b.c", userId: "user_123")
        let second = h.postReceipt("a.b.c", userId: "user_123")
        XCTAssertEqual(first.status, 201)
        XCTAssertEqual(second.status, 201)
        XCTAssertEqual(first.body, second.body)
        XCTAssertEqual(h.purchases.transactionCount, 1)
    }

    func testExpiredTransactionGrantsNothing() {
        let h = Harness()
        h.register("e.x.p", facts(expiresDate: Date(timeIntervalSince1970: 1_777_593_600)))  // 2026-05-01
        let response = h.postReceipt("e.x.p")
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.json?["status"]?.stringValue, "expired")
        XCTAssertEqual(response.json?["entitlements"], .array([]))
        XCTAssertEqual(response.json?["expires_date"]?.stringValue, "2026-05-01T00:00:00.000Z")
    }

    func testExpiryIsExclusiveAtTheInstant() {
        let h = Harness()
        h.register("n.o.w", facts(expiresDate: Harness.now))
        XCTAssertEqual(h.postReceipt("n.o.w").json?["status"]?.stringValue, "expired")
    }

    func testRevokedTransactionGrantsNothing() {
        let h = Harness()
        h.register("r.e.v", facts(revocationDate: Date(timeIntervalSince1970: 1_777_593_600)))
        let response = h.postReceipt("r.e.v", userId: "u")
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(response.json?["status"]?.stringValue, "revoked")
        XCTAssertEqual(response.json?["entitlements"], .array([]))
    }

    func testLifetimePurchaseHasNullExpiryAndIsActive() {
        let h = Harness()
        h.register("l.i.f", facts(transactionId: "77", originalTransactionId: "77", productId: "com.myapp.lifetime",
                                  type: .nonConsumable, expiresDate: nil))
        let response = h.postReceipt("l.i.f")
        XCTAssertEqual(response.text, #"{"valid":true,"transaction_id":"77","original_transaction_id":"77","#
            + #""product_id":"com.myapp.lifetime","entitlements":["extras","pro"],"expires_date":null,"#
            + #""status":"active","environment":"Production"}"#)
    }

    func testUnmappedProductIsActiveWithNoEntitlements() {
        let h = Harness()
        h.register("u.n.m", facts(productId: "com.myapp.unknown"))
        let response = h.postReceipt("u.n.m")
        XCTAssertEqual(response.json?["status"]?.stringValue, "active")
        XCTAssertEqual(response.json?["entitlements"], .array([]))
    }

    func testOlderRenewalPostedLateAnswersForItselfAndDoesNotMoveThePeriodBack() {
        let h = Harness()
        let newer = facts(transactionId: "2", purchaseDate: Date(timeIntervalSince1970: 1_777_593_600),
                          expiresDate: Date(timeIntervalSince1970: 1_805_500_800),
                          signedDate: Date(timeIntervalSince1970: 1_777_593_600))
        let older = facts(transactionId: "1", purchaseDate: Date(timeIntervalSince1970: 1_774_051_200),
                          expiresDate: Date(timeIntervalSince1970: 1_777_593_600))
        h.register("n.e.w", newer)
        h.register("o.l.d", older)
        XCTAssertEqual(h.postReceipt("n.e.w", userId: "u").status, 201)
        let late = h.postReceipt("o.l.d", userId: "u")
        XCTAssertEqual(late.status, 201)
        XCTAssertEqual(late.json?["transaction_id"]?.stringValue, "1")
        XCTAssertEqual(late.json?["status"]?.stringValue, "expired")
        XCTAssertEqual(late.json?["expires_date"]?.stringValue, "2026-05-01T00:00:00.000Z")
        let read = h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/u")
        XCTAssertEqual(read.json?["subscriptions"]?[0]?["current_period_end"]?.stringValue, "2027-03-20T00:00:00.000Z")
        XCTAssertEqual(read.json?["status"]?.stringValue, "active")
    }

    func testLatestTransactionUsesThePurchaseStateSoAStoredRevocationApplies() {
        // The same transaction re-signed later with a revocation (a refund) supersedes the earlier statement.
        let h = Harness()
        h.register("a.b.c", facts())
        h.register("r.e.f", facts(revocationDate: Date(timeIntervalSince1970: 1_777_593_600),
                                  signedDate: Date(timeIntervalSince1970: 1_777_593_600)))
        XCTAssertEqual(h.postReceipt("r.e.f").json?["status"]?.stringValue, "revoked")
        // Posting the older, unrevoked statement again: the purchase stays revoked, and so does the answer.
        XCTAssertEqual(h.postReceipt("a.b.c").json?["status"]?.stringValue, "revoked")
    }

    // MARK: - Validation

    func testMissingSignedTransactionInfoIsTheIssueExample() {
        let h = Harness()
        let response = h.postJSON("/v1/receipts/\(Harness.publicKey)", #"{"user_id":"u"}"#)
        assertError(response, status: 400, code: "VALIDATION_ERROR", error: "Validation error",
                    suggestion: "Request body requires signed_transaction_info (string). Optional: user_id, device_id.",
                    details: [["path": ["signed_transaction_info"], "message": "Required"]])
    }

    func testWrongTypesAreAllReported() {
        let h = Harness()
        let response = h.postJSON("/v1/receipts/\(Harness.publicKey)",
                                  #"{"signed_transaction_info":12,"user_id":true,"device_id":"","extra":1}"#)
        assertError(response, status: 400, code: "VALIDATION_ERROR", error: "Validation error",
                    suggestion: receiptSuggestion, details: [
                        ["path": ["signed_transaction_info"], "message": "Expected string"],
                        ["path": ["user_id"], "message": "Expected string"],
                        ["path": ["device_id"], "message": "String must contain at least 1 character(s)"],
                    ])
    }

    func testNullIsNotAString() {
        let h = Harness()
        let response = h.postJSON("/v1/receipts/\(Harness.publicKey)", #"{"signed_transaction_info":null}"#)
        assertError(response, status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["signed_transaction_info"], "message": "Expected string"]])
    }

    func testUserIdLongerThan256CharactersIsRejected() {
        let h = Harness()
        h.register("a.b.c", facts())
        let ok = String(repeating: "é", count: 256)  // 512 bytes, 256 characters
        XCTAssertEqual(h.postReceipt("a.b.c", userId: ok).status, 201)
        let response = h.postReceipt("a.b.c", userId: ok + "x")
        assertError(response, status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["user_id"], "message": "String must contain at most 256 character(s)"]])
    }

    func testNULInAStoredStringIsAValidationErrorNotAStorageFailure() {
        let h = Harness()
        let response = h.postJSON("/v1/receipts/\(Harness.publicKey)",
                                  #"{"signed_transaction_info":"a.b.c","user_id":"u\u0000x"}"#)
        assertError(response, status: 400, code: "VALIDATION_ERROR",
                    details: [["path": ["user_id"], "message": "String must not contain NUL characters"]])
    }

    func testBodyMustBeAnObject() {
        let h = Harness()
        assertError(h.postJSON("/v1/receipts/\(Harness.publicKey)", #"["a.b.c"]"#), status: 400,
                    code: "VALIDATION_ERROR", details: [["path": [], "message": "Expected object"]])
    }

    func testInvalidJSONNamesTheRuleAndOffsetOnly() {
        let h = Harness()
        let response = h.postJSON("/v1/receipts/\(Harness.publicKey)", #"{"signed_transaction_info": 'x'}"#)
        assertError(response, status: 400, code: "INVALID_JSON",
                    error: "Invalid JSON: unexpected character at byte 28", suggestion: receiptSuggestion)
        assertError(h.postJSON("/v1/receipts/\(Harness.publicKey)", ""), status: 400, code: "INVALID_JSON",
                    error: "Invalid JSON: unexpected end of input at byte 0")
        assertError(h.postJSON("/v1/receipts/\(Harness.publicKey)", #"{"a":1,"a":2}"#), status: 400,
                    code: "INVALID_JSON", error: "Invalid JSON: duplicate object key at byte 7")
    }

    func testContentTypeRules() {
        let h = Harness()
        h.register("a.b.c", facts())
        let body = #"{"signed_transaction_info":"a.b.c"}"#
        let path = "/v1/receipts/\(Harness.publicKey)"
        for accepted in ["application/json", "application/json; charset=utf-8", "Application/JSON",
                         "application/json;charset=UTF-8", " application/json "] {
            XCTAssertEqual(h.send(.post, path, headers: [("Content-Type", accepted)], body: body).status, 201, accepted)
        }
        // No Content-Type at all: a JSON body is read as JSON; a structured +json type is JSON too.
        XCTAssertEqual(h.send(.post, path, body: body).status, 201, "no Content-Type, JSON body")
        XCTAssertEqual(h.send(.post, path, headers: [("Content-Type", "application/vnd.receipt+json")], body: body).status,
                       201)
        assertError(h.send(.post, path, body: "signed_transaction_info=a.b.c"), status: 400, code: "INVALID_JSON",
                    suggestion: receiptSuggestion)
        // What `curl -d` sends: 415 telling the user to send Content-Type: application/json.
        assertError(h.send(.post, path, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body),
                    status: 415, code: "UNSUPPORTED_MEDIA_TYPE",
                    error: "Content-Type application/x-www-form-urlencoded is not supported; the body must be JSON.",
                    suggestion: "Send the JSON body with Content-Type: application/json (curl -d sends "
                        + "application/x-www-form-urlencoded: add -H 'Content-Type: application/json').")
        for rejected in ["text/plain", "text/plain; charset=utf-8", "application/jsonx", "text/json", "multipart/form-data", ""] {
            assertError(h.send(.post, path, headers: [("Content-Type", rejected)], body: body), status: 415,
                        code: "UNSUPPORTED_MEDIA_TYPE", error: "Unsupported Content-Type; the body must be JSON.",
                        suggestion: "Send the JSON body with Content-Type: application/json.")
        }
        XCTAssertEqual(h.purchases.transactionCount, 1, "only the accepted posts stored the (same) transaction")
    }

    func testJWSWithoutThreePartsIsInvalidFormatWithTheIssueStrings() {
        let h = Harness()
        for jws in ["abc", "a.b", "a.b.c.d", "a..c", ".b.c", "a.b."] {
            assertError(h.postReceipt(jws), status: 400, code: "INVALID_JWS_FORMAT",
                        error: "Invalid JWS format: expected 3 dot-separated parts",
                        suggestion: "Provide a valid JWS string (3 dot-separated base64url parts) from StoreKit 2 "
                            + "Transaction.jsonRepresentation.")
        }
    }

    // MARK: - Verification failures

    func testVerificationFailuresKeepTheVerifierCodeAndReason() {
        let h = Harness()
        let cases: [(String, String, String)] = [
            ("JWS_VERIFICATION_FAILED", "signature does not verify",
             "JWS signature verification failed: signature does not verify"),
            ("BUNDLE_ID_MISMATCH", "bundleId com.other.app is not com.example.app",
             "Bundle ID mismatch: bundleId com.other.app is not com.example.app"),
            ("JWS_UNSUPPORTED_ALGORITHM", "alg HS256", "Unsupported JWS algorithm: alg HS256"),
            ("APP_APPLE_ID_MISMATCH", "appAppleId 1 is not 2", "App Apple ID mismatch: appAppleId 1 is not 2"),
            ("INVALID_JWS_FORMAT", "header is not base64url", "Invalid JWS format: header is not base64url"),
            ("SOMETHING_NEW", "a future rule", "Signed data rejected: a future rule"),
        ]
        for (i, (code, reason, message)) in cases.enumerated() {
            let jws = "v\(i).b.c"
            h.verifier.register(jws, .failure(VerificationFailure(code: .init(rawValue: code), reason: reason)))
            assertError(h.postReceipt(jws), status: 400, code: code, error: message)
        }
        XCTAssertEqual(h.purchases.transactionCount, 0, "nothing unverified is stored")
    }

    /// The published contract's texts, word for word.
    func testJWSVerificationFailedHasTheContractsExactErrorPrefixAndSuggestion() {
        let h = Harness()
        h.verifier.register("f.o.o", .failure(VerificationFailure(
            code: .jwsVerificationFailed, reason: "certificate chain does not lead to a trusted root", step: "chain")))
        assertError(h.postReceipt("f.o.o"), status: 400, code: "JWS_VERIFICATION_FAILED",
                    error: "JWS signature verification failed: certificate chain does not lead to a trusted root",
                    suggestion: "The JWS signature could not be verified against Apple's certificate chain. "
                        + "Ensure you are sending a genuine StoreKit 2 signed transaction.",
                    details: [["path": ["signed_transaction_info"],
                               "message": "certificate chain does not lead to a trusted root", "step": "chain"]])
    }

    /// Every verifier code carries `details` naming the step, in the validation details' shape.
    func testVerificationFailuresNameTheFailingStepInDetails() {
        let h = Harness()
        let cases: [(code: String, step: String)] = [
            ("INVALID_JWS_FORMAT", "format"), ("JWS_UNSUPPORTED_ALGORITHM", "header"), ("JWS_VERIFICATION_FAILED", "chain"),
            ("JWS_VERIFICATION_FAILED", "signature"), ("BUNDLE_ID_MISMATCH", "claims"), ("ENVIRONMENT_NOT_ALLOWED", "claims"),
            ("APP_APPLE_ID_MISMATCH", "claims"),
        ]
        for (i, c) in cases.enumerated() {
            let jws = "s\(i).t.u"
            h.verifier.register(jws, .failure(VerificationFailure(code: .init(rawValue: c.code), reason: "reason \(i)", step: c.step)))
            assertError(h.postReceipt(jws), status: 400, code: c.code,
                        details: [["path": ["signed_transaction_info"], "message": "reason \(i)", "step": c.step]])
        }
        // The API's own shape check is the format step too.
        assertError(h.postReceipt("only.two"), status: 400, code: "INVALID_JWS_FORMAT",
                    details: [["path": ["signed_transaction_info"], "message": "expected 3 dot-separated parts",
                               "step": "format"]])
    }

    func testForeignEnvironmentIsRejectedBeforeAnythingIsStored() {
        let h = Harness()
        h.register("x.c.d", facts(environment: .xcode))
        assertError(h.postReceipt("x.c.d"), status: 400, code: "ENVIRONMENT_NOT_ALLOWED",
                    error: "Environment not allowed: Sandbox is not enabled for this project")
        XCTAssertEqual(h.purchases.transactionCount, 0)
    }

    func testRetryableVerificationFailureIs503NotAVerdict() {
        let h = Harness()
        h.verifier.register("t.m.p", .failure(VerificationFailure(code: .jwsVerificationFailed,
                                                                  reason: "OCSP unreachable", isRetryable: true)))
        let response = h.postReceipt("t.m.p")
        assertError(response, status: 503, code: "SERVICE_UNAVAILABLE")
        XCTAssertEqual(response.headers["Retry-After"], "1")
    }

    // MARK: - Auth and ownership

    func testPublicKeyRules() {
        let h = Harness()
        h.register("a.b.c", facts())
        let suggestion = "Use a valid public key (pk_...) in the URL path: POST /v1/receipts/:public_key."
        for key in ["nope", "pk_", "pk_0123456789ABCDEF0123456789ABCDEF", "sk_0123456789abcdef0123456789abcdef",
                    Harness.otherPublicKey] {
            assertError(h.postReceipt("a.b.c", key: key), status: 401, code: "AUTH_INVALID_PUBLIC_KEY",
                        error: "Invalid public key.", suggestion: suggestion)
        }
    }

    func testBadKeyIsRejectedBeforeTheBodyIsRead() {
        let h = Harness()
        assertError(h.postJSON("/v1/receipts/nope", "not json"), status: 401, code: "AUTH_INVALID_PUBLIC_KEY")
    }

    func testBlockPolicyAnswers409AndKeepsTheFirstOwner() {
        let h = Harness(policy: .block)
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "alice").status, 201)
        assertError(h.postReceipt("a.b.c", userId: "bob"), status: 409, code: "PURCHASE_OWNED_BY_ANOTHER_USER",
                    error: "This purchase belongs to another user.")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/alice").json?["status"]?.stringValue, "active")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/bob").json?["status"]?.stringValue, "none")
    }

    func testTransferPolicyMovesThePurchase() {
        let h = Harness(policy: .transfer)
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "alice").status, 201)
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "bob").status, 201)
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/alice").json?["status"]?.stringValue, "none")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/bob").json?["status"]?.stringValue, "active")
    }

    func testShareKeepsBoth() {
        let h = Harness(policy: .share)
        h.register("a.b.c", facts())
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "alice").status, 201)
        XCTAssertEqual(h.postReceipt("a.b.c", userId: "bob").status, 201)
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/alice").json?["status"]?.stringValue, "active")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/bob").json?["status"]?.stringValue, "active")
    }
}
