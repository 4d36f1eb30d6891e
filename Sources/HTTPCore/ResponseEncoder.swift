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
    /// Headers the server owns; a handler's values for them are ignored so framing stays ours (and
    /// `X-Content-Type-Options`, which every response carries, is never sent twice).
    static func isServerOwnedHeader(_ name: String) -> Bool {
        // The length picks the one or two candidates: most handler headers are rejected without a compare.
        switch name.utf8.count {
        case 4: return HTTPHeaders.equalsIgnoringASCIICase(name, "date")
        case 10:
            return HTTPHeaders.equalsIgnoringASCIICase(name, "connection")
                || HTTPHeaders.equalsIgnoringASCIICase(name, "keep-alive")
        case 12: return HTTPHeaders.equalsIgnoringASCIICase(name, "x-request-id")
        case 14: return HTTPHeaders.equalsIgnoringASCIICase(name, "content-length")
        case 17: return HTTPHeaders.equalsIgnoringASCIICase(name, "transfer-encoding")
        case 22: return HTTPHeaders.equalsIgnoringASCIICase(name, "x-content-type-options")
        default: return false
        }
    }

    /// A header is written only if its name is a token and its value has no CR, LF or NUL
    /// (response splitting), so a handler echoing client input cannot inject lines.
    static func isSafe(_ name: String, _ value: String) -> Bool {
        guard !name.isEmpty, name.utf8.allSatisfy(RequestParser.isTokenByte) else { return false }
        return !value.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// Appends the full response to `out`. Byte appends only (no string interpolation): this runs once per
    /// response and callgrind showed the formatting allocations.
    /// - Parameters:
    ///   - headRequest: omit the body but keep its `Content-Length` (RFC 9110 §9.3.2).
    ///   - connection: `.close`, `.keepAlive10` (HTTP/1.0 persistent) or `.default`.
    ///   - chunked: for a streamed response, `Transfer-Encoding: chunked` (HTTP/1.1) instead of a close-delimited body.
    static func encode(
        _ response: Response, headRequest: Bool, requestID: String, connection: ConnectionHeader,
        date: [UInt8], chunked: Bool = false, into out: inout [UInt8]
    ) {
        let status = (100...599).contains(response.status) ? response.status : 500
        out.appendASCII("HTTP/1.1 ")
        out.appendDecimal(status)
        out.append(0x20)
        out.appendString(HTTPStatus.reason(status))
        out.appendASCII("\r\n")
        let bodyAllowed = status != 204 && status != 304 && status >= 200
        if response.stream != nil {
            if bodyAllowed && chunked { out.appendASCII("Transfer-Encoding: chunked\r\n") }
        } else if status != 204 && status >= 200 {
            out.appendASCII("Content-Length: ")
            out.appendDecimal(bodyAllowed ? response.body.count : 0)
            out.appendASCII("\r\n")
        }
        out.appendASCII("Date: ")
        out.append(contentsOf: date)
        out.appendASCII("\r\n")
        if !requestID.isEmpty {
            out.appendASCII("X-Request-Id: ")
            out.appendString(requestID)
            out.appendASCII("\r\n")
        }
        // On every response, errors and redirects included: a browser must never sniff a JSON error that echoes
        // client input into HTML or script.
        out.appendASCII("X-Content-Type-Options: nosniff\r\n")
        switch connection {
        case .close: out.appendASCII("Connection: close\r\n")
        case .keepAlive10: out.appendASCII("Connection: keep-alive\r\n")
        case .default: break
        }
        for (name, value) in response.headers where !isServerOwnedHeader(name) && isSafe(name, value) {
            out.appendString(name)
            out.appendASCII(": ")
            out.appendString(value)
            out.appendASCII("\r\n")
        }
        out.appendASCII("\r\n")
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

extension [UInt8] {
    /// Appends a literal's bytes with one copy (`append(contentsOf: "…".utf8)` goes byte by byte).
    mutating func appendASCII(_ literal: StaticString) {
        literal.withUTF8Buffer { append(contentsOf: $0) }
    }

    /// Appends a string's UTF-8 with one copy.
    mutating func appendString(_ string: String) {
        var string = string
        string.withUTF8 { append(contentsOf: $0) }
    }

    /// Appends `value` in decimal without building a `String`.
    mutating func appendDecimal(_ value: Int) {
        if value < 0 {
            append(UInt8(ascii: "-"))
            appendDecimal(UInt64(value.magnitude))
        } else {
            appendDecimal(UInt64(value))
        }
    }

    /// Appends `value` in decimal without building a `String`.
    mutating func appendDecimal(_ value: UInt64) {
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor &*= 10 }  // at most 10^19 < UInt64.max: no overflow
        var rest = value
        repeat {
            append(UInt8(truncatingIfNeeded: rest / divisor) &+ 0x30)
            rest %= divisor
            divisor /= 10
        } while divisor > 0
    }

    /// Appends `value` in lowercase hexadecimal without building a `String`.
    mutating func appendHex(_ value: UInt64) {
        let width = value == 0 ? 1 : (67 - value.leadingZeroBitCount) / 4
        for shift in stride(from: (width - 1) * 4, through: 0, by: -4) {
            let nibble = UInt8(truncatingIfNeeded: (value >> UInt64(shift)) & 0xF)
            append(nibble < 10 ? nibble &+ 0x30 : nibble &+ 0x57)
        }
    }
}
