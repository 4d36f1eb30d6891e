import Foundation
import JSON
import TestSupport
import XCTest

/// Issue 14's "done when": a receipt posted as a StoreKit 1 SDK posts it grants the right entitlements, with no call
/// to Apple. The real receipts of Tests/Fixtures/apple/test-vectors expired long ago, so these receipts are SYNTHETIC
/// (`TestReceipt`): payloads built at test time with dates relative to now, signed as PKCS#7 by the test PKI (whose
/// leaf and intermediate carry Apple's marker OIDs) and trusted through `BOUNCER_ROOT_CERTIFICATES`.
///
/// "No call to Apple" is observed, not assumed: the server's App Store Server API URLs point at a `FakeAppleServer`
/// and the project has App Store credentials, so a call would be possible; the fake must see no request.
final class AppReceiptActiveE2ETests: AppleConnectedTestCase {
    /// One fake Apple and one server for the class, trusting the test PKI's receipts.
    override class func connect() throws -> AppleConnectedBouncer {
        try AppleConnectedBouncer(label: "receipt_active", overrides: ["BOUNCER_ROOT_CERTIFICATES": TestPKI.root])
    }

    /// Nothing any test of this class did reached Apple.
    override func tearDownWithError() throws {
        let requests = try apple.requests
        XCTAssertEqual(requests.map { "\($0.method) \($0.path)" }, [], "a receipt must be verified with no call to Apple")
        try super.tearDownWithError()
    }

    static let monthly = "com.e2e.sk1.pro.monthly", lifetime = "com.e2e.sk1.lifetime", gems = "com.e2e.sk1.gems.pack"

    /// A project allowing Sandbox, with the three products mapped and App Store credentials stored (so nothing but
    /// the design keeps the server from asking Apple).
    private func tenant() throws -> Tenant {
        let api = try api
        let tenant = try api.createProject(extra: [("environments", ["Sandbox"])])
        try api.mapProduct(tenant, Self.monthly, ["pro"])
        try api.mapProduct(tenant, Self.lifetime, ["lifetime"])
        try api.mapProduct(tenant, Self.gems, ["gems"])
        let key = try FakeAppleServer.Key.generate(keyId: "RECEIPT001")
        let body: JSONValue = ["issuer_id": .string(key.issuerId), "key_id": .string(key.keyId),
                               "private_key": .string(key.privateKeyPEM)]
        let r = try api.client.send("PUT", "/v1/admin/projects/\(tenant.id)/app-store-credentials", json: body, headers: E2E.admin)
        XCTAssertEqual(r.status, 200, r.description)
        return tenant
    }

    /// The four records of one customer's receipt, dates in whole seconds relative to `now`.
    struct Records {
        let now = TestReceipt.wholeSeconds(Date())
        /// The subscription's first month, over yesterday.
        let firstPeriod: TestReceipt.InApp
        /// Its renewal, active for 30 more days.
        let renewal: TestReceipt.InApp
        /// A non-consumable, active without end.
        let lifetime: TestReceipt.InApp
        /// A non-consumable refunded two days ago.
        let refunded: TestReceipt.InApp

        init() {
            let day: TimeInterval = 86_400
            let original = E2E.uniqueId()
            var first = TestReceipt.InApp(productId: AppReceiptActiveE2ETests.monthly, transactionId: original,
                                          purchaseDate: now - 31 * day, expiresDate: now - day)
            first.webOrderLineItemId = 2_000_000_111
            first.isTrialPeriod = true
            firstPeriod = first
            var second = TestReceipt.InApp(productId: AppReceiptActiveE2ETests.monthly, transactionId: E2E.uniqueId(),
                                           originalTransactionId: original, purchaseDate: now - day,
                                           expiresDate: now + 30 * day)
            second.originalPurchaseDate = now - 31 * day
            second.webOrderLineItemId = 2_000_000_112
            second.isTrialPeriod = false
            renewal = second
            lifetime = TestReceipt.InApp(productId: AppReceiptActiveE2ETests.lifetime, transactionId: E2E.uniqueId(),
                                         purchaseDate: now - 10 * day)
            refunded = TestReceipt.InApp(productId: AppReceiptActiveE2ETests.gems, transactionId: E2E.uniqueId(),
                                         purchaseDate: now - 5 * day, cancellationDate: now - 2 * day)
        }

