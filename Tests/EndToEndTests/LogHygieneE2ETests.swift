import Foundation
import JSON
import XCTest

/// "Raw keys and JWS never appear in logs": a server with its access log on, driven through every kind of call
/// (success, auth failures, verification failures, admin), must not have written any key, token or JWS part.
final class LogHygieneE2ETests: XCTestCase {
    func testKeysTokensAndJWSNeverReachTheLogs() throws {
        let (_, server, api) = try ownServer(label: "logs", overrides: ["BOUNCER_ACCESS_LOG": "on"])
        let tenant = try api.createProject()
        try api.mapProduct(tenant)
        let payload = TransactionPayload(bundleId: tenant.bundleId)
        let jws = try payload.mint()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, jws, user: "log-user").status, 201)
        XCTAssertEqual(try api.user(tenant.publicKey, "log-user", headers: ["Authorization": "Bearer \(tenant.secretKey)"]).status, 200)
        let wrongSecret = "sk_" + String(repeating: "b", count: 64)
        XCTAssertEqual(try api.user(tenant.publicKey, "log-user", headers: ["Authorization": "Bearer \(wrongSecret)"]).status, 401)
        var foreign = payload
        foreign.bundleId = "com.someone.else"
        let foreignJWS = try foreign.mint()
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, foreignJWS, user: "log-user").status, 400)
        let parts = jws.split(separator: ".").map(String.init)
        let tampered = parts[0] + "." + parts[1] + "." + String(parts[2].reversed())
        XCTAssertEqual(try api.postReceipt(tenant.publicKey, tampered, user: "log-user").status, 400)
        let unknownKey = "pk_" + String(repeating: "c", count: 32)
        XCTAssertEqual(try api.postReceipt(unknownKey, jws).status, 401)
        let badAdmin = "Bearer not-the-admin-token-but-long"
        XCTAssertEqual(try api.client.get("/v1/admin/projects", headers: ["Authorization": badAdmin]).status, 401)
        let rotate = try api.client.request("POST", "/v1/admin/projects/\(tenant.id)/rotate-keys", headers: E2E.admin)
        XCTAssertEqual(rotate.status, 200)
        let rotatedSecret = try XCTUnwrap(rotate.json()["secret_key"]?.stringValue)
        server.stopAndAssertCleanExitKeepingLog()

        let log = server.stderr
        XCTAssertTrue(log.contains(#""route":"/v1/receipts/:publicKey""#) || log.contains("/v1/receipts/:publicKey"),
                      "the access log was expected to be on: \(log)")
        let secrets: [(String, String)] = [
            ("public key", tenant.publicKey), ("secret key", tenant.secretKey), ("rotated secret key", rotatedSecret),
            ("wrong secret key", wrongSecret), ("unknown public key", unknownKey), ("admin token", E2E.adminToken),
            ("bad admin token", "not-the-admin-token-but-long"),
            ("JWS header", String(parts[0].prefix(40))), ("JWS payload", parts[1]), ("JWS signature", parts[2]),
            ("foreign JWS payload", foreignJWS.split(separator: ".").map(String.init)[1]),
        ]
        for (what, secret) in secrets {
            XCTAssertFalse(log.contains(secret), "\(what) appears in the server log:\n\(log)")
        }
        try? FileManager.default.removeItem(atPath: server.stderrPath)
    }
}

extension BouncerProcess {
    /// Like `stopAndAssertCleanExit`, but leaves the stderr file for the caller to inspect.
    func stopAndAssertCleanExitKeepingLog(file: StaticString = #filePath, line: UInt = #line) {
        let status = stop()
        XCTAssertEqual(status, 0, "bouncer serve exit status after SIGTERM; stderr:\n\(stderr)", file: file, line: line)
    }
}
