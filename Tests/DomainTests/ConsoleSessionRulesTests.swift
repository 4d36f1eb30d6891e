import Domain
import XCTest

/// Session tokens and their CSRF tokens, as tables.
final class ConsoleSessionRulesTests: XCTestCase {
    struct CountingHasher: SecretKeyHashing {
        func hash(_ secret: String) -> [UInt8] { Array(secret.utf8.prefix(4)) + [UInt8(truncatingIfNeeded: secret.utf8.count)] }
    }

    func testGeneratedTokensHaveTheSyntaxAndDiffer() {
        var rng = SystemRandomNumberGenerator()
        let a = ConsoleSessionRules.generateToken(using: &rng)
        let b = ConsoleSessionRules.generateToken()
        XCTAssertTrue(ConsoleSessionRules.isTokenSyntax(a), a)
        XCTAssertTrue(ConsoleSessionRules.isTokenSyntax(b), b)
        XCTAssertNotEqual(a, b)
    }

    func testTokenSyntax() {
        let good = "cs_" + String(repeating: "0a", count: 32)
        for (token, expected) in [
            (good, true), ("", false), ("cs_", false), (String(good.dropLast()), false), (good + "0", false),
            ("sk_" + String(repeating: "0a", count: 32), false), ("cs_" + String(repeating: "0A", count: 32), false),
            ("cs_" + String(repeating: "g0", count: 32), false), ("cs_" + String(repeating: "é", count: 64), false),
        ] {
            XCTAssertEqual(ConsoleSessionRules.isTokenSyntax(token), expected, token)
        }
    }

    func testCSRFTokenIsTheHexOfTheHashOfTheSessionToken() {
        let hasher = CountingHasher()
        XCTAssertEqual(ConsoleSessionRules.csrfToken(sessionToken: "cs_ab", hasher: hasher), "637372660a")
        XCTAssertNotEqual(ConsoleSessionRules.csrfToken(sessionToken: "cs_ab", hasher: hasher),
                          ConsoleSessionRules.csrfToken(sessionToken: "cs_abc", hasher: hasher))
    }

    func testRangeDays() {
        let from = Date(timeIntervalSince1970: 86_400 * 10)
        XCTAssertEqual(OverviewRange(from: from, to: from.addingTimeInterval(86_400 * 7)).days, 7)
    }
}
