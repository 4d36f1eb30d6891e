import Foundation
import XCTest
@testable import JSON

/// Real App Store JWS payloads from Tests/Fixtures/apple/test-vectors, decoded with our parser and checked
/// against the facts in vectors.json (itself read with our parser).
final class AppleVectorTests: XCTestCase {
    static let vectorsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures/apple/test-vectors").standardized

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map { Array($0) }
    }

    /// (header, payload) JSON bytes of a compact JWS file.
    static func segments(of file: String) throws -> (header: [UInt8], payload: [UInt8]) {
        let text = try String(contentsOf: vectorsDirectory.appendingPathComponent(file), encoding: .utf8)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = base64URLDecode(parts[0]), let payload = base64URLDecode(parts[1]) else {
            throw NSError(domain: "AppleVectorTests", code: 1, userInfo: [NSLocalizedDescriptionKey: "bad JWS \(file)"])
        }
        return (header, payload)
    }

    func testEveryVectorDecodesToTheDocumentedFacts() throws {
        let index = try Data(contentsOf: Self.vectorsDirectory.appendingPathComponent("vectors.json"))
        let vectors = try XCTUnwrap(JSONParser.parse(index).arrayValue)
        XCTAssertEqual(vectors.count, 19)
        for vector in vectors {
            let file = try XCTUnwrap(vector["file"]?.stringValue)
            let kind = try XCTUnwrap(vector["kind"]?.stringValue)
            let (headerBytes, payloadBytes) = try Self.segments(of: file)
            let header = try JSONParser.parse(headerBytes)
            let payload = try JSONParser.parse(payloadBytes)

            XCTAssertEqual(header.objectValue?.keys.map { JSONValue.string($0) }, vector["headerKeys"]?.arrayValue, file)
            XCTAssertEqual(header["alg"], vector["alg"], file)
            XCTAssertEqual(header["x5c"]?.arrayValue?.count, vector["x5cLength"]?.int64Value.map(Int.init), file)
            XCTAssertEqual(header["x5c"]?[0]?.stringValue?.hasPrefix("MII"), true, file)

            // Notifications keep bundleId/environment/appAppleId under `data`.
            let facts = kind == "notification" ? try XCTUnwrap(payload["data"], file) : payload
            XCTAssertEqual(facts["bundleId"] ?? .null, vector["bundleId"], file)
            XCTAssertEqual(facts["environment"], vector["environment"], file)
            XCTAssertEqual(payload["signedDate"]?.millisecondsValue, vector["signedDate"]?.int64Value, file)
            XCTAssertEqual(payload["signedDate"]?.int64Value, vector["signedDate"]?.int64Value, file)
            if kind == "notification" {
                XCTAssertEqual(facts["appAppleId"]?.int64Value, vector["appAppleId"]?.int64Value, file)
                XCTAssertEqual(payload["notificationType"], vector["notificationType"], file)
                XCTAssertEqual(payload["subtype"] ?? .null, vector["subtype"], file)
            }

            // Lossless: re-serializing the payload gives back Apple's exact bytes (Apple emits
            // compact JSON with no escapes that we would normalize).
            XCTAssertEqual(payload.serialized(), payloadBytes, file)
            XCTAssertEqual(header.serialized(), headerBytes, file)
        }
    }

    func testTransactionPayloadFieldValues() throws {
        let (_, bytes) = try Self.segments(of: "sandbox-2025-DID_RENEW-nested-transaction.jws")
        let payload = try JSONParser.parse(bytes)
        XCTAssertEqual(payload["transactionId"]?.stringValue, "2000001024998954")
        XCTAssertEqual(payload["originalTransactionId"]?.stringValue, "2000001024993299")
        XCTAssertEqual(payload["productId"]?.stringValue, "com.getsession.org.pro_sub")
        XCTAssertEqual(payload["purchaseDate"]?.millisecondsValue, 1_759_302_552_000)
        XCTAssertEqual(payload["expiresDate"]?.millisecondsValue, 1_759_302_732_000)
        XCTAssertEqual(payload["quantity"]?.int64Value, 1)
        XCTAssertEqual(payload["type"]?.stringValue, "Auto-Renewable Subscription")
        XCTAssertEqual(payload["price"]?.int64Value, 1990)
        XCTAssertEqual(payload["currency"]?.stringValue, "AUD")
        XCTAssertEqual(payload.objectValue?.count, 20)
    }

    func testNestedJWSInNotificationMatchesItsFile() throws {
        let (_, bytes) = try Self.segments(of: "sandbox-2025-notification-DID_RENEW.jws")
        let payload = try JSONParser.parse(bytes)
        let nested = try XCTUnwrap(payload["data"]?["signedTransactionInfo"]?.stringValue)
        let file = try String(contentsOf: Self.vectorsDirectory.appendingPathComponent("sandbox-2025-DID_RENEW-nested-transaction.jws"), encoding: .utf8)
        XCTAssertEqual(nested, file)
    }

    func testRenewalInfoBooleansAndIntegers() throws {
        let (_, bytes) = try Self.segments(of: "sandbox-2022-renewalinfo.jws")
        let payload = try JSONParser.parse(bytes)
        XCTAssertEqual(payload["isInBillingRetryPeriod"]?.boolValue, false)
        XCTAssertEqual(payload["autoRenewStatus"]?.int64Value, 0)
        XCTAssertEqual(payload["expirationIntent"]?.int64Value, 1)
        XCTAssertEqual(payload["recentSubscriptionStartDate"]?.millisecondsValue, 1_667_369_895_000)
        XCTAssertNil(payload["bundleId"])
    }
}
