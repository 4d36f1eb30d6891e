import Domain
import Foundation
import Specification
@testable import Storage
import XCTest

/// The read cache on its own: a fill that races an invalidation is not kept, entries expire within `maxAge` and the
/// least recently used is evicted, and the announcements survive the `NOTIFY` wire. (Reads through the API's routes
/// over this cache: `APITests.ReadCacheTests`.)
final class PurchaseReadCacheTests: XCTestCase {
    func testAFillRacingAnInvalidationIsNotKept() {
        let cache = PurchaseReadCache(capacity: 10, maxAge: .seconds(3600))
        cache.setEnabled(true)
        let project = UUID()
        let purchase = PurchaseState(first: Fixtures.monthly("1", start: 0))
        let owned = [OwnedPurchase(purchase: purchase, entitlements: ["pro"])]

        // A purchase change lands between the query and the fill: the read may predate it.
        var ticket = cache.ticket()
        cache.invalidate([.purchase(project, environment: "Production", originalTransactionId: purchase.originalTransactionId)])
        cache.fill(projectId: project, userId: "u", owned: owned, ticket: ticket, at: cache.now())
        XCTAssertNil(cache.lookup(projectId: project, userId: "u"))

        // Same for the user, the project, and the channel going down and up.
        for message in [CacheMessage.user(project, userId: "u"), .allUsers(project), .project(project)] {
            ticket = cache.ticket()
            cache.invalidate([message])
            cache.fill(projectId: project, userId: "u", owned: owned, ticket: ticket, at: cache.now())
            XCTAssertNil(cache.lookup(projectId: project, userId: "u"), "\(message)")
        }
        ticket = cache.ticket()
        cache.setEnabled(true)
        cache.fill(projectId: project, userId: "u", owned: owned, ticket: ticket, at: cache.now())
        XCTAssertNil(cache.lookup(projectId: project, userId: "u"))

        // Unrelated invalidations do not block it.
        ticket = cache.ticket()
        cache.invalidate([.user(project, userId: "other"), .purchase(project, environment: "Sandbox",
                                                                      originalTransactionId: purchase.originalTransactionId)])
        cache.fill(projectId: project, userId: "u", owned: owned, ticket: ticket, at: cache.now())
        XCTAssertEqual(cache.lookup(projectId: project, userId: "u"), owned)
    }

    func testEntriesExpireAfterMaxAgeAndTheLeastRecentlyUsedIsEvicted() {
        let cache = PurchaseReadCache(capacity: 2, maxAge: .seconds(60))
        cache.setEnabled(true)
        let project = UUID()
        let now = cache.now()
        cache.fill(projectId: project, userId: "old", owned: [], ticket: cache.ticket(), at: now - .seconds(61))
        XCTAssertNil(cache.lookup(projectId: project, userId: "old"), "older than maxAge")
        for user in ["a", "b"] { cache.fill(projectId: project, userId: user, owned: [], ticket: cache.ticket(), at: now) }
        XCTAssertEqual(cache.lookup(projectId: project, userId: "a"), [])  // a is now the most recent
        cache.fill(projectId: project, userId: "c", owned: [], ticket: cache.ticket(), at: now)
        XCTAssertNil(cache.lookup(projectId: project, userId: "b"), "b was least recently used")
        XCTAssertEqual(cache.lookup(projectId: project, userId: "a"), [])
        XCTAssertEqual(cache.lookup(projectId: project, userId: "c"), [])
        cache.setEnabled(false)
        XCTAssertNil(cache.lookup(projectId: project, userId: "a"), "off while the channel is down")
    }

    /// Users first read together must not all miss together again every `maxAge`: each entry lives a random span in
    /// (maxAge / 2, maxAge], so none is gone at half the age and all are at the full age.
    func testEntriesFilledTogetherExpireApartWithinMaxAge() {
        let users = 200
        let project = UUID()
        func alive(filledAgo fraction: Double) -> Int {
            let cache = PurchaseReadCache(capacity: users, maxAge: .seconds(100))
            cache.setEnabled(true)
            let filledAt = cache.now() - .seconds(100 * fraction)
            for u in 0..<users {
                cache.fill(projectId: project, userId: "u\(u)", owned: [], ticket: cache.ticket(), at: filledAt)
            }
            return (0..<users).filter { cache.lookup(projectId: project, userId: "u\($0)") != nil }.count
        }
        XCTAssertEqual(alive(filledAgo: 0.49), users)
        let atThreeQuarters = alive(filledAgo: 0.75)
        // Each survives with probability 1/2: all or none of 200 has probability 2^-199.
        XCTAssertGreaterThan(atThreeQuarters, 0)
        XCTAssertLessThan(atThreeQuarters, users)
        XCTAssertEqual(alive(filledAgo: 1.0), 0)
    }

    func testFreeTextIsUnpaddedCanonicalBase64URL() {
        for text in ["", "a", "ab", "abc", "abcd", "2000000000000001", "a b\nc\u{1F600}", "é/+?~", String(repeating: "z", count: 257)] {
            let expected = Data(text.utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(CacheMessage.encode(text), expected)
            XCTAssertEqual(CacheMessage.decode(Substring(expected)), text)
        }
        XCTAssertEqual(CacheMessage.encode("\u{FF}\u{FE}"), "w7_Dvg")
        for bad in ["A", "AB", "AAA=", "YQ==", "a+b/", "YWJj!", "_w"] {
            XCTAssertNil(CacheMessage.decode(Substring(bad)), bad)
        }
    }

    func testAnIdIsWrittenExactlyAsFoundationWritesIt() {
        for id in (0..<200).map({ _ in UUID() }) + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                                                    UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
                                                                255, 255, 255, 255, 255))] {
            XCTAssertEqual(CacheMessage.text(id), id.uuidString)
        }
    }

    func testMessagesSurviveTheWireAndPackUnderTheLimit() {
        let project = UUID()
        let messages: [CacheMessage] = [
            .project(project), .allUsers(project), .user(project, userId: "a b\nc\u{1F600}"),
            .purchase(project, environment: "Sandbox", originalTransactionId: "2000 0001"),
        ] + (0..<200).map { .user(project, userId: "user-\($0)-" + String(repeating: "x", count: 40)) }
        let origin = UUID()
        let payloads = CacheMessage.payloads(messages, origin: origin)
        XCTAssertGreaterThan(payloads.count, 1)
        XCTAssertTrue(payloads.allSatisfy { $0.utf8.count <= 7_900 })
        let parsed = payloads.map(CacheMessage.parse(payload:))
        XCTAssertTrue(parsed.allSatisfy { $0.origin == origin })
        XCTAssertEqual(parsed.flatMap(\.messages), messages)
        let huge = CacheMessage.user(project, userId: String(repeating: "y", count: 9_000))
        XCTAssertEqual(CacheMessage.parse(payload: huge.line).messages, [.allUsers(project)])
    }
}
