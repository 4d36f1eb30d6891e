import Domain
import Foundation
import HTTPCore
import XCTest

/// `app_account_token_policy`: whether Apple's signed appAccountToken decides who a posted purchase binds to.
final class AppAccountTokenTests: XCTestCase {
    static let token = UUID(uuidString: "6F1C2D3E-4A5B-4C6D-8E7F-8091A2B3C4D5") ?? UUID()
    static let tokenUser = "6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5"

    func owners(_ h: Harness) -> [String] {
        h.purchases.state.withLock { $0.owners.values.flatMap { $0 } }
    }

    /// Either spelling matches and the user is stored in one, Apple's lowercase: two spellings are one holder.
    func testRequireMatchAcceptsTheTokenInAnyCase() {
        let h = Harness(tokenPolicy: .requireMatch)
        h.register("t.o.k", facts(appAccountToken: Self.token))
        let response = h.postReceipt("t.o.k", userId: Self.tokenUser.uppercased())
        XCTAssertEqual(response.status, 201, response.text)
        XCTAssertEqual(response.json?["user_id"]?.stringValue, Self.tokenUser)
        XCTAssertEqual(response.json?["user_id_source"]?.stringValue, "request")
        XCTAssertEqual(owners(h), [Self.tokenUser])
        XCTAssertEqual(h.postReceipt("t.o.k", userId: Self.tokenUser).status, 201)
        XCTAssertEqual(owners(h), [Self.tokenUser])
    }

    func testRequireMatchRefusesAnotherUserAndWritesNothing() {
        let h = Harness(tokenPolicy: .requireMatch)
        h.register("t.o.k", facts(appAccountToken: Self.token))
        for user in ["attacker", "00000000-0000-4000-8000-000000000000"] {
            assertError(h.postReceipt("t.o.k", userId: user), status: 403, code: "APP_ACCOUNT_TOKEN_MISMATCH",
                        error: "The transaction's appAccountToken does not match the posted user_id.",
                        suggestion: "This project's app_account_token_policy is require_match: the transaction's "
                            + "appAccountToken must equal the posted user_id. At purchase, pass the signed-in user's "
                            + "UUID with Product.PurchaseOption.appAccountToken(uuid) in StoreKit 2, and post that "
                            + "same UUID as user_id.")
        }
        XCTAssertEqual(h.purchases.transactionCount, 0)
        XCTAssertEqual(owners(h), [])
        // Without a user_id nothing is bound, so nothing can be taken: accepted.
        let anonymous = h.postReceipt("t.o.k")
        XCTAssertEqual(anonymous.status, 201, anonymous.text)
        XCTAssertEqual(anonymous.json?["user_id"], .null)
        XCTAssertEqual(anonymous.json?["user_id_source"], .null)
    }

    func testPreferBindsToTheTokensUserWhateverWasPosted() {
        let h = Harness(tokenPolicy: .prefer)
        h.register("t.o.k", facts(appAccountToken: Self.token))
        let response = h.postReceipt("t.o.k", userId: "attacker")
        XCTAssertEqual(response.status, 201, response.text)
        XCTAssertEqual(response.json?["user_id"]?.stringValue, Self.tokenUser)
        XCTAssertEqual(response.json?["user_id_source"]?.stringValue, "app_account_token")
        XCTAssertEqual(owners(h), [Self.tokenUser])
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/attacker").json?["status"], "none")
        XCTAssertEqual(h.send(.get, "/v1/subscriptions/\(Harness.publicKey)/\(Self.tokenUser)").json?["status"], "active")
        // No user_id at all: the token still names the user.
        h.register("t.o.2", facts(transactionId: "2", originalTransactionId: "2", appAccountToken: Self.token))
        XCTAssertEqual(h.postReceipt("t.o.2").json?["user_id"]?.stringValue, Self.tokenUser)
    }

    func testTransactionsWithoutTokenAndIgnoreBehaveAsBefore() {
        for policy in AppAccountTokenPolicy.allCases {
            let h = Harness(tokenPolicy: policy)
            h.register("n.o.t", facts())
            let response = h.postReceipt("n.o.t", userId: "user_123")
            XCTAssertEqual(response.status, 201, "\(policy): \(response.text)")
            XCTAssertEqual(owners(h), ["user_123"], "\(policy)")
            if policy == .ignore {
                XCTAssertNil(response.json?["user_id"], "ignore keeps today's body")
            } else {
                XCTAssertEqual(response.json?["user_id_source"]?.stringValue, "request")
            }
        }
        // ignore: a token does not matter, whoever posts takes the purchase (today's behaviour).
        let h = Harness(tokenPolicy: .ignore)
        h.register("t.o.k", facts(appAccountToken: Self.token))
        XCTAssertEqual(h.postReceipt("t.o.k", userId: "someone").status, 201)
        XCTAssertEqual(owners(h), ["someone"])
    }

    func testPolicyIsAProjectSetting() {
        let h = Harness()
        let path = "/v1/admin/projects/00000000-0000-0000-0000-000000000900"
        let set = h.admin(.patch, path, body: #"{"app_account_token_policy":"prefer"}"#)
        XCTAssertEqual(set.status, 200, set.text)
        XCTAssertEqual(set.json?["app_account_token_policy"]?.stringValue, "prefer")
        XCTAssertEqual(h.admin(.get, path).json?["app_account_token_policy"]?.stringValue, "prefer")
        assertError(h.admin(.patch, path, body: #"{"app_account_token_policy":"always"}"#), status: 400,
                    code: "VALIDATION_ERROR",
                    details: [["path": ["app_account_token_policy"],
                               "message": "Invalid enum value. Expected 'ignore' | 'require_match' | 'prefer'"]])
    }
}
