import Primitives

/// Limits the request parser enforces; `HTTPServer.Configuration` fills them in.
struct ParserLimits: Sendable {
    /// Request line bytes, CRLF excluded; longer → 414.
    var maxRequestLineBytes = 8 * 1024
    /// Header section bytes after the request line; larger → 431.
    var maxHeaderBytes = 16 * 1024
    /// Header fields; more → 431.
    var maxHeaderCount = 100
    /// Decoded body bytes; larger → 413.
    var maxBodyBytes = 64 * 1024
    /// A chunk-size line including extensions; longer → 400.
    var maxChunkLineBytes = 1024
    /// Raw bytes of a chunked body as sent (chunk-size lines, extensions, data, CRLFs, trailers); more → 413.
    /// The decoded limit alone would let 1-byte chunks with 1 KiB extensions make the server buffer ~1000× it.
    var maxChunkedBodyWireBytes = 128 * 1024
    /// A route's raised body limit (`Router.add(maxBodyBytes:)`), asked only for a body that would exceed
    /// `maxBodyBytes` (a larger Content-Length, or any chunked body), so other requests pay no route match.
    var routeBodyLimit: (@Sendable (HTTPMethod, String) -> Int?)? = nil

    /// The decoded and wire limits of a body of `method` `path`: the route's raised limit when it has one, with the
    /// same framing allowance on top for chunked bodies.
    func bodyLimits(_ method: HTTPMethod, _ path: String) -> (body: Int, wire: Int) {
        guard let raised = routeBodyLimit?(method, path), raised > maxBodyBytes else {
            return (maxBodyBytes, maxChunkedBodyWireBytes)
        }
        let framing = max(0, maxChunkedBodyWireBytes - maxBodyBytes)
        let (wire, overflow) = raised.addingReportingOverflow(framing)
        return (raised, overflow ? Int.max : wire)
    }
}

/// A framing or syntax failure: the connection answers with `status` and closes (RFC 9112 §9.6).
struct HTTPParseError: Error, Equatable, Sendable {
    var status: Int
    var code: String
    var message: String

    static func badRequest(_ message: String) -> HTTPParseError {
        HTTPParseError(status: 400, code: "BAD_REQUEST", message: message)
    }
}

/// A syntactically valid request, before routing.
struct ParsedRequest: Sendable {
    var method: HTTPMethod
    var path: String
    var query: String?
    var versionMinor: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    /// HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    var keepAlive: Bool
    /// The raw `X-Request-Id` value, validated later.
    var requestIDHeader: String?
}

/// What one `parse` call found.
enum ParseOutcome: Sendable {
    /// The request is incomplete; call again with the same start and more bytes.
    case needMore
    /// A request ended `consumed` bytes after the buffer start; leftover bytes are the next request.
    case request(ParsedRequest, consumed: Int)
    /// Answer `error.status` and close.
    case failure(HTTPParseError)
}

/// Incremental HTTP/1.1 request parser (RFC 9112), fed the growing bytes of one request.
///
/// Each call receives the buffer from the first byte of the current request; the parser remembers
/// how far it scanned, so byte-by-byte arrival costs O(n) overall. It never reads past the request
/// it returns: pipelined bytes stay with the caller (backpressure, NIO's rule).
struct RequestParser: Sendable {
    let limits: ParserLimits

    private enum BodyFraming: Sendable { case none, length(Int), chunked }

    private struct Head: Sendable {
        var request: ParsedRequest
        var framing: BodyFraming
        var bodyStart: Int
        var expectContinue: Bool
        /// Decoded body limit for this request (the route's raised one, or `maxBodyBytes`).
        var maxBodyBytes: Int
        /// Raw chunked-body limit for this request.
        var maxChunkedBodyWireBytes: Int
    }

    private enum ChunkPhase: Sendable { case size, data(Int), dataEnd, trailers(Int) }

    private enum State: Sendable {
        case head(scanned: Int, firstLineEnd: Int?)
        case body(Head)
        case chunked(Head, cursor: Int, phase: ChunkPhase)
    }

    private var state: State = .head(scanned: 0, firstLineEnd: nil)
    /// Set once when a head with `Expect: 100-continue` is accepted and its body has not arrived;
    /// the connection sends `100 Continue` and clears it (RFC 9110 §10.1.1).
    var continueRequested = false
    private var continueDone = false

