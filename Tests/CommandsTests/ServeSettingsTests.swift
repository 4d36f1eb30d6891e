@testable import Commands
import XCTest

/// The settings' validation without a process: what `bouncer serve` would print before exiting 2. The executable's
/// end-to-end tests (`EndToEndTests`) run the same tables through the real binary.
final class ServeSettingsTests: XCTestCase {
    func testDefaultsWithAnEmptyEnvironment() throws {
        let settings = try ServeSettings.fromEnvironment([:]).get()
        XCTAssertEqual(settings.server.port, 8080)
        XCTAssertNil(settings.server.tls)
        XCTAssertNil(settings.adminToken)
        // Apple's recommended App Store Server API domain (since 2026-05-05).
        XCTAssertEqual(settings.appleAPI.productionURL, "https://api.storekit.apple.com")
        XCTAssertEqual(settings.appleAPI.sandboxURL, "https://api.storekit-sandbox.apple.com")
    }

    /// Handler threads: 16 per available CPU, 4 to 32 (receipts waiting together share a group commit).
    func testDefaultHandlerThreadsFollowTheCPUs() {
        XCTAssertEqual([1, 2, 3, 8].map { ServeSettings.defaultWorkerCount(cpus: $0) }, [16, 32, 32, 32])
        XCTAssertEqual(ServeSettings.defaultWorkerCount(cpus: 0), 4)
    }

    /// Group-commit batches written at once: half the available CPUs, 1 to 8; `BOUNCER_RECEIPT_BATCHES` sets it.
    func testDefaultReceiptBatchesFollowTheCPUs() throws {
        XCTAssertEqual([0, 1, 2, 3, 4, 16, 64].map { ServeSettings.defaultReceiptBatches(cpus: $0) }, [1, 1, 1, 1, 2, 8, 8])
        XCTAssertEqual(try ServeSettings.fromEnvironment(["BOUNCER_RECEIPT_BATCHES": "3"]).get().database.receiptBatches, 3)
        guard case .failure(let problems) = ServeSettings.fromEnvironment(["BOUNCER_RECEIPT_BATCHES": "0"]) else {
            return XCTFail("expected a problem")
        }
        XCTAssertEqual(problems.messages.count, 1)
        XCTAssertTrue(problems.messages[0].hasPrefix("BOUNCER_RECEIPT_BATCHES=\"0\": "), problems.messages[0])
    }

    /// The variables still override the defaults, the former `itunes` hosts included.
    func testAppleAPIURLsOverrideTheDefaults() throws {
        let settings = try ServeSettings.fromEnvironment([
            "BOUNCER_APPLE_API_PRODUCTION_URL": "https://api.storekit.itunes.apple.com/",
            "BOUNCER_APPLE_API_SANDBOX_URL": "https://api.storekit-sandbox.itunes.apple.com",
        ]).get()
        XCTAssertEqual(settings.appleAPI.productionURL, "https://api.storekit.itunes.apple.com")
        XCTAssertEqual(settings.appleAPI.sandboxURL, "https://api.storekit-sandbox.itunes.apple.com")
    }

    func testEveryProblemIsReportedTogetherAndSecretsAreRedacted() {
        let environment = ["BOUNCER_PORT": "70000", "BOUNCER_TLS_CERT_FILE": "/c.pem",
                           "BOUNCER_ENCRYPTION_KEY": "not-base64"]
        guard case .failure(let problems) = ServeSettings.fromEnvironment(environment) else {
            return XCTFail("expected problems")
        }
        XCTAssertEqual(problems.messages.count, 3, "\(problems.messages)")
        XCTAssertTrue(problems.messages.contains { $0.hasPrefix("BOUNCER_PORT=\"70000\": ") })
        XCTAssertTrue(problems.messages.contains { $0.hasPrefix("BOUNCER_TLS_CERT_FILE is set without BOUNCER_TLS_KEY_FILE") })
        XCTAssertFalse(problems.messages.joined().contains("not-base64"))
    }

    func testHelpTextListsEveryVariable() {
        for variable in ServeSettings.variables {
            XCTAssertTrue(ServeSettings.helpText.contains(variable.name), variable.name)
        }
    }
}
