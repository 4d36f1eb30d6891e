import AppStoreServerAPI
import Crypto
import Domain
import Foundation
import HTTPClient
import TestSupport
import XCTest

/// The Retention Messaging API through the App Store client against the fake Apple over TLS (the client tests'
/// fake and helpers): every endpoint's request (method, path, body, JWT) and answer, review states per environment,
/// Apple's errors mapped.
extension AppStoreServerClientTests {
    func testRetentionMessagingMessagesImagesDefaultsRealtimeURLAndPerformanceTest() throws {
        let client = try client(), creds = try credentials()
        let image = UUID(uuidString: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa") ?? UUID()
        let message = UUID(uuidString: "11111111-1111-4111-8111-111111111111") ?? UUID()
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]

        try client.uploadImage(image, png: png, environment: .sandbox, credentials: creds)
        try client.uploadMessage(RetentionMessageUpload(messageId: message, header: "Stay with us",
                                                        body: "Your plan keeps every feature.",
                                                        image: (image, "A cup of coffee")),
                                 environment: .sandbox, credentials: creds)
        try client.uploadMessage(RetentionMessageUpload(messageId: message, header: "Stay", body: "Text"),
                                 environment: .production, credentials: creds)
        // Sandbox approves at once; Production waits for review.
        XCTAssertEqual(try client.messages(environment: .sandbox, credentials: creds),
                       [RetentionAssetState(id: message, state: "APPROVED")])
        XCTAssertEqual(try client.messages(environment: .production, credentials: creds),
                       [RetentionAssetState(id: message, state: "PENDING")])
        XCTAssertEqual(try client.images(environment: .sandbox, credentials: creds),
                       [RetentionAssetState(id: image, state: "APPROVED")])
        try client.configureDefaultMessage(productId: "com.example.pro monthly", locale: "en-US", messageId: message,
                                           environment: .sandbox, credentials: creds)
        try client.configureRealtimeURL("https://bouncer.example/v1/retention/pk_x", environment: .sandbox,
                                        credentials: creds)
        let started = try client.initiatePerformanceTest(originalTransactionId: "2000000000000001", credentials: creds)
        XCTAssertEqual(started, PerformanceTestStarted(requestId: "perf-1", maxConcurrentRequests: 10, totalRequests: 1000,
                                                       totalDuration: 60_000, responseTimeThreshold: 700,
                                                       successRateThreshold: 99))
        let sandbox = apple.retention(.sandbox)
        XCTAssertEqual(sandbox.defaults, ["com.example.pro monthly/en-US": message.uuidString.lowercased()])
        XCTAssertEqual(sandbox.realtimeURL, "https://bouncer.example/v1/retention/pk_x")
        XCTAssertEqual(sandbox.messages[message.uuidString.lowercased()]?.header, "Stay with us")

        let requests = apple.requests
        XCTAssertTrue(requests.allSatisfy { $0.jwtProblem == nil }, "every call carries a valid JWT")
        XCTAssertEqual(requests.map { "\($0.method) \($0.path)" }, [
            "PUT /inApps/v1/messaging/image/aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
            "PUT /inApps/v1/messaging/message/11111111-1111-4111-8111-111111111111",
            "PUT /inApps/v1/messaging/message/11111111-1111-4111-8111-111111111111",
            "GET /inApps/v1/messaging/message/list",
            "GET /inApps/v1/messaging/message/list",
            "GET /inApps/v1/messaging/image/list",
            "PUT /inApps/v1/messaging/default/com.example.pro%20monthly/en-US",
            "PUT /inApps/v1/messaging/realtime/url",
            "POST /inApps/v1/messaging/performanceTest",
        ])
        XCTAssertEqual(requests[0].body, png)
        XCTAssertEqual(requests[1].jsonBody, [
            "header": "Stay with us", "body": "Your plan keeps every feature.",
            "image": ["imageIdentifier": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", "altText": "A cup of coffee"],
        ])
        XCTAssertEqual(requests[6].jsonBody, ["messageIdentifier": "11111111-1111-4111-8111-111111111111"])
        XCTAssertEqual(requests[7].jsonBody, ["realtimeUrl": "https://bouncer.example/v1/retention/pk_x"])
        XCTAssertEqual(requests[8].jsonBody, ["originalTransactionId": "2000000000000001"])
        XCTAssertEqual(requests[8].environment, .sandbox, "the performance test runs in Sandbox only")

        // Deletes, and Apple's errors as the client maps them.
        try client.deleteDefaultMessage(productId: "com.example.pro monthly", locale: "en-US", environment: .sandbox,
                                        credentials: creds)
        try client.deleteMessage(message, environment: .sandbox, credentials: creds)
        try client.deleteImage(image, environment: .sandbox, credentials: creds)
        XCTAssertEqual(try client.messages(environment: .sandbox, credentials: creds), [])
        XCTAssertThrowsError(try client.deleteMessage(message, environment: .sandbox, credentials: creds)) { error in
            XCTAssertEqual((error as? AppStoreAPIError)?.kind, .notFound)
            XCTAssertEqual((error as? AppStoreAPIError)?.appleErrorCode, 4040001)
        }
        try client.uploadMessage(RetentionMessageUpload(messageId: message, header: "Again", body: "Text"),
                                 environment: .sandbox, credentials: creds)
        XCTAssertThrowsError(try client.uploadMessage(RetentionMessageUpload(messageId: message, header: "Again",
                                                                             body: "Text"),
                                                      environment: .sandbox, credentials: creds)) { error in
            XCTAssertEqual((error as? AppStoreAPIError)?.kind, .rejected, "\(error)")
            XCTAssertEqual((error as? AppStoreAPIError)?.httpStatus, 409)
        }
        XCTAssertThrowsError(try client.uploadImage(UUID(), png: [1, 2, 3], environment: .sandbox, credentials: creds)) {
            XCTAssertEqual(($0 as? AppStoreAPIError)?.httpStatus, 400, "not a PNG")
        }
    }
}
