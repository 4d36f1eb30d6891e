@testable import Domain
import Foundation
import XCTest

final class KeyRotationRulesTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_780_272_000)

    func key(_ n: Int, _ kind: ProjectKeyKind = .public, created: TimeInterval = 0, expires: TimeInterval? = nil)
        -> StoredProjectKey
    {
        StoredProjectKey(kind: kind, publicKey: kind == .public ? "pk_\(n)" : nil,
                         secretKeyHash: kind == .secret ? [UInt8(n)] : nil, createdAt: t0.addingTimeInterval(created),
                         expiresAt: expires.map { t0.addingTimeInterval($0) })
    }

    func testTheReplacedKeyGetsTheGraceAndOtherKindsStay() {
        let keys = [key(1), key(2, .secret)]
        let next = KeyRotationRules.apply([KeyReplacement(newKey: key(3, created: 10), graceSeconds: 60)], to: keys,
                                          now: t0.addingTimeInterval(10))
        XCTAssertEqual(next.map(\.publicKey), [nil, "pk_3", "pk_1"])
        XCTAssertEqual(next.first { $0.publicKey == "pk_1" }?.expiresAt, t0.addingTimeInterval(70))
        XCTAssertNil(next.first { $0.publicKey == "pk_3" }?.expiresAt)
        XCTAssertNil(next.first { $0.kind == .secret }?.expiresAt)
    }

    func testGraceZeroDropsEveryOlderKeyOfTheKind() {
        let keys = [key(1, expires: 500), key(2, created: 5)]
        let next = KeyRotationRules.apply([KeyReplacement(newKey: key(3, created: 10), graceSeconds: 0)], to: keys,
                                          now: t0.addingTimeInterval(10))
        XCTAssertEqual(next.map(\.publicKey), ["pk_3"])
    }

    func testARotationNeverExtendsARetiringKey() {
        let keys = [key(1, expires: 100), key(2, created: 5)]
        let next = KeyRotationRules.apply([KeyReplacement(newKey: key(3, created: 10), graceSeconds: 1_000)], to: keys,
                                          now: t0.addingTimeInterval(10))
        XCTAssertEqual(next.first { $0.publicKey == "pk_1" }?.expiresAt, t0.addingTimeInterval(100))
        XCTAssertEqual(next.first { $0.publicKey == "pk_2" }?.expiresAt, t0.addingTimeInterval(1_010))
    }

    func testExpiredKeysArePurgedAndLiveKeysAreBounded() {
        let keys = [key(1, expires: 5), key(2, created: 1, expires: 900), key(3, created: 2, expires: 800), key(4, created: 3)]
        let next = KeyRotationRules.apply([KeyReplacement(newKey: key(5, created: 10), graceSeconds: 600)], to: keys,
                                          now: t0.addingTimeInterval(10))
        XCTAssertEqual(next.map(\.publicKey), ["pk_5", "pk_4", "pk_3"])
        XCTAssertEqual(next.count, KeyRotationRules.maxLiveKeysPerKind)
    }

    func testLivenessIsExclusiveAtTheExpiry() {
        let k = key(1, expires: 10)
        XCTAssertTrue(k.isLive(at: t0.addingTimeInterval(9.999)))
        XCTAssertFalse(k.isLive(at: t0.addingTimeInterval(10)))
        XCTAssertTrue(key(2).isLive(at: .distantFuture))
    }

    func testDefaultGraces() {
        XCTAssertEqual(ProjectKeyKind.public.defaultGraceSeconds, 2_592_000)
        XCTAssertEqual(ProjectKeyKind.secret.defaultGraceSeconds, 86_400)
    }
}

final class AccountBindingRulesTests: XCTestCase {
    let token = UUID(uuidString: "6F1C2D3E-4A5B-4C6D-8E7F-8091A2B3C4D5")

    func bound(_ user: String?, _ token: UUID?, _ policy: AppAccountTokenPolicy) throws -> String? {
        try AccountBindingRules.boundUser(postedUserId: user, appAccountToken: token, policy: policy).userId
    }