    init(limits: ParserLimits) { self.limits = limits }

    /// Whether the parser holds a partial request (used to tell idle from slow clients).
    var isMidRequest: Bool {
        if case .head(let scanned, _) = state { return scanned > 0 }
        return true
    }

    /// Whether the head is complete and the body is still arriving (body deadline applies).
    var isReadingBody: Bool {
        if case .head = state { return false }
        return true
    }

    /// Forgets the current request; call after `.request` or before reusing on a new connection.
    mutating func reset() {
        state = .head(scanned: 0, firstLineEnd: nil)
        continueRequested = false
        continueDone = false
    }

    mutating func parse(_ bytes: [UInt8]) -> ParseOutcome {
        bytes.withUnsafeBufferPointer { parse($0) }
    }

    mutating func parse(_ buf: UnsafeBufferPointer<UInt8>) -> ParseOutcome {
        switch state {
        case .head(let scanned, let firstLineEnd):
            return parseHead(buf, scanned: scanned, firstLineEnd: firstLineEnd)
        case .body(let head):
            return finishLengthBody(buf, head)
        case .chunked(var head, let cursor, let phase):
            return parseChunked(buf, &head, cursor: cursor, phase: phase)
        }
    }

    // MARK: head

    private mutating func parseHead(_ buf: UnsafeBufferPointer<UInt8>, scanned: Int, firstLineEnd: Int?) -> ParseOutcome {
        let count = buf.count
        // RFC 9112 §2.2: ignore empty lines before the request line.
        var start = 0
        while start + 1 < count, buf[start] == 0x0D, buf[start + 1] == 0x0A { start += 2 }
        if start > limits.maxRequestLineBytes { return .failure(.badRequest("Too many empty lines before the request")) }
        var lineEnd = firstLineEnd
        var i = max(scanned, start)
        var headEnd: Int? = nil
        while i < count {
            let b = buf[i]
            if b == 0x0A {
                // A bare LF would otherwise leave the head unterminated until the deadline.
                guard i > start, buf[i - 1] == 0x0D else { return .failure(.badRequest("Bare LF in request head")) }
                if lineEnd == nil { lineEnd = i }
                if i >= 3, buf[i - 2] == 0x0A, buf[i - 3] == 0x0D, i - 3 > start {
                    headEnd = i + 1
                    break
                }
            } else if b == 0x0D, i + 1 < count, buf[i + 1] != 0x0A {
                return .failure(.badRequest("Bare CR in request head"))  // RFC 9112 §2.2
            }
            i += 1
        }
        // Keep the leading CR when the buffer ends mid-way through a skipped CRLF.
        guard let end = headEnd else {
            state = .head(scanned: max(start, count > 3 ? count - 3 : 0), firstLineEnd: lineEnd)
            if let lineEnd {
                if lineEnd - start > limits.maxRequestLineBytes + 1 { return .failure(Self.uriTooLong) }
                if count - (lineEnd + 1) > limits.maxHeaderBytes + 2 { return .failure(Self.headersTooLarge) }
            } else if count - start > limits.maxRequestLineBytes + 1 {
                return .failure(Self.uriTooLong)
            }
            return .needMore
        }
        guard let requestLineEnd = lineEnd else { return .failure(.badRequest("Malformed request head")) }
        // requestLineEnd indexes the LF; the request line excludes CR LF.
        guard requestLineEnd - 1 >= start, buf[requestLineEnd - 1] == 0x0D else {
            return .failure(.badRequest("Request line must end with CRLF"))
        }
        if requestLineEnd - 1 - start > limits.maxRequestLineBytes { return .failure(Self.uriTooLong) }
        if end - (requestLineEnd + 1) > limits.maxHeaderBytes + 2 { return .failure(Self.headersTooLarge) }

        switch parseRequestLineAndHeaders(buf, start: start, lineEnd: requestLineEnd, headEnd: end) {
        case .failure(let error):
            return .failure(error)
        case .success(let head):
            switch head.framing {
            case .none:
                reset()
                return .request(head.request, consumed: head.bodyStart)
            case .length:
                if head.expectContinue, !continueDone, count == head.bodyStart {
                    continueRequested = true
                    continueDone = true
                }
                state = .body(head)
                return finishLengthBody(buf, head)
            case .chunked:
                if head.expectContinue, !continueDone, count == head.bodyStart {
                    continueRequested = true
                    continueDone = true
                }
                var h = head
                return parseChunked(buf, &h, cursor: head.bodyStart, phase: .size)
            }
        }
    }

