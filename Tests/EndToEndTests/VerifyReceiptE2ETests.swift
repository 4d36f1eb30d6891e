import Foundation
import JSON
import XCTest

/// `bouncer verify --receipt`, run as a real process on the real StoreKit 1 receipts with the embedded Apple Inc. Root.
final class VerifyReceiptE2ETests: XCTestCase {
    private var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["BOUNCER_ROOT_CERTIFICATES"] = nil
        return env
    }

    private func vector(_ name: String) -> String { E2EPaths.vectors.appendingPathComponent(name).path }

    func testBase64ReceiptVerifiesAtItsCreationDateAndPrintsEveryRecord() throws {
        let run = try CLIRun.run(
            ["verify", "--receipt", vector("legacy-receipt-sandbox-2020-sha1.b64"), "--bundle-id", "com.nutcall.alert"],
            environment: environment)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.stderr, "")
        let printed = try JSONParser.parse(run.stdout)
        XCTAssertEqual(printed["kind"], "receipt")
        XCTAssertEqual(printed["verdict"]?["valid"], true)
        XCTAssertEqual(printed["verification"]?["effectiveDate"], "2020-05-06T18:28:49.000Z")
        XCTAssertEqual(printed["verification"]?["effectiveDateSource"], "receiptCreationDate")
        XCTAssertEqual(printed["verification"]?["environment"], "Sandbox")
        XCTAssertEqual(printed["verification"]?["digestAlgorithm"], "SHA1")
        XCTAssertEqual(printed["payload"]?["bundle_id"], "com.nutcall.alert")
        XCTAssertEqual(printed["payload"]?["receipt_type"], "ProductionSandbox")
        XCTAssertEqual(printed["payload"]?["in_app_count"], 187)
        XCTAssertEqual(printed["payload"]?["in_app"]?.arrayValue?.count, 187)
        XCTAssertEqual(printed["payload"]?["in_app"]?[0]?["transaction_id"], "1000000637840752")
        XCTAssertEqual(printed["payload"]?["in_app"]?[0]?["purchase_date_ms"], 1_575_982_498_000)
    }

    func testDERFileAndAtNowRejectWithTheVerdictAndTheUnverifiedPayload() throws {
        let text = try String(contentsOfFile: vector("legacy-receipt-sandbox-2025-sha256-g5.b64"), encoding: .utf8)
        let der = try XCTUnwrap(Data(base64Encoded: text, options: .ignoreUnknownCharacters))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-\(UUID().uuidString).der")
        try der.write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }

        let valid = try CLIRun.run(["verify", "--receipt", path.path, "--bundle-id", "dev.bonzer.weeka.app"], environment: environment)
        XCTAssertEqual(valid.status, 0, valid.stderr)
        XCTAssertEqual(try JSONParser.parse(valid.stdout)["payload"]?["in_app_count"], 2)

        let expired = try CLIRun.run(["verify", "--receipt", path.path, "--bundle-id", "dev.bonzer.weeka.app", "--at", "now"],
                                     environment: environment)
        XCTAssertEqual(expired.status, 1)
        XCTAssertTrue(expired.stderr.hasPrefix("RECEIPT_VERIFICATION_FAILED (validity): "), expired.stderr)
        let printed = try JSONParser.parse(expired.stdout)
        XCTAssertEqual(printed["verdict"]?["valid"], false)
        XCTAssertEqual(printed["verdict"]?["code"], "RECEIPT_VERIFICATION_FAILED")
        XCTAssertEqual(printed["verdict"]?["step"], "validity")
        XCTAssertEqual(printed["payloadVerified"], false)
        XCTAssertEqual(printed["payload"]?["bundle_id"], "dev.bonzer.weeka.app")

        let wrongBundle = try CLIRun.run(["verify", "--receipt", path.path, "--bundle-id", "com.example.other"], environment: environment)
        XCTAssertEqual(wrongBundle.status, 1)
        XCTAssertTrue(wrongBundle.stderr.hasPrefix("BUNDLE_ID_MISMATCH (claims): "), wrongBundle.stderr)

        let productionOnly = try CLIRun.run(["verify", "--receipt", path.path, "--bundle-id", "dev.bonzer.weeka.app", "--environment", "production"],
                                            environment: environment)
        XCTAssertEqual(productionOnly.status, 1)
        XCTAssertTrue(productionOnly.stderr.hasPrefix("ENVIRONMENT_NOT_ALLOWED (claims): "), productionOnly.stderr)
    }

    func testGarbageIsAFormatErrorAndUsageErrorsExitTwo() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-\(UUID().uuidString).txt")
        try Data("this is not a receipt".utf8).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let garbage = try CLIRun.run(["verify", "--receipt", path.path, "--bundle-id", "com.example"], environment: environment)
        XCTAssertEqual(garbage.status, 1)
        XCTAssertTrue(garbage.stderr.hasPrefix("INVALID_RECEIPT_FORMAT (encoding): "), garbage.stderr)
        XCTAssertEqual(try JSONParser.parse(garbage.stdout)["verdict"]?["code"], "INVALID_RECEIPT_FORMAT")

        XCTAssertEqual(try CLIRun.run(["verify", "--receipt"], environment: environment).status, 2)
        XCTAssertEqual(try CLIRun.run(["verify", "--receipt", "/nonexistent/receipt"], environment: environment).status, 2)
        XCTAssertEqual(try CLIRun.run(["verify", "--receipt", path.path, "extra.jws"], environment: environment).status, 2)
    }
}
