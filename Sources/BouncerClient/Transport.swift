import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@available(macOS 12.0, iOS 15.0, tvOS 15.0, watchOS 8.0, *)
extension BouncerClient {
    /// Longest single wait, whatever the policy says: keeps the nanosecond conversion in range.
    static let longestWait: TimeInterval = 86_400

    /// Sends one call: builds the request, repeats it per `retryPolicy` on 503/429, decodes `expecting`'s body or
    /// turns the answer into a `BouncerError`.
    func send<Body: Encodable, Answer: Decodable>(
        _ method: String, _ path: [String], body: Body?, expecting: Int, authorization: String? = nil
    ) async throws(BouncerError) -> Answer {
        let request = try makeRequest(method, path, body: body, authorization: authorization)
        var attempt = 0
        var waited: TimeInterval = 0
        while true {
            attempt += 1
            let data: Data
            let response: URLResponse
            do {
                (data, response) = try await session.data(for: request)
            } catch {
                if error is CancellationError {
                    throw BouncerError(kind: .transport, message: "The call was cancelled.", attempts: attempt,
                                       underlying: error)
                }
                throw BouncerError(kind: .transport, message: "No answer from Bouncer: \(Self.describe(error))",
                                   suggestion: "Check the base URL and the network; the call can be repeated.",
                                   attempts: attempt, underlying: error)
            }
            guard let http = response as? HTTPURLResponse else {
                throw BouncerError(kind: .invalidResponse, message: "The answer is not HTTP.", attempts: attempt)
            }
            if http.statusCode == expecting {
                return try Self.decode(Answer.self, from: data, status: http.statusCode, attempts: attempt)
            }
            let error = Self.error(status: http.statusCode, data: data, headers: http, attempts: attempt)
            guard let delay = retryPolicy.delay(afterAttempt: attempt, status: http.statusCode,
                                                retryAfter: error.retryAfter, waited: waited) else {
                throw error
            }
            let wait = min(delay, Self.longestWait)
            do {
                try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
            } catch {
                throw BouncerError(kind: .transport, message: "The call was cancelled while waiting to retry.",
                                   attempts: attempt, underlying: error)
            }
            waited += wait
        }
    }

    /// The URL request: base URL + percent-encoded path segments, JSON body, headers.
    private func makeRequest<Body: Encodable>(
        _ method: String, _ path: [String], body: Body?, authorization: String?
    ) throws(BouncerError) -> URLRequest {
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let text = base + "/" + path.map(Self.percentEncoded).joined(separator: "/")
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
            throw BouncerError(kind: .invalidRequest, message: "The base URL does not take a path: \(baseURL.absoluteString)",
                               suggestion: "Use an http or https URL such as https://bouncer.example.com.")
        }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue("BouncerClient/1", forHTTPHeaderField: "User-Agent")
        if let authorization { request.setValue("Bearer \(authorization)", forHTTPHeaderField: "Authorization") }
        if let body {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            do {
                request.httpBody = try encoder.encode(body)
            } catch {
                throw BouncerError(kind: .invalidRequest, message: "The request body does not encode.", underlying: error)
            }
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    /// One path segment with everything but RFC 3986 unreserved characters percent-encoded (a user id may hold
    /// `/`, `?`, `#` or spaces).
    static func percentEncoded(_ segment: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(segment.utf8.count)
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        // "." and ".." are dot-segments a URL library may remove (RFC 3986 §5.2.4): encode them.
        if out == [UInt8(ascii: ".")] { return "%2E" }
        if out == [UInt8(ascii: "."), UInt8(ascii: ".")] { return "%2E%2E" }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes a success body.
    static func decode<Answer: Decodable>(_ type: Answer.Type, from data: Data, status: Int, attempts: Int)
        throws(BouncerError) -> Answer {
        do {
            return try makeDecoder().decode(Answer.self, from: data)
        } catch {
            throw BouncerError(kind: .invalidResponse, status: status,
                               message: "Bouncer's \(status) answer does not decode as \(Answer.self).",
                               suggestion: "Check that the base URL points at Bouncer and the client matches its version.",
                               attempts: attempts, underlying: error)
        }
    }

    /// The error for a non-success answer: Bouncer's error body when it is one.
    static func error(status: Int, data: Data, headers: HTTPURLResponse, attempts: Int) -> BouncerError {
        let retryAfter = RetryPolicy.parseRetryAfter(header("Retry-After", in: headers))
        let requestId = header("X-Request-Id", in: headers)
        if let body = try? makeDecoder().decode(ErrorBody.self, from: data) {
            return BouncerError(kind: .server, status: status, code: body.code, message: body.error,
                                suggestion: body.suggestion, details: body.details ?? [],
                                requestId: body.requestId ?? requestId, retryAfter: retryAfter, attempts: attempts)
        }
        // Not Bouncer's body (a proxy's page, an older route): keep what the HTTP layer says.
        return BouncerError(kind: .invalidResponse, status: status,
                            message: "HTTP \(status) without a Bouncer error body.",
                            suggestion: "Check that the base URL points at Bouncer (not a proxy page).",
                            requestId: requestId, retryAfter: retryAfter, attempts: attempts)
    }

    /// A response header, case-insensitively.
    static func header(_ name: String, in response: HTTPURLResponse) -> String? {
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, key.caseInsensitiveCompare(name) == .orderedSame { return value as? String }
        }
        return nil
    }

    /// snake_case keys, ISO 8601 dates with or without milliseconds.
    static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let date = formatter.date(from: text) { return date }
            formatter.formatOptions = [.withInternetDateTime]
            if let date = formatter.date(from: text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text)")
        }
        return decoder
    }

    /// A transport error in a line, without the URL's query (there is none) or any header.
    static func describe(_ error: any Error) -> String {
        if let urlError = error as? URLError { return "\(urlError.code.rawValue) \(urlError.localizedDescription)" }
        return String(describing: type(of: error))
    }
}