    private static let uriTooLong = HTTPParseError(status: 414, code: "URI_TOO_LONG", message: "Request line too long")
    private static let headersTooLarge = HTTPParseError(
        status: 431, code: "HEADERS_TOO_LARGE", message: "Request header fields too large")
    private static let bodyTooLarge = HTTPParseError(
        status: 413, code: "PAYLOAD_TOO_LARGE", message: "Request body too large")
    private static let chunkedBodyTooLarge = HTTPParseError(
        status: 413, code: "PAYLOAD_TOO_LARGE", message: "Chunked request body too large on the wire")

    private func parseRequestLineAndHeaders(
        _ buf: UnsafeBufferPointer<UInt8>, start: Int, lineEnd: Int, headEnd: Int
    ) -> Result<Head, HTTPParseError> {
        // request-line = method SP request-target SP HTTP-version (RFC 9112 §3), exactly one SP each.
        let lineStop = lineEnd - 1
        var sp1 = start
        while sp1 < lineStop, buf[sp1] != 0x20 { sp1 += 1 }
        guard sp1 < lineStop, sp1 > start else { return .failure(.badRequest("Malformed request line")) }
        var sp2 = sp1 + 1
        while sp2 < lineStop, buf[sp2] != 0x20 { sp2 += 1 }
        guard sp2 < lineStop, sp2 > sp1 + 1 else { return .failure(.badRequest("Malformed request line")) }
        for k in start..<sp1 where !Self.isTokenByte(buf[k]) {
            return .failure(.badRequest("Invalid method"))
        }
        // Version: exactly "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3).
        guard lineStop - (sp2 + 1) == 8 else { return .failure(.badRequest("Invalid HTTP version")) }
        let v = sp2 + 1
        guard buf[v] == 0x48, buf[v + 1] == 0x54, buf[v + 2] == 0x54, buf[v + 3] == 0x50, buf[v + 4] == 0x2F,
              buf[v + 6] == 0x2E, Self.isDigit(buf[v + 5]), Self.isDigit(buf[v + 7]) else {
            return .failure(.badRequest("Invalid HTTP version"))
        }
        guard buf[v + 5] == 0x31 else {
            return .failure(HTTPParseError(status: 505, code: "VERSION_NOT_SUPPORTED", message: "Only HTTP/1.x is supported"))
        }
        // HTTP/1.2+ is answered as 1.1 (RFC 9110 §6.2: same major version is compatible).
        let minor = buf[v + 7] == 0x30 ? 0 : 1

        guard let method = HTTPMethod.parse(UnsafeBufferPointer(rebasing: buf[start..<sp1])) else {
            return .failure(HTTPParseError(status: 501, code: "NOT_IMPLEMENTED", message: "Method not implemented"))
        }

        // request-target: visible ASCII only; no fragment (RFC 9112 §3.2).
        var pathStart = sp1 + 1
        let targetEnd = sp2
        for k in pathStart..<targetEnd {
            let b = buf[k]
            if b < 0x21 || b > 0x7E || b == 0x23 { return .failure(.badRequest("Invalid request target")) }
        }
        if buf[pathStart] == 0x2F {
            // origin-form
        } else if targetEnd - pathStart == 1, buf[pathStart] == 0x2A {
            guard method == .options else { return .failure(.badRequest("Invalid request target")) }
        } else if let afterScheme = Self.absoluteFormPathStart(buf, pathStart, targetEnd) {
            // absolute-form (RFC 9112 §3.2.2: servers MUST accept it); the authority is ignored.
            pathStart = afterScheme
        } else {
            return .failure(.badRequest("Invalid request target"))
        }
        var queryMark = pathStart
        while queryMark < targetEnd, buf[queryMark] != 0x3F { queryMark += 1 }
        let path = pathStart < queryMark
            ? String(decoding: UnsafeBufferPointer(rebasing: buf[pathStart..<queryMark]), as: UTF8.self) : "/"
        let query: String? = queryMark < targetEnd
            ? String(decoding: UnsafeBufferPointer(rebasing: buf[(queryMark + 1)..<targetEnd]), as: UTF8.self) : nil

        // Header fields.
        var headers = HTTPHeaders()
        headers.fields.reserveCapacity(8)
        var contentLength: Int? = nil
        var transferCodings: [String] = []
        var sawTransferEncoding = false
        var hostCount = 0
        var closeToken = false
        var keepAliveToken = false
        var expectContinue = false
        var requestID: String? = nil

        var ls = lineEnd + 1
        while ls < headEnd {
            var le = ls
            while le < headEnd, buf[le] != 0x0A { le += 1 }
            guard le < headEnd, le > ls, buf[le - 1] == 0x0D else {
                return .failure(.badRequest("Header lines must end with CRLF"))
            }
            let contentEnd = le - 1
            if contentEnd == ls { break }  // the empty line ending the head
            if buf[ls] == 0x20 || buf[ls] == 0x09 {
                return .failure(.badRequest("Obsolete line folding is not accepted"))  // RFC 9112 §5.2
            }
            var colon = ls
            while colon < contentEnd, buf[colon] != 0x3A {
                // Whitespace between name and colon is a 400 (RFC 9112 §5.1).
                guard Self.isTokenByte(buf[colon]) else { return .failure(.badRequest("Invalid header name")) }
                colon += 1
            }
            guard colon < contentEnd else {
                return .failure(.badRequest("Header line without colon"))
            }
            guard colon > ls else { return .failure(.badRequest("Empty header name")) }
            var vs = colon + 1
            var ve = contentEnd
            while vs < ve, buf[vs] == 0x20 || buf[vs] == 0x09 { vs += 1 }
            while ve > vs, buf[ve - 1] == 0x20 || buf[ve - 1] == 0x09 { ve -= 1 }
            for k in vs..<ve {
                let b = buf[k]
                // field-vchar / obs-text / SP / HTAB; NUL, CR, LF and other controls are refused.
                if (b < 0x20 && b != 0x09) || b == 0x7F { return .failure(.badRequest("Invalid header value")) }
            }
            if headers.count >= limits.maxHeaderCount { return .failure(Self.headersTooLarge) }
            let nameBytes = UnsafeBufferPointer(rebasing: buf[ls..<colon])
            let valueBytes = UnsafeBufferPointer(rebasing: buf[vs..<ve])
            let value = String(decoding: valueBytes, as: UTF8.self)
            headers.fields.append((name: String(decoding: nameBytes, as: UTF8.self), value: value))

            if Self.nameEquals(nameBytes, "content-length") {
                // RFC 9112 §6.3: a duplicate or non-numeric Content-Length is unrecoverable framing.
                guard contentLength == nil else { return .failure(.badRequest("Duplicate Content-Length")) }
                guard let n = Self.parseDecimal(valueBytes) else { return .failure(.badRequest("Invalid Content-Length")) }
                contentLength = n
            } else if Self.nameEquals(nameBytes, "transfer-encoding") {
                sawTransferEncoding = true
                for token in value.split(separator: ",") {
                    let t = token.trimmingOWS().lowercased()
                    if !t.isEmpty { transferCodings.append(t) }
                }
            } else if Self.nameEquals(nameBytes, "host") {
                hostCount += 1
            } else if Self.nameEquals(nameBytes, "connection") {
                for token in value.split(separator: ",") {
                    let t = token.trimmingOWS().lowercased()
                    if t == "close" { closeToken = true } else if t == "keep-alive" { keepAliveToken = true }
                }
            } else if Self.nameEquals(nameBytes, "expect") {
                guard value.lowercased() == "100-continue" else {
                    return .failure(HTTPParseError(status: 417, code: "EXPECTATION_FAILED", message: "Unsupported expectation"))
                }
                expectContinue = minor == 1
            } else if Self.nameEquals(nameBytes, "x-request-id") {
                requestID = value
            }
            ls = le + 1
        }

        // RFC 9112 §3.2: a 1.1 request needs exactly one Host; any request with two is invalid.
        if hostCount > 1 || (minor == 1 && hostCount == 0) {
            return .failure(.badRequest("A single Host header is required"))
        }

        var framing = BodyFraming.none
        var bodyLimit = limits.maxBodyBytes
        var wireLimit = limits.maxChunkedBodyWireBytes
        if limits.routeBodyLimit != nil, sawTransferEncoding || (contentLength ?? 0) > bodyLimit {
            (bodyLimit, wireLimit) = limits.bodyLimits(method, path)
        }
        if sawTransferEncoding {
            // RFC 9112 §6.1: TE with CL is request smuggling; TE in 1.0 is faulty framing.
            if contentLength != nil { return .failure(.badRequest("Content-Length with Transfer-Encoding")) }
            if minor == 0 { return .failure(.badRequest("Transfer-Encoding in HTTP/1.0")) }
            guard transferCodings.last == "chunked" else {
                return .failure(.badRequest("chunked must be the final transfer coding"))
            }
            if transferCodings.count > 1 {
                if transferCodings.dropLast().contains("chunked") {
                    return .failure(.badRequest("chunked applied more than once"))
                }
                return .failure(HTTPParseError(status: 501, code: "NOT_IMPLEMENTED", message: "Only chunked transfer coding is supported"))
            }
            framing = .chunked
        } else if let n = contentLength, n > 0 {
            if n > bodyLimit { return .failure(Self.bodyTooLarge) }
            framing = .length(n)
        }

        let keepAlive = minor == 1 ? !closeToken : (keepAliveToken && !closeToken)
        let request = ParsedRequest(
            method: method, path: path, query: query, versionMinor: minor, headers: headers, body: [],
            keepAlive: keepAlive, requestIDHeader: requestID)
        return .success(Head(request: request, framing: framing, bodyStart: headEnd, expectContinue: expectContinue,
                             maxBodyBytes: bodyLimit, maxChunkedBodyWireBytes: wireLimit))
    }

