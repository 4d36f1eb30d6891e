import Domain
import Foundation
import XCTest

final class WebhookRulesTests: XCTestCase {
    func testURLRules() {
        func refused(_ url: String, allow: Bool = false) -> String? {
            if case .failure(let error) = WebhookRules.parse(url: url, allowPrivateNetworks: allow) {
                XCTAssertEqual(error.code, .webhookURLNotAllowed)
                XCTAssertEqual(error.details.first?.path, ["url"])
                return error.message
            }
            return nil
        }
        XCTAssertNil(refused("https://hooks.example.com/bouncer?x=1"))
        XCTAssertEqual(refused("http://hooks.example.com/"), "The URL must use https.")
        XCTAssertNil(refused("http://127.0.0.1:8080/hooks", allow: true))
        XCTAssertEqual(refused("ftp://example.com/"), "The URL must use https (not ftp).")
        XCTAssertEqual(refused("https://u:p@example.com/"), "The URL must not contain credentials (user:password@).")
        XCTAssertEqual(refused("https://example.com/#frag"), "The URL must not contain a fragment (#).")
        XCTAssertEqual(refused("https://exa mple.com/"), "Not an absolute URL (https://host/path).")
        XCTAssertEqual(refused("/relative"), "Not an absolute URL (https://host/path).")
        XCTAssertEqual(refused("https://example.com/" + String(repeating: "a", count: 2048)),
                       "The URL is longer than 2048 bytes.")
        if case .success(let parsed) = WebhookRules.parse(url: "https://[::1]:8443/x", allowPrivateNetworks: false) {
            XCTAssertEqual(parsed.https, true)
            XCTAssertTrue(parsed.host.contains("::1"))
        } else {
            XCTFail("IPv6 literal should parse")
        }
    }

    func testEventListRules() {
        XCTAssertEqual(WebhookRules.problems(events: ["ping", "entitlement.granted"]), [])
        XCTAssertEqual(WebhookRules.problems(events: []).map(\.path), [["events"]])
        XCTAssertEqual(WebhookRules.problems(events: ["x", "ping", "ping"]).map(\.path), [["events", "0"], ["events", "2"]])
        XCTAssertEqual(WebhookRules.problems(events: Array(repeating: "ping", count: 12)).map(\.message),
                       ["Array must contain at most 11 element(s)"])
        XCTAssertEqual(WebhookEventType.all.count, 11)
    }

    func testRetryDelayDoublesWithJitterUpToAnHour() {
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 1, jitter: 0.5), 10)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 2, jitter: 0.5), 20)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 4, jitter: 0.5), 80)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 1, jitter: 0), 7.5)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 1, jitter: 1), 12.5)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 30, jitter: 0.5), 3600)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: Int.max, jitter: 0.5), 3600)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: Int.min, jitter: 0.5), 10)
        XCTAssertEqual(WebhookRules.retryDelay(afterAttempt: 2, base: 0.1, jitter: 0.5), 0.2, accuracy: 1e-9)
        XCTAssertTrue(WebhookRules.isDelivered(status: 200))
        XCTAssertTrue(WebhookRules.isDelivered(status: 299))
        XCTAssertFalse(WebhookRules.isDelivered(status: 300))
        XCTAssertFalse(WebhookRules.isDelivered(status: 199))
    }

    func testSecretFormat() {
        var rng = SystemRandomNumberGenerator()
        let a = WebhookRules.generateSecret(using: &rng)
        let b = WebhookRules.generateSecret(using: &rng)
        XCTAssertNotNil(a.range(of: "^whsec_[0-9a-f]{64}$", options: .regularExpression))
        XCTAssertNotEqual(a, b)
    }
}