    func testTable() throws {
        let lower = "6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5"
        for policy in AppAccountTokenPolicy.allCases {
            XCTAssertEqual(try bound("u", nil, policy), "u", "no token: the request decides (\(policy))")
            XCTAssertNil(try bound(nil, nil, policy))
        }
        XCTAssertEqual(try bound("u", token, .ignore), "u")
        XCTAssertEqual(try bound(lower, token, .requireMatch), lower)
        XCTAssertEqual(try bound(lower.uppercased(), token, .requireMatch), lower, "one canonical form")
        XCTAssertNil(try bound(nil, token, .requireMatch))
        XCTAssertEqual(try bound("u", token, .prefer), lower)
        XCTAssertEqual(try bound(nil, token, .prefer), lower)
        for user in ["u", "", "6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d6", "{6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5}"] {
            XCTAssertThrowsError(try bound(user, token, .requireMatch)) {
                XCTAssertEqual(($0 as? DomainError)?.code, .appAccountTokenMismatch, user)
            }
        }
    }

    /// Where a token can name a user, a UUID user id has one spelling (Apple's); under `ignore` ids are opaque.
    func testCanonicalUserIdAndWhetherTheTokenNamesTheUser() {
        let lower = "6f1c2d3e-4a5b-4c6d-8e7f-8091a2b3c4d5"
        for policy in [AppAccountTokenPolicy.requireMatch, .prefer] {
            XCTAssertEqual(AccountBindingRules.canonicalUserId(lower.uppercased(), policy: policy), lower)
            XCTAssertEqual(AccountBindingRules.canonicalUserId(lower, policy: policy), lower)
            XCTAssertEqual(AccountBindingRules.canonicalUserId("Alice", policy: policy), "Alice")
            XCTAssertTrue(AccountBindingRules.tokenNames(userId: lower, appAccountToken: token, policy: policy))
            XCTAssertFalse(AccountBindingRules.tokenNames(userId: "u", appAccountToken: token, policy: policy))
            XCTAssertFalse(AccountBindingRules.tokenNames(userId: lower, appAccountToken: nil, policy: policy))
            XCTAssertFalse(AccountBindingRules.tokenNames(userId: nil, appAccountToken: token, policy: policy))
        }
        XCTAssertEqual(AccountBindingRules.canonicalUserId(lower.uppercased(), policy: .ignore), lower.uppercased())
        XCTAssertFalse(AccountBindingRules.tokenNames(userId: lower, appAccountToken: token, policy: .ignore),
                       "under ignore the token is no identity")
    }
}

final class ProjectRulesTests: XCTestCase {
    func testEntitlementCapAndLengths() {
        XCTAssertEqual(ProjectRules.problems(entitlements: (0..<100).map { "e\($0)" }), [])
        XCTAssertEqual(ProjectRules.problems(entitlements: (0...100).map { "e\($0)" }),
                       [FieldProblem(path: ["entitlements"], message: "Array must contain at most 100 element(s)")])
        XCTAssertEqual(ProjectRules.problems(entitlements: ["", String(repeating: "e", count: 129)]), [
            FieldProblem(path: ["entitlements", "0"], message: "String must contain at least 1 character(s)"),
            FieldProblem(path: ["entitlements", "1"], message: "String must contain at most 128 character(s)"),
        ])
        XCTAssertEqual(ProjectRules.problems(productId: String(repeating: "p", count: 257)),
                       [FieldProblem(path: ["productId"], message: "String must contain at most 256 character(s)")])
    }

    func testProjectSettings() {
        var new = NewProject(ProjectSettings(name: String(repeating: "n", count: 201), bundleId: "", appAppleId: 0, environments: [.xcode]))
        XCTAssertEqual(ProjectRules.problems(in: new).map(\.path), [["name"], ["bundle_id"], ["app_apple_id"], ["environments", "0"]])
        new = NewProject(ProjectSettings(name: "ok", bundleId: "com.ok"))
        XCTAssertEqual(ProjectRules.problems(in: new), [])
        XCTAssertEqual(ProjectRules.problems(graceSeconds: 31_536_000), [])
        XCTAssertEqual(ProjectRules.problems(graceSeconds: -1).map(\.path), [["grace_seconds"]])
    }
}
