import Glibc

/// Formats the IMF-fixdate for `Date` (RFC 9110 §5.6.7), recomputed at most once a second per thread.
struct DateCache {
    private var second: Int = -1
    private var cached: [UInt8] = []

    mutating func current() -> [UInt8] {
        let now = time(nil)
        if now != second {
            second = now
            cached = Self.format(now)
        }
        return cached
    }

    static func format(_ t: Int) -> [UInt8] {
        var seconds = time_t(t)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let day = days[Int(max(0, min(6, parts.tm_wday)))]
        let month = months[Int(max(0, min(11, parts.tm_mon)))]
        let text = "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
        return Array(text.utf8)
    }
}

/// Serializes responses into one contiguous buffer (one `send` per response).
enum ResponseEncoder {
    /// Headers the server owns; a handler's values for them are ignored so framing stays ours.
    static func isFramingHeader(_ name: String) -> Bool {
        // Length first: most handler headers (Content-Type, Retry-After…) are rejected without a compare.
        switch name.utf8.count {
        case 4, 10, 12, 14, 17: break
        default: return false
        }
        return HTTPHeaders.equalsIgnoringASCIICase(name, "content-length")
            || HTTPHeaders.equalsIgnoringASCIICase(name, "transfer-encoding")
            || HTTPHeaders.equalsIgnoringASCIICase(name, "connection")
            || HTTPHeaders.equalsIgnoringASCIICase(name, "date")
            || HTTPHeaders.equalsIgnoringASCIICase(name, "x-request-id")
            || HTTPHeaders.equalsIgnoringASCIICase(name, "keep-alive")
    }

    /// A header is written only if its name is a token and its value has no CR, LF or NUL
    /// (response splitting), so a handler echoing client input cannot inject lines.
    static func isSafe(_ name: String, _ value: String) -> Bool {
        guard !name.isEmpty, name.utf8.allSatisfy(RequestParser.isTokenByte) else { return false }
        return !value.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Appends the full response to `out`.
    /// - Parameters:
    ///   - headRequest: omit the body but keep its `Content-Length` (RFC 9110 §9.3.2).
    ///   - connection: `.close`, `.keepAlive10` (HTTP/1.0 persistent) or `.default`.
    static func encode(
        _ response: Response, headRequest: Bool, requestID: String, connection: ConnectionHeader,
        date: [UInt8], into out: inout [UInt8]
    ) {
        let status = (100...599).contains(response.status) ? response.status : 500
        out.append(contentsOf: "HTTP/1.1 \(status) \(HTTPStatus.reason(status))\r\n".utf8)
        let bodyAllowed = status != 204 && status != 304 && status >= 200
        if status != 204 && status >= 200 {
            out.append(contentsOf: "Content-Length: ".utf8)
            out.append(contentsOf: String(bodyAllowed ? response.body.count : 0).utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "Date: ".utf8)
        out.append(contentsOf: date)
        out.append(contentsOf: "\r\n".utf8)
        if !requestID.isEmpty {
            out.append(contentsOf: "X-Request-Id: ".utf8)
            out.append(contentsOf: requestID.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        switch connection {
        case .close: out.append(contentsOf: "Connection: close\r\n".utf8)
        case .keepAlive10: out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        case .default: break
        }
        for (name, value) in response.headers where !isFramingHeader(name) && isSafe(name, value) {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            out.append(contentsOf: value.utf8)
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
        if bodyAllowed && !headRequest { out.append(contentsOf: response.body) }
    }

    enum ConnectionHeader { case `default`, close, keepAlive10 }
}

/// Request ids: an incoming `X-Request-Id` is kept if short and log-safe, else one is generated.
enum RequestID {
    /// 1–128 bytes of `A–Z a–z 0–9 - _ . :` (no quotes or controls: it goes into JSON logs verbatim).
    static func isSane(_ value: String) -> Bool {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 128 else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == 0x2D || b == 0x5F || b == 0x2E || b == 0x3A
        }
    }
}
