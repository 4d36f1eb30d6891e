import Foundation
import JSON
import XCTest

/// `bouncer verify`, the command-line verifier, run as a real process on real Apple data with the bundled roots.
final class VerifyCommandE2ETests: XCTestCase {
    private var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["BOUNCER_ROOT_CERTIFICATES"] = nil  // the bundled Apple roots
        return env
    }

    private func vector(_ name: String) -> String { E2EPaths.vectors.appendingPathComponent(name).path }

    func testRealAppleTransactionVerifiesAndPrintsItsPayload() throws {
        let run = try CLIRun.run(
            ["verify", "--bundle-id", "com.loki-project.loki-messenger", "--environment", "Sandbox",
             vector("sandbox-2025-DID_RENEW-nested-transaction.jws")],
            environment: environment)
        XCTAssertEqual(run.status, 0, run.stderr)
        let printed = try JSONParser.parse(run.stdout)
        XCTAssertEqual(printed["kind"], "transaction")
        XCTAssertEqual(printed["verification"]?["effectiveDateSource"], "signedDate")
        XCTAssertEqual(printed["payload"]?["transactionId"], "2000001024998954")
        XCTAssertEqual(printed["payload"]?["originalTransactionId"], "2000001024993299")
    }

    func testNotificationIsPrintedWithItsNestedJWSDecoded() throws {
        let run = try CLIRun.run(
            ["verify", "--bundle-id", "com.loki-project.loki-messenger", "--environment", "Sandbox",
             vector("sandbox-2025-notification-REFUND.jws")],
            environment: environment)
        XCTAssertEqual(run.status, 0, run.stderr)
        let printed = try JSONParser.parse(run.stdout)
        XCTAssertEqual(printed["kind"], "notification")
        XCTAssertEqual(printed["payload"]?["notificationType"], "REFUND")
        XCTAssertNotNil(printed["payload"]?["data"]?["signedTransactionInfo"]?["payload"]?["revocationDate"],
                        "the nested transaction is decoded in place: \(run.stdout.prefix(400))")
    }

    func testForgeriesAndWrongClaimsExitOneWithTheCode() throws {
        let tampered = try CLIRun.run(
            ["verify", "--bundle-id", "com.loki-project.loki-messenger", "--environment", "Sandbox",
             vector("negative/tampered-payload-bundleId.jws")],
            environment: environment)
        XCTAssertEqual(tampered.status, 1)
        XCTAssertTrue(tampered.stderr.contains("JWS_VERIFICATION_FAILED"), tampered.stderr)
        XCTAssertEqual(tampered.stdout, "")

        let wrongBundle = try CLIRun.run(
            ["verify", "--bundle-id", "com.example.other", "--environment", "Sandbox",
             vector("sandbox-2025-DID_RENEW-nested-transaction.jws")],
            environment: environment)
        XCTAssertEqual(wrongBundle.status, 1)
        XCTAssertTrue(wrongBundle.stderr.contains("BUNDLE_ID_MISMATCH"), wrongBundle.stderr)

        let usage = try CLIRun.run(["verify", "--no-such-flag"], environment: environment)
        XCTAssertEqual(usage.status, 2)
    }
}