        var all: [TestReceipt.InApp] { [firstPeriod, renewal, lifetime, refunded] }

        /// Created a minute ago: a JWS signed since is newer.
        func receipt(_ bundleId: String) -> TestReceipt {
            TestReceipt(bundleId: bundleId, creationDate: now - 60, inApp: all)
        }
    }

    static func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    static func iso(_ date: Date?) -> JSONValue { date.map { .string(E2E.iso(ms($0))) } ?? .null }

    /// One entry of the 201 body's `transactions`.
    static func entry(_ r: TestReceipt.InApp, _ status: String) -> JSONValue {
        ["transaction_id": .string(r.transactionId), "original_transaction_id": .string(r.originalTransactionId ?? r.transactionId),
         "product_id": .string(r.productId), "purchase_date": iso(r.purchaseDate), "expires_date": iso(r.expiresDate),
         "status": .string(status)]
    }

    private func post(_ tenant: Tenant, _ receiptData: String, user: String? = nil) throws -> HTTPResponse {
        var pairs: [(String, JSONValue)] = [("receipt_data", .string(receiptData))]
        if let user { pairs.append(("user_id", .string(user))) }
        return try api.client.post("/v1/receipts/\(tenant.publicKey)", json: .object(JSONObject(pairs)))
    }

    /// `transaction_id/source/type/revoked?` of every transaction row of the project, by transaction id.
    private func transactionRows(_ tenant: Tenant) throws -> [String] {
        try db.query("""
            SELECT transaction_id, source, type, revocation_date IS NOT NULL AS revoked FROM transactions
            WHERE project_id = \(tenant.id)::uuid ORDER BY transaction_id
            """).map {
                "\(try $0.decode("transaction_id", as: String.self))/\(try $0.decode("source", as: String.self))/"
                    + "\(try $0.decode("type", as: String.self))/\(try $0.decode("revoked", as: Bool.self) ? "revoked" : "-")"
            }
    }

    // MARK: - Tests

