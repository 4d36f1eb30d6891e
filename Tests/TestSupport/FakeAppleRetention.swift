import Foundation
import JSON

/// What the fake Apple holds for the Retention Messaging API in one environment, as Apple documents it: messages and
/// images by identifier with their review state (in Sandbox Apple approves at once; in Production they wait in
/// `PENDING`), default messages by product and locale, the Realtime URL, the performance tests started.
public struct RetentionScenario: Sendable {
    public var messages: [String: (header: String, body: String, state: String)] = [:]
    public var images: [String: (bytes: Int, state: String)] = [:]
    public var defaults: [String: String] = [:]
    public var realtimeURL: String?
    public var performanceTests: [String] = []
}

extension FakeAppleServer {
    /// The Retention Messaging endpoint of `segments` (after `/inApps/v1/messaging/`) and its id.
    static func retentionEndpoint(_ method: String, _ segments: [String]) -> (Endpoint?, String?) {
        switch (method, segments.count) {
        case ("GET", 2) where segments == ["message", "list"]: return (.messageList, nil)
        case ("GET", 2) where segments == ["image", "list"]: return (.imageList, nil)
        case ("PUT", 2) where segments[0] == "message": return (.uploadMessage, segments[1])
        case ("DELETE", 2) where segments[0] == "message": return (.deleteMessage, segments[1])
        case ("PUT", 2) where segments[0] == "image": return (.uploadImage, segments[1])
        case ("DELETE", 2) where segments[0] == "image": return (.deleteImage, segments[1])
        case ("PUT", 3) where segments[0] == "default": return (.configureDefaultMessage, segments[1] + "/" + segments[2])
        case ("DELETE", 3) where segments[0] == "default": return (.deleteDefaultMessage, segments[1] + "/" + segments[2])
        case ("PUT", 2) where segments == ["realtime", "url"]: return (.configureRealtimeURL, nil)
        case ("POST", 1) where segments == ["performanceTest"]: return (.initiatePerformanceTest, nil)
        default: return (nil, nil)
        }
    }

    static func retentionAnswer(_ endpoint: Endpoint, _ request: ReceivedRequest, _ environment: Environment,
                                _ state: inout RetentionScenario) -> LocalHTTPSServer.Action {
        let id = request.id ?? ""
        let reviewed = environment == .sandbox ? "APPROVED" : "PENDING"
        func validId() -> Bool { UUID(uuidString: id) != nil }
        switch endpoint {
        case .uploadMessage:
            guard validId() else { return appleError(400, 4000023, "Invalid message identifier.") }
            guard state.messages[id] == nil else { return appleError(409, 4090000, "Message already exists.") }
            guard let body = request.jsonBody?.objectValue, let header = body["header"]?.stringValue,
                  let text = body["body"]?.stringValue else { return appleError(400, 4000000, "Invalid request.") }
            if let image = body["image"]?.objectValue {
                guard let imageId = image["imageIdentifier"]?.stringValue, state.images[imageId] != nil,
                      image["altText"]?.stringValue != nil else { return appleError(400, 4000000, "Invalid image.") }
            }
            state.messages[id] = (header, text, reviewed)
            return .respond(status: 200)
        case .messageList:
            return ok(["messageIdentifiers": .array(state.messages.keys.sorted().map {
                ["messageIdentifier": .string($0), "messageState": .string(state.messages[$0]?.state ?? "")]
            })])
        case .deleteMessage:
            guard state.messages.removeValue(forKey: id) != nil else { return appleError(404, 4040001, "Message not found.") }
            return .respond(status: 200)
        case .uploadImage:
            guard validId() else { return appleError(400, 4000023, "Invalid image identifier.") }
            guard state.images[id] == nil else { return appleError(409, 4090001, "Image already exists.") }
            guard request.headers.contains(where: { $0.0.lowercased() == "content-type" && $0.1 == "image/png" }),
                  request.body.starts(with: [0x89, 0x50, 0x4E, 0x47]) else { return appleError(400, 4000000, "Invalid image.") }
            state.images[id] = (request.body.count, reviewed)
            return .respond(status: 200)
        case .imageList:
            return ok(["imageIdentifiers": .array(state.images.keys.sorted().map {
                ["imageIdentifier": .string($0), "imageState": .string(state.images[$0]?.state ?? "")]
            })])
        case .deleteImage:
            guard state.images.removeValue(forKey: id) != nil else { return appleError(404, 4040002, "Image not found.") }
            return .respond(status: 200)
        case .configureDefaultMessage:
            guard let message = request.jsonBody?["messageIdentifier"]?.stringValue, state.messages[message] != nil else {
                return appleError(404, 4040001, "Message not found.")
            }
            state.defaults[id] = message
            return .respond(status: 200)
        case .deleteDefaultMessage:
            guard state.defaults.removeValue(forKey: id) != nil else {
                return appleError(404, 4040003, "Default message not found.")
            }
            return .respond(status: 200)
        case .configureRealtimeURL:
            guard let url = request.jsonBody?["realtimeUrl"]?.stringValue, url.hasPrefix("https://") else {
                return appleError(400, 4000000, "Invalid realtime URL.")
            }
            state.realtimeURL = url
            return .respond(status: 200)
        case .initiatePerformanceTest:
            guard environment == .sandbox else { return .respond(status: 404) }
            guard request.jsonBody?["originalTransactionId"]?.stringValue != nil else {
                return appleError(400, 4000000, "Invalid performance test request.")
            }
            let requestId = "perf-\(state.performanceTests.count + 1)"
            state.performanceTests.append(requestId)
            return ok(["requestId": .string(requestId), "config": [
                "maxConcurrentRequests": 10, "totalRequests": 1000, "totalDuration": 60_000,
                "responseTimeThreshold": 700, "successRateThreshold": 99,
            ]])
        default:
            return .respond(status: 404)
        }
    }
}