    // MARK: bodies

    private mutating func finishLengthBody(_ buf: UnsafeBufferPointer<UInt8>, _ head: Head) -> ParseOutcome {
        guard case .length(let n) = head.framing else { return .failure(.badRequest("Internal framing state")) }
        let available = buf.count - head.bodyStart
        guard available >= n else { return .needMore }
        var request = head.request
        request.body = Array(UnsafeBufferPointer(rebasing: buf[head.bodyStart..<(head.bodyStart + n)]))
        reset()
        return .request(request, consumed: head.bodyStart + n)
    }

    /// chunked-body = *chunk last-chunk trailer-section CRLF (RFC 9112 §7.1); trailers are discarded.
    private mutating func parseChunked(
        _ buf: UnsafeBufferPointer<UInt8>, _ head: inout Head, cursor startCursor: Int, phase startPhase: ChunkPhase
    ) -> ParseOutcome {
        var cursor = startCursor
        var phase = startPhase
        let count = buf.count
        while true {
            // The wire budget is checked at element boundaries only (never against how much has
            // arrived), so a body fed whole or in pieces gets the same verdict.
            if cursor - head.bodyStart > head.maxChunkedBodyWireBytes { return .failure(Self.chunkedBodyTooLarge) }
            switch phase {
            case .size:
                var lf = cursor
                let limit = min(count, cursor + limits.maxChunkLineBytes + 2)
                while lf < limit, buf[lf] != 0x0A { lf += 1 }
                guard lf < limit else {
                    if count - cursor > limits.maxChunkLineBytes + 1 { return .failure(.badRequest("Chunk size line too long")) }
                    state = .chunked(head, cursor: cursor, phase: phase)
                    return .needMore
                }
                guard lf > cursor, buf[lf - 1] == 0x0D else { return .failure(.badRequest("Chunk size line must end with CRLF")) }
                var k = cursor
                var size: UInt64 = 0
                while k < lf - 1, let h = Hex.value(of: buf[k]) {
                    guard k - cursor < 16 else { return .failure(.badRequest("Chunk size too long")) }
                    size = size << 4 | UInt64(h)
                    k += 1
                }
                guard k > cursor else { return .failure(.badRequest("Invalid chunk size")) }
                // Optional chunk extensions: BWS ";" …; ignored, but controls are refused.
                var e = k
                while e < lf - 1, buf[e] == 0x20 || buf[e] == 0x09 { e += 1 }
                if e < lf - 1 {
                    guard buf[e] == 0x3B else { return .failure(.badRequest("Invalid chunk size")) }
                    for x in e..<(lf - 1) where (buf[x] < 0x20 && buf[x] != 0x09) || buf[x] == 0x7F {
                        return .failure(.badRequest("Invalid chunk extension"))
                    }
                }
                if size > UInt64(head.maxBodyBytes - head.request.body.count) { return .failure(Self.bodyTooLarge) }
                // The chunk's data must end inside the wire budget too (size is at most maxBodyBytes here).
                if lf + 1 + Int(size) - head.bodyStart > head.maxChunkedBodyWireBytes {
                    return .failure(Self.chunkedBodyTooLarge)
                }
                cursor = lf + 1
                phase = size == 0 ? .trailers(0) : .data(Int(size))
            case .data(let remaining):
                let available = count - cursor
                if available <= 0 {
                    state = .chunked(head, cursor: cursor, phase: phase)
                    return .needMore
                }
                let take = min(available, remaining)
                head.request.body.append(contentsOf: UnsafeBufferPointer(rebasing: buf[cursor..<(cursor + take)]))
                cursor += take
                phase = take == remaining ? .dataEnd : .data(remaining - take)
            case .dataEnd:
                guard count - cursor >= 2 else {
                    if count - cursor == 1, buf[cursor] != 0x0D { return .failure(.badRequest("Chunk data must end with CRLF")) }
                    state = .chunked(head, cursor: cursor, phase: phase)
                    return .needMore
                }
                guard buf[cursor] == 0x0D, buf[cursor + 1] == 0x0A else {
                    return .failure(.badRequest("Chunk data must end with CRLF"))
                }
                cursor += 2
                phase = .size
            case .trailers(let seen):
                var lf = cursor
                while lf < count, buf[lf] != 0x0A { lf += 1 }
                let lineBytes = lf - cursor
                if seen + lineBytes > limits.maxHeaderBytes { return .failure(Self.headersTooLarge) }
                guard lf < count else {
                    state = .chunked(head, cursor: cursor, phase: phase)
                    return .needMore
                }
                guard lf > cursor, buf[lf - 1] == 0x0D else { return .failure(.badRequest("Trailer lines must end with CRLF")) }
                if lf - 1 == cursor {
                    let request = head.request
                    reset()
                    return .request(request, consumed: lf + 1)
                }
                for x in cursor..<(lf - 1) where (buf[x] < 0x20 && buf[x] != 0x09) || buf[x] == 0x7F {
                    return .failure(.badRequest("Invalid trailer field"))
                }
                phase = .trailers(seen + lineBytes + 1)
                cursor = lf + 1
            }
        }
    }

