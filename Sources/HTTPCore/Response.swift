/// What a handler returns; the server adds `Content-Length`, `Date`, `X-Request-Id` and `Connection`.
public struct Response: Sendable {
    /// Status code, 100–599.
    public var status: Int
    /// Header fields; framing headers set here (`Content-Length`, `Transfer-Encoding`,
    /// `Connection`, `Date`) are ignored because the server owns framing.
    public var headers: HTTPHeaders
    /// The body; dropped on the wire for `HEAD` and for 204/304, `Content-Length` kept for `HEAD`.
    public var body: [UInt8]
    /// A body written while it is sent (`Response.streaming`); `body` is then empty and ignored.
    public var stream: BodyStream?

    /// A response with the given parts.
    public init(status: Int, headers: HTTPHeaders = .init(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with `Content-Type: application/json` and the given serialized body.
    public static func json(_ status: Int, _ body: [UInt8], headers: HTTPHeaders = .init()) -> Response {
        if headers.isEmpty { return Response(status: status, headers: jsonOnly, body: body) }
        var h = headers
        if !h.contains("Content-Type") { h.add("Content-Type", "application/json") }
        return Response(status: status, headers: h, body: body)
    }
}

extension Response {
    /// The headers of most JSON answers, built once rather than per response.
    static let jsonOnly: HTTPHeaders = ["Content-Type": "application/json"]
}

/// Reason phrases (RFC 9110 §15); clients must ignore them, but people read them in logs.
enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }
}
