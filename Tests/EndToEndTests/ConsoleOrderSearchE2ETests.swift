import Foundation
import JSON
import XCTest

/// The console's customer search takes an App Store order id (issue 25): headless Chromium against a real
/// `bouncer serve` wired to the fake Apple over TLS, which serves Look Up Order ID as Apple documents it.
final class ConsoleOrderSearchE2ETests: XCTestCase {
    func testOrderIdSearchShowsTheOrdersTransactionsAndUsersInHeadlessChromium() throws {
        let connected = try AppleConnectedBouncer(label: "console_orders")
        let server = try connected.server
        defer { server.stopAndAssertCleanExit() }
        let api = API(client: server.client)
        let (tenant, _) = try connected.createProject(
            api: api, products: [("com.e2e.pro.monthly", ["pro"]), ("com.e2e.lifetime", ["lifetime"])], keyId: "CONSOLE001")
        var held = TransactionPayload(bundleId: tenant.bundleId)
        held.environment = "Production"
        var lifetime = TransactionPayload(bundleId: tenant.bundleId)
        lifetime.environment = "Production"
        lifetime.productId = "com.e2e.lifetime"
        lifetime.type = "Non-Consumable"
        lifetime.expiresDate = nil
        let user = "order_\(E2E.uniqueId())"
        let posted = try api.postReceipt(tenant.publicKey, try held.mint(), user: user)
        XCTAssertEqual(posted.status, 201, posted.description)
        let orderId = "MK" + String(UInt64.random(in: 10_000_000...99_999_999))
        connected.apple.setOrder(orderId, signedTransactions: [try held.mint(), try lifetime.mint()])

        let output = try BrowserScript.run("console_order_search_test.py", [
            "BOUNCER_URL": "http://127.0.0.1:\(server.port)", "ADMIN_TOKEN": E2E.adminToken,
            "PROJECT_ID": tenant.id, "ORDER_ID": orderId, "USER_ID": user,
            "TRANSACTION_IDS": [held.transactionId, lifetime.transactionId].joined(separator: ","),
        ], context: "server:\n\(server.stderr)")
        for step in ["signed in", "order id found: transactions and users", "order holder opens the customer",
                     "a transaction id still searches transactions", "unknown order is invalid, with nothing listed",
                     "no CSP violations"] {
            XCTAssertTrue(output.contains("STEP \(step)"), "missing step \(step):\n\(output)")
        }
        // Apple was asked in Production, the only environment of Look Up Order ID, for each order searched.
        let asked = connected.apple.requests.filter { $0.endpoint == .lookUpOrder }
        XCTAssertEqual(asked.compactMap(\.id), [orderId, "NOSUCHORDER1"])
        XCTAssertEqual(Set(asked.map(\.environment)), [.production])
    }
}
