import Primitives

/// Strict, incremental HTTP/1.1 response parser (RFC 9112) with limits on every dimension.
///
/// Feed it bytes as they arrive; it returns the response once framing says it is complete. It never
/// indexes out of bounds or overflows on hostile input (fuzzed by `bench/fuzz-http-client`), and it
/// rejects what makes framing ambiguous: Content-Length together with Transfer-Encoding, differing
/// Content-Lengths, transfer codings other than chunked, obs-fold, bare CR or LF, whitespace before a
/// colon, control characters in values.
public struct ResponseParser: Sendable {
    /// Size limits; a response that exceeds one fails with `.tooLarge`.
    public struct Limits: Sendable {
        /// Status line plus header section, bytes (also bounds a chunked body's trailer section).
        public var maxHeadBytes: Int
        /// Header fields.
        public var maxHeaderCount: Int
        /// Body bytes after de-chunking.
        public var maxBodyBytes: Int

        /// Defaults sized for JSON APIs: 16 KiB of headers, 100 fields, 8 MiB of body.
        public init(maxHeadBytes: Int = 16 * 1024, maxHeaderCount: Int = 100, maxBodyBytes: Int = 8 * 1024 * 1024) {
            self.maxHeadBytes = maxHeadBytes
            self.maxHeaderCount = maxHeaderCount
            self.maxBodyBytes = maxBodyBytes
        }
    }

    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(bytes: Int, count: Int)
        case untilClose
        case done
    }

    private let limits: Limits
    private let bodyless: Bool
    private var state = State.head
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already consumed (compacted when it grows).
    private var position = 0
    /// Where the search for the end of the head resumes.
    private var scanned = 0
    private var interimResponses = 0
    private var status = 0
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    private var closeDelimited = false
    private var keepAliveHeader = true
    private var minorVersion = 1

    /// A parser for the response to one request; `requestMethod` HEAD means no body (RFC 9112 §6.3).
    public init(limits: Limits = Limits(), requestMethod: String = "GET") {
        self.limits = limits
        self.bodyless = requestMethod == "HEAD"
    }

    /// Whether the connection may carry another request after this response: HTTP/1.1, no
    /// `Connection: close`, length-delimited, and no bytes beyond the response.
    public var connectionReusable: Bool {
        guard case .done = state else { return false }
        return minorVersion == 1 && keepAliveHeader && !closeDelimited && position == buffer.count
    }

    /// Adds bytes; returns the response once complete (further calls then return it again, adding nothing).
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(HTTPClientError) -> HTTPClientResponse? {
        if case .done = state {
            buffer.append(contentsOf: bytes)   // stray bytes after the response: recorded, makes the connection unusable
            return response
        }
        buffer.append(contentsOf: bytes)
        try advance()
        return isDone ? response : nil
    }

    /// The stream ended. Completes a close-delimited body; otherwise the response was cut short.
    public mutating func finish() throws(HTTPClientError) -> HTTPClientResponse {
        switch state {
        case .done:
            return response
        case .untilClose:
            state = .done
            return response
        case .head where buffer.count == position && status == 0:
            throw HTTPClientError(.io, "connection closed before any response byte")
        default:
            throw HTTPClientError(.io, "connection closed before the response was complete")
        }
    }

    private var isDone: Bool { if case .done = state { return true } else { return false } }
    private var response: HTTPClientResponse { HTTPClientResponse(status: status, headers: headers, body: body) }

    private mutating func advance() throws(HTTPClientError) {
        while true {
            switch state {
            case .head:
                guard try parseHead() else { return }
            case .fixed(let remaining):
                let left = takeBody(remaining)
                if left == 0 { state = .done } else { state = .fixed(remaining: left); compact(); return }
            case .chunkSize:
                guard let line = try takeLine(limit: 4096, what: "chunk size line") else { return }
                let size = try Self.chunkSize(line)
                guard size <= limits.maxBodyBytes - body.count else {
                    throw HTTPClientError(.tooLarge, "chunked body exceeds \(limits.maxBodyBytes) bytes")
                }
                state = size == 0 ? .trailers(bytes: 0, count: 0) : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let left = takeBody(remaining)
                if left == 0 { state = .chunkDataEnd } else { state = .chunkData(remaining: left); compact(); return }
            case .chunkDataEnd:
                guard buffer.count - position >= 2 else { return }
                guard buffer[position] == 13, buffer[position + 1] == 10 else {
                    throw HTTPClientError(.protocolError, "chunk data not followed by CRLF")
                }
                position += 2
                state = .chunkSize
            case .trailers(let bytes, let count):
                guard let line = try takeLine(limit: limits.maxHeadBytes - bytes, what: "trailer section") else { return }
                if line.isEmpty { state = .done; return }
                guard count + 1 <= limits.maxHeaderCount else { throw HTTPClientError(.tooLarge, "more than \(limits.maxHeaderCount) trailer fields") }
                _ = try Self.field(line)   // validated, then dropped: trailers never carry anything we use
                state = .trailers(bytes: bytes + line.count + 2, count: count + 1)
            case .untilClose:
                let available = buffer.count - position
                guard available <= limits.maxBodyBytes - body.count else {
                    throw HTTPClientError(.tooLarge, "body exceeds \(limits.maxBodyBytes) bytes")
                }
                body.append(contentsOf: buffer[position...])
                position = buffer.count
                compact()
                return
            case .done:
                return
            }
        }
    }

    /// Moves up to `remaining` buffered body bytes into `body`; returns how many are still to come.
    private mutating func takeBody(_ remaining: Int) -> Int {
        let available = min(remaining, buffer.count - position)
        body.append(contentsOf: buffer[position..<(position + available)])
        position += available
        return remaining - available
    }

    /// Drops consumed bytes once they dominate the buffer (keeps appends amortised O(1)).
    private mutating func compact() {
        if position > 0, position >= buffer.count / 2 {
            buffer.removeFirst(position)
            scanned = max(0, scanned - position)
            position = 0
        }
    }

    /// A CRLF-terminated line (without CRLF), or nil when more bytes are needed.
    private mutating func takeLine(limit: Int, what: String) throws(HTTPClientError) -> ArraySlice<UInt8>? {
        var index = position
        while index < buffer.count {
            let byte = buffer[index]
            if byte == 10 { throw HTTPClientError(.protocolError, "bare LF in \(what)") }
            if byte == 13 {
                guard index + 1 < buffer.count else { return nil }
                guard buffer[index + 1] == 10 else { throw HTTPClientError(.protocolError, "bare CR in \(what)") }
                let line = buffer[position..<index]
                position = index + 2
                return line
            }
            if index - position >= limit { throw HTTPClientError(.tooLarge, "\(what) exceeds \(max(0, limit)) bytes") }
            index += 1
        }
        if buffer.count - position > limit { throw HTTPClientError(.tooLarge, "\(what) exceeds \(max(0, limit)) bytes") }
        return nil
    }

    /// Parses the status line and header section once CRLFCRLF arrived; false when more bytes are needed.
    private mutating func parseHead() throws(HTTPClientError) -> Bool {
        var end: Int?
        var index = max(position, scanned)
        while index + 3 < buffer.count {
            if buffer[index] == 13, buffer[index + 1] == 10, buffer[index + 2] == 13, buffer[index + 3] == 10 { end = index; break }
            index += 1
        }
        guard let end else {
            scanned = max(position, buffer.count - 3)
            if buffer.count - position > limits.maxHeadBytes {
                throw HTTPClientError(.tooLarge, "response head exceeds \(limits.maxHeadBytes) bytes")
            }
            return false
        }
        guard end + 4 - position <= limits.maxHeadBytes else {
            throw HTTPClientError(.tooLarge, "response head exceeds \(limits.maxHeadBytes) bytes")
        }
        let head = buffer[position..<end]
        position = end + 4
        scanned = position
        var lines: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        var cursor = head.startIndex
        while cursor < head.endIndex {
            let byte = head[cursor]
            if byte == 13 {
                guard cursor + 1 < head.endIndex, head[cursor + 1] == 10 else { throw HTTPClientError(.protocolError, "bare CR in response head") }
                lines.append(head[start..<cursor])
                cursor += 2
                start = cursor
                continue
            }
            if byte == 10 { throw HTTPClientError(.protocolError, "bare LF in response head") }
            cursor += 1
        }
        lines.append(head[start..<head.endIndex])
        try parseStatusLine(lines[0])
        headers = []
        guard lines.count - 1 <= limits.maxHeaderCount else { throw HTTPClientError(.tooLarge, "more than \(limits.maxHeaderCount) header fields") }
        for line in lines.dropFirst() {
            // RFC 9112 §5.2: obs-fold is rejected by a strict recipient.
            if let first = line.first, first == 32 || first == 9 { throw HTTPClientError(.protocolError, "obs-fold (line folding) in header section") }
            headers.append(try Self.field(line))
        }
        // RFC 9110 §15.2: interim 1xx responses precede the final one; 101 would switch protocols, which we never ask for.
        if status < 200 {
            guard status != 101 else { throw HTTPClientError(.protocolError, "unexpected 101 Switching Protocols") }
            interimResponses += 1
            guard interimResponses <= 8 else { throw HTTPClientError(.protocolError, "too many interim 1xx responses") }
            headers = []
            status = 0
            return true   // state stays .head: parse the next head
        }
        try decideFraming()
        return true
    }

    private mutating func parseStatusLine(_ line: ArraySlice<UInt8>) throws(HTTPClientError) {
        // status-line = HTTP-version SP status-code SP [ reason-phrase ]  (RFC 9112 §4); the second SP
        // is required by the grammar but a few servers omit it with an empty reason, so it is optional here.
        let bytes = Array(line)
        guard bytes.count >= 12, bytes.starts(with: Array("HTTP/1.".utf8)),
              bytes[7] == UInt8(ascii: "0") || bytes[7] == UInt8(ascii: "1"), bytes[8] == 32 else {
            throw HTTPClientError(.protocolError, "malformed status line")
        }
        minorVersion = bytes[7] == UInt8(ascii: "1") ? 1 : 0
        var code = 0
        for index in 9..<12 {
            let digit = bytes[index]
            guard digit >= 48, digit <= 57 else { throw HTTPClientError(.protocolError, "malformed status code") }
            code = code * 10 + Int(digit - 48)
        }
        guard code >= 100, code <= 599 else { throw HTTPClientError(.protocolError, "status code \(code) out of range") }
        if bytes.count > 12 {
            guard bytes[12] == 32 else { throw HTTPClientError(.protocolError, "malformed status line") }
            for byte in bytes[13...] where !(byte == 9 || (byte >= 32 && byte != 127)) {
                throw HTTPClientError(.protocolError, "control character in reason phrase")
            }
        }
        status = code
    }

    /// `name: value` with RFC 9110 §5.1 token names and §5.5 field values (OWS trimmed).
    static func field(_ line: ArraySlice<UInt8>) throws(HTTPClientError) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
            throw HTTPClientError(.protocolError, "header line without a field name")
        }
        let name = line[line.startIndex..<colon]
        for byte in name where !isTokenByte(byte) {
            throw HTTPClientError(.protocolError, "invalid character in header field name")   // includes SP before the colon (RFC 9112 §5.1)
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
        while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
        for byte in value where !(byte == 9 || (byte >= 32 && byte != 127)) {
            throw HTTPClientError(.protocolError, "control character in header field value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// RFC 9112 §6.3: the message body length, strictest reading.
    private mutating func decideFraming() throws(HTTPClientError) {
        var contentLength: Int?
        var transferEncoding: [String] = []
        for (name, value) in headers {
            if Self.equalsIgnoringASCIICase(name, "content-length") {
                // A list of identical values is tolerated (§6.3 rule 5); anything else is a framing attack.
                for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let text = item.trimmingOWS
                    guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let length = Int(text) else {
                        throw HTTPClientError(.protocolError, "invalid Content-Length")
                    }
                    if let previous = contentLength, previous != length { throw HTTPClientError(.protocolError, "conflicting Content-Length values") }
                    contentLength = length
                }
            } else if Self.equalsIgnoringASCIICase(name, "transfer-encoding") {
                transferEncoding += value.split(separator: ",").map { $0.trimmingOWS.lowercased() }
            } else if Self.equalsIgnoringASCIICase(name, "connection") {
                if value.split(separator: ",").contains(where: { Self.equalsIgnoringASCIICase($0.trimmingOWS, "close") }) { keepAliveHeader = false }
            }
        }
        if bodyless || status == 204 || status == 304 { state = .done; return }
        if !transferEncoding.isEmpty {
            guard contentLength == nil else { throw HTTPClientError(.protocolError, "both Content-Length and Transfer-Encoding") }
            guard transferEncoding == ["chunked"] else { throw HTTPClientError(.protocolError, "unsupported Transfer-Encoding") }
            state = .chunkSize
            return
        }
        if let contentLength {
            guard contentLength <= limits.maxBodyBytes else { throw HTTPClientError(.tooLarge, "Content-Length \(contentLength) exceeds \(limits.maxBodyBytes) bytes") }
            state = contentLength == 0 ? .done : .fixed(remaining: contentLength)
            return
        }
        closeDelimited = true
        state = .untilClose
    }

    /// chunk-size [ chunk-ext ]: 1–15 hex digits (no overflow), extensions ignored but syntax-checked lightly.
    private static func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTPClientError) -> Int {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let value = Hex.value(of: line[index]).map(Int.init) {
            guard digits < 15 else { throw HTTPClientError(.tooLarge, "chunk size too large") }
            size = size << 4 | value
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw HTTPClientError(.protocolError, "invalid chunk size") }
        if index < line.endIndex {
            // RFC 9112 §7.1.1: BWS ";" chunk-ext; anything else after the size is garbage.
            var rest = line[index...]
            while let first = rest.first, first == 32 || first == 9 { rest = rest.dropFirst() }
            guard rest.first == UInt8(ascii: ";") else { throw HTTPClientError(.protocolError, "invalid chunk size line") }
        }
        return size
    }

    /// ASCII case-insensitive comparison (header names and tokens).
    static func equalsIgnoringASCIICase(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
        return zip(x, y).allSatisfy { lower($0) == lower($1) }
    }
}

extension StringProtocol {
    /// Without leading/trailing SP and HTAB.
    var trimmingOWS: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