    func testSyntheticReceiptGrantsTheActiveRecordsEntitlementsWithNoCallToApple() throws {
        let tenant = try tenant()
        let records = Records()
        let receipt = records.receipt(tenant.bundleId)
        let user = "sk1-\(E2E.uniqueId())"

        let expected: JSONValue = [
            "valid": true,
            // The most recent purchase: the renewal (purchased yesterday).
            "transaction_id": .string(records.renewal.transactionId),
            "original_transaction_id": .string(records.firstPeriod.transactionId),
            "product_id": .string(Self.monthly),
            // The subscription and the non-consumable; not the refunded pack, nor anything of the expired period.
            "entitlements": ["lifetime", "pro"],
            "expires_date": Self.iso(records.renewal.expiresDate),
            "status": "active",
            "environment": "Sandbox",
            "transactions": [
                Self.entry(records.firstPeriod, "expired"), Self.entry(records.renewal, "active"),
                Self.entry(records.lifetime, "active"), Self.entry(records.refunded, "revoked"),
            ],
        ]
        let r = try post(tenant, try receipt.base64(), user: user)
        let log = try server.stderr
        XCTAssertEqual(r.status, 201, r.description + "\n" + log)
        XCTAssertEqual(try r.json(), expected)

        // One row per record, source `receipt`, the type inferred from the expires date, the refund as revocation.
        let want = [
            "\(records.firstPeriod.transactionId)/receipt/Auto-Renewable Subscription/-",
            "\(records.renewal.transactionId)/receipt/Auto-Renewable Subscription/-",
            "\(records.lifetime.transactionId)/receipt/Non-Consumable/-",
            "\(records.refunded.transactionId)/receipt/Non-Consumable/revoked",
        ].sorted()
        XCTAssertEqual(try transactionRows(tenant), want)
        let purchases = try db.query("""
            SELECT original_transaction_id, latest_transaction_id, expires_date, latest_signed_date FROM purchases
            WHERE project_id = \(tenant.id)::uuid ORDER BY original_transaction_id
            """).map { row -> String in
                let expires = try row.decode("expires_date", as: Date?.self).map { Self.ms($0) }
                return "\(try row.decode("original_transaction_id", as: String.self))→"
                    + "\(try row.decode("latest_transaction_id", as: String.self))@\(expires.map(String.init) ?? "-")"
                    + " signed \(Self.ms(try row.decode("latest_signed_date", as: Date.self)))"
            }
        let signed = Self.ms(receipt.creationDate)
        XCTAssertEqual(purchases, [
            "\(records.firstPeriod.transactionId)→\(records.renewal.transactionId)@\(Self.ms(records.renewal.expiresDate ?? .distantPast)) signed \(signed)",
            "\(records.lifetime.transactionId)→\(records.lifetime.transactionId)@- signed \(signed)",
            "\(records.refunded.transactionId)→\(records.refunded.transactionId)@- signed \(signed)",
        ].sorted())
        let bound = try db.query("""
            SELECT original_transaction_id FROM subscriptions
            WHERE project_id = \(tenant.id)::uuid AND user_id = \(user) AND revoked_at IS NULL ORDER BY 1
            """).map { try $0.decode("original_transaction_id", as: String.self) }
        XCTAssertEqual(bound, [records.firstPeriod.transactionId, records.lifetime.transactionId,
                               records.refunded.transactionId].sorted())

        // The user's entitlements read back: active now, from the receipt alone.
        let read = try api.user(tenant.publicKey, user)
        XCTAssertEqual(read.status, 200, read.description)
        let body = try read.json()
        XCTAssertEqual(body["user_id"], .string(user))
        XCTAssertEqual(body["status"], "active")
        XCTAssertEqual(body["entitlements"], ["lifetime", "pro"])
        let subscriptions = try XCTUnwrap(body["subscriptions"]?.arrayValue)
        let byOriginal = Dictionary(uniqueKeysWithValues: subscriptions.compactMap { s in
            s["original_transaction_id"]?.stringValue.map { ($0, s) }
        })
        XCTAssertEqual(byOriginal.count, 3, body.serializedString())
        let sub = try XCTUnwrap(byOriginal[records.firstPeriod.transactionId])
        XCTAssertEqual(sub["product_id"], .string(Self.monthly))
        XCTAssertEqual(sub["status"], "active")
        XCTAssertEqual(sub["current_period_end"], Self.iso(records.renewal.expiresDate))
        XCTAssertEqual(try XCTUnwrap(byOriginal[records.lifetime.transactionId])["status"], "active")
        XCTAssertEqual(try XCTUnwrap(byOriginal[records.lifetime.transactionId])["current_period_end"], .null)
        XCTAssertEqual(try XCTUnwrap(byOriginal[records.refunded.transactionId])["status"], "revoked")

        // Posted again (the app sends its receipt at every launch): the same answer, no new rows.
        let again = try post(tenant, try receipt.base64(), user: user)
        XCTAssertEqual(again.status, 201, again.description)
        XCTAssertEqual(try again.json(), expected)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 4)
        XCTAssertEqual(try db.count("purchases", project: tenant.id), 3)
    }

    func testANewerJWSForTheSameTransactionWinsOverTheReceipt() throws {
        let tenant = try tenant()
        let records = Records()
        let receipt = try records.receipt(tenant.bundleId).base64()
        let user = "sk1-\(E2E.uniqueId())"
        let first = try post(tenant, receipt, user: user)
        XCTAssertEqual(first.status, 201, first.description)
        XCTAssertEqual(try first.json()["entitlements"], ["lifetime", "pro"])

        // StoreKit 2 later signs the renewal again (signedDate now, after the receipt's creation): refunded.
        var jws = TransactionPayload(bundleId: tenant.bundleId, originalTransactionId: records.firstPeriod.transactionId)
        jws.transactionId = records.renewal.transactionId
        jws.productId = Self.monthly
        jws.purchaseDate = Self.ms(records.renewal.purchaseDate)
        jws.originalPurchaseDate = Self.ms(records.firstPeriod.purchaseDate)
        jws.expiresDate = records.renewal.expiresDate.map(Self.ms)
        jws.signedDate = E2E.ms(-1)
        jws.revocationDate = E2E.ms(-30)
        jws.revocationReason = 0
        let revoked = try api.postReceipt(tenant.publicKey, try jws.mint(), user: user)
        XCTAssertEqual(revoked.status, 201, revoked.description)
        XCTAssertEqual(try revoked.json(), expectedReceipt(jws, entitlements: [], status: "revoked"))
        XCTAssertEqual(try api.user(tenant.publicKey, user).json()["entitlements"], ["lifetime"])

        // The receipt again: older facts about that transaction do not undo the refund; its other records stand.
        let again = try post(tenant, receipt, user: user)
        XCTAssertEqual(again.status, 201, again.description)
        let body = try again.json()
        XCTAssertEqual(body["transaction_id"], .string(records.renewal.transactionId))
        XCTAssertEqual(body["status"], "revoked")
        XCTAssertEqual(body["entitlements"], ["lifetime"])
        // Each entry's status is its stored transaction's: the renewal's refund (signed later) wins over the receipt's
        // record of it; the other entries, of which nothing newer is known, keep the receipt's facts.
        XCTAssertEqual(body["transactions"], [
            Self.entry(records.firstPeriod, "expired"), Self.entry(records.renewal, "revoked"),
            Self.entry(records.lifetime, "active"), Self.entry(records.refunded, "revoked"),
        ])
        XCTAssertEqual(try api.user(tenant.publicKey, user).json()["entitlements"], ["lifetime"])

        let row = try XCTUnwrap(db.query("""
            SELECT source, revocation_date, signed_date FROM transactions
            WHERE project_id = \(tenant.id)::uuid AND transaction_id = \(records.renewal.transactionId)
            """).first)
        XCTAssertEqual(try row.decode("source", as: String.self), "transaction")
        XCTAssertEqual(try row.decode("revocation_date", as: Date?.self).map(Self.ms), jws.revocationDate)
        XCTAssertEqual(Self.ms(try row.decode("signed_date", as: Date.self)), jws.signedDate)
        let purchase = try XCTUnwrap(db.query("""
            SELECT latest_transaction_id, revocation_date, latest_signed_date FROM purchases
            WHERE project_id = \(tenant.id)::uuid AND original_transaction_id = \(records.firstPeriod.transactionId)
            """).first)
        XCTAssertEqual(try purchase.decode("latest_transaction_id", as: String.self), records.renewal.transactionId)
        XCTAssertEqual(try purchase.decode("revocation_date", as: Date?.self).map(Self.ms), jws.revocationDate)
        XCTAssertEqual(Self.ms(try purchase.decode("latest_signed_date", as: Date.self)), jws.signedDate)
        XCTAssertEqual(try db.count("transactions", project: tenant.id), 4)
    }

    func testTamperedOrForeignSignedSyntheticReceiptsWriteNothing() throws {
        let tenant = try tenant()
        let records = Records()
        let receipt = records.receipt(tenant.bundleId)
        var der = try receipt.signedDER()
        // One bit flipped inside the signed content (the renewal's transaction id): the signature no longer verifies.
        let needle = Array(records.renewal.transactionId.utf8)
        let at = try XCTUnwrap((0...(der.count - needle.count)).first { Array(der[$0..<($0 + needle.count)]) == needle })
        der[at + 1] ^= 0x01
        let cases: [(String, String, String)] = [
            ("tampered", Data(der).base64EncodedString(), "signature"),
            // Signed by the same key under a leaf without Apple's receipt-signing marker OID.
            ("wrong leaf OID", try receipt.base64(signer: TestPKI.variant("leaf-oid-6.11.2.pem")), "chain"),
            // A well-formed chain of Apple's shape that does not end at the configured root.
            ("untrusted chain", try receipt.base64(signer: TestPKI.variant("untrusted-leaf.pem"),
                                                   certificates: [TestPKI.variant("untrusted-intermediate.pem")]), "chain"),
        ]
        for (name, data, step) in cases {
            let r = try post(tenant, data, user: "tamper-user")
            assertError(r, 400, "RECEIPT_VERIFICATION_FAILED")
            let json = try r.json()
            XCTAssertEqual(json["suggestion"]?.stringValue?.isEmpty, false, name)
            XCTAssertEqual(json["details"]?[0]?["path"], ["receipt_data"], name)
            XCTAssertEqual(json["details"]?[0]?["step"], .string(step), name)
        }
        for table in ["transactions", "purchases", "subscriptions"] {
            XCTAssertEqual(try db.count(table, project: tenant.id), 0, table)
        }
        XCTAssertEqual(try api.user(tenant.publicKey, "tamper-user").json(),
                       ["user_id": "tamper-user", "status": "none", "entitlements": [], "subscriptions": []])

        // The untouched receipt is accepted: the failures above are the tampering, not the builder.
        XCTAssertEqual(try post(tenant, try receipt.base64(), user: "tamper-user").status, 201)
    }
}