    // MARK: byte classes

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// 1–18 ASCII digits (no sign, no list), so the value always fits in Int.
    static func parseDecimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var n = 0
        for b in bytes {
            guard isDigit(b) else { return nil }
            n = n * 10 + Int(b - 0x30)
        }
        return n
    }

    /// Case-insensitive compare of a header name to a lowercase ASCII literal.
    static func nameEquals(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        let l = lower.utf8Start
        for k in 0..<bytes.count where bytes[k] | 0x20 != l[k] {
            // `| 0x20` folds A–Z; it also maps '-' (0x2D) to 0x2D, so dashes still compare equal.
            return false
        }
        return true
    }

    /// For "http://authority/path?q" returns the index of "/" (or of the end / "?" when absent).
    static func absoluteFormPathStart(_ buf: UnsafeBufferPointer<UInt8>, _ s: Int, _ e: Int) -> Int? {
        var k = s
        while k < e, buf[k] != 0x3A { k += 1 }
        let scheme = String(decoding: UnsafeBufferPointer(rebasing: buf[s..<k]), as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https", k + 2 < e, buf[k + 1] == 0x2F, buf[k + 2] == 0x2F else { return nil }
        k += 3
        let authorityStart = k
        while k < e, buf[k] != 0x2F, buf[k] != 0x3F { k += 1 }
        guard k > authorityStart else { return nil }
        return k
    }
}

extension Substring {
    /// Trims optional whitespace (SP / HTAB) at both ends (RFC 9110 §5.6.3).
    func trimmingOWS() -> Substring {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
