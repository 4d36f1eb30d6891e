import Foundation
public import JSON
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP response as the wire carried it (a chunked body is de-chunked).
public struct HTTPResponse: CustomStringConvertible, Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed by our JSON module.
    public func json() throws -> JSONValue {
        do {
            return try JSONParser.parse(body)
        } catch {
            throw HarnessFailure(description: "response body is not JSON (\(error)): \(status) \(text)")
        }
    }

    /// An error body without its `request_id`, after checking that it equals the `X-Request-Id` header (so tests
    /// can compare the rest of the body as a whole).
    public func errorFields() throws -> JSONValue {
        guard case .object(let object) = try json() else { throw HarnessFailure(description: "not an object: \(text)") }
        guard let id = object["request_id"]?.stringValue, id == header("X-Request-Id") else {
            throw HarnessFailure(description: "request_id is not the X-Request-Id header: \(self)")
        }
        return .object(JSONObject(object.filter { $0.key != "request_id" }.map { ($0.key, $0.value) }))
    }

    public var description: String { "HTTP \(status) \(text)" }
}

/// The one raw-socket HTTP/1.1 test client: a blocking loopback connection that sends any bytes (well-formed or
/// hostile) and reads responses framed by Content-Length or chunked encoding, one after another (keep-alive).
public final class TestClient {
    public typealias Response = HTTPResponse
    public typealias Failure = HarnessFailure

    public let fd: Int32
    private var buffer: [UInt8] = []
    private let port: Int

    /// Connects to 127.0.0.1:`port`; `source` binds the client end first (any 127.x.y.z works on Linux loopback),
    /// so one test can be several clients. `timeout` bounds each receive and send, in seconds.
    public init(port: Int, timeout: Double = 5, from source: String? = nil) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw Failure(description: "bind \(source): \(String(cString: strerror(errno)))")
            }
        }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// Sends one well-formed request (headers in name order, `Content-Length` when there is a body) and reads its
    /// response; the connection stays open unless `headers` ask otherwise.
    public func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil,
                        host: String? = nil) throws -> HTTPResponse {
        try send(Self.head(method, path, host: host ?? "127.0.0.1:\(port)", headers: headers, body: body) + (body ?? []))
        do {
            return try readResponse(head: method == "HEAD")
        } catch let failure as Failure {
            throw Failure(description: "\(method) \(path): \(failure.description)")
        }
    }

    static func head(_ method: String, _ path: String, host: String, headers: [String: String], body: [UInt8]?) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// Reads more bytes; returns false on EOF, throws on timeout or error.
    @discardableResult
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n == 0 { return false }
            if errno == EINTR { continue }
            throw Failure(description: "recv: \(String(cString: strerror(errno))) after \(buffer.count) buffered bytes")
        }
    }

    /// Reads one response, framed by Content-Length or chunked encoding (none for 1xx/204 and `head` responses).
    public func readResponse(head: Bool = false) throws -> HTTPResponse {
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffer[...]) {
                let (status, headers) = try Self.parseHead(buffer[0..<end])
                let bodyStart = end + 4
                let noBody = head || status == 204 || (100..<200).contains(status)
                if !noBody, Self.value("transfer-encoding", headers)?.lowercased() == "chunked" {
                    while true {
                        if let (body, consumed) = try Self.dechunk(buffer[bodyStart...]) {
                            buffer.removeFirst(bodyStart + consumed)
                            return HTTPResponse(status: status, headers: headers, body: body)
                        }
                        guard try fill() else { throw Failure(description: "EOF inside a chunked body") }
                    }
                }
                let length = noBody ? 0 : Int(Self.value("content-length", headers) ?? "0") ?? 0
                while buffer.count < bodyStart + length {
                    guard try fill() else { throw Failure(description: "EOF inside body (\(buffer.count - bodyStart) of \(length) bytes)") }
                }
                let body = Array(buffer[bodyStart..<(bodyStart + length)])
                buffer.removeFirst(bodyStart + length)
                return HTTPResponse(status: status, headers: headers, body: body)
            }
            guard try fill() else { throw Failure(description: "EOF before a complete response head (\(buffer.count) bytes)") }
        }
    }

    /// Everything the server sends until it closes the connection (a reset after some bytes also ends it).
    public func readToEOF() throws -> [UInt8] {
        while true {
            do {
                guard try fill() else { break }
            } catch {
                if errno == ECONNRESET, !buffer.isEmpty { break }
                throw error
            }
        }
        defer { buffer = [] }
        return buffer
    }

    /// Whether a response byte (or EOF) is waiting, after at most `milliseconds`.
    public func hasInput(within milliseconds: Int32 = 0) -> Bool {
        if !buffer.isEmpty { return true }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }

    /// Sends `piece` repeatedly until the server answers (or closes), at most `limit` bytes;
    /// returns how many bytes went out. A send error (the server reset us) also stops the flood.
    @discardableResult
    public func flood(_ piece: [UInt8], limit: Int) -> Int {
        var sent = 0
        while sent < limit, !hasInput() {
            do { try send(piece) } catch { break }
            sent += piece.count
        }
        return sent
    }

    /// True when the server closed the connection (EOF, or RST) with no further bytes.
    public func isClosedByPeer() -> Bool {
        guard buffer.isEmpty else { return false }
        do { return try !fill() } catch { return errno == ECONNRESET }
    }

    /// Parses a whole response already read (e.g. to EOF): head, then the body framed as its headers say.
    public static func parse(_ bytes: [UInt8]) throws -> HTTPResponse {
        guard let end = find([13, 10, 13, 10], in: bytes[...]) else {
            throw Failure(description: "no complete response head in \(bytes.count) bytes")
        }
        let (status, headers) = try parseHead(bytes[0..<end])
        let rest = bytes[(end + 4)...]
        if value("transfer-encoding", headers)?.lowercased() == "chunked" {
            guard let (body, _) = try dechunk(rest) else { throw Failure(description: "incomplete chunked body") }
            return HTTPResponse(status: status, headers: headers, body: body)
        }
        var body = Array(rest)
        if let lengthText = value("content-length", headers), let length = Int(lengthText) {
            guard body.count >= length else { throw Failure(description: "body has \(body.count) of \(length) bytes") }
            body = Array(body[0..<length])
        }
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    private static func parseHead(_ bytes: ArraySlice<UInt8>) throws -> (Int, [(String, String)]) {
        var lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw Failure(description: "bad status line \(statusLine.debugDescription)")
        }
        let headers = lines.map { line -> (String, String) in
            let kv = line.split(separator: ":", maxSplits: 1)
            return (String(kv.first ?? ""), kv.count > 1 ? kv[1].trimmingCharacters(in: .whitespaces) : "")
        }
        return (status, headers)
    }

    private static func value(_ name: String, _ headers: [(String, String)]) -> String? {
        headers.first { $0.0.lowercased() == name }?.1
    }

    /// A chunked body (RFC 9112 §7.1) and the bytes it spans, or nil while incomplete.
    private static func dechunk(_ bytes: ArraySlice<UInt8>) throws -> ([UInt8], Int)? {
        var body: [UInt8] = []
        var at = bytes.startIndex
        while true {
            guard let lineEnd = find([13, 10], in: bytes[at...]) else { return nil }
            let sizeText = String(decoding: bytes[at..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw Failure(description: "bad chunk size line")
            }
            at = lineEnd + 2
            if size == 0 {
                // Trailers (none expected) end with an empty line.
                while true {
                    guard let end = find([13, 10], in: bytes[at...]) else { return nil }
                    let empty = end == at
                    at = end + 2
                    if empty { return (body, at - bytes.startIndex) }
                }
            }
            guard bytes.endIndex - at >= size + 2 else { return nil }
            body += bytes[at..<(at + size)]
            at += size + 2
        }
    }

    private static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = haystack.startIndex
        while i <= haystack.endIndex - needle.count {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

/// One persistent HTTP/1.1 connection (keep-alive), as SDKs and backends use: requests in sequence on one socket.
public typealias KeepAliveConnection = TestClient

/// A small blocking HTTP/1.1 client for whole requests: one connection per request (`Connection: close`), the
/// response read to EOF.
public struct RawHTTPClient: Sendable {
    public let port: Int
    public var timeout: Double = 15

    public init(port: Int, timeout: Double = 15) {
        self.port = port
        self.timeout = timeout
    }

    public func get(_ path: String, headers: [String: String] = [:]) throws -> HTTPResponse {
        try request("GET", path, headers: headers)
    }

    public func delete(_ path: String, headers: [String: String] = [:]) throws -> HTTPResponse {
        try request("DELETE", path, headers: headers)
    }

    /// Sends `json` serialized compactly with `Content-Type: application/json`.
    public func send(_ method: String, _ path: String, json: JSONValue, headers: [String: String] = [:]) throws -> HTTPResponse {
        var all = headers
        if all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        return try request(method, path, headers: all, body: Array(json.serializedString().utf8))
    }

    public func post(_ path: String, json: JSONValue, headers: [String: String] = [:]) throws -> HTTPResponse {
        try send("POST", path, json: json, headers: headers)
    }

    public func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws -> HTTPResponse {
        do {
            let connection = try TestClient(port: port, timeout: timeout)
            var all = headers
            all["Connection"] = "close"
            try connection.send(TestClient.head(method, path, host: "127.0.0.1:\(port)", headers: all, body: body) + (body ?? []))
            return try Self.parse(connection.readToEOF(), method: method, path: path)
        } catch let failure as HarnessFailure where !failure.description.hasPrefix("\(method) \(path): ") {
            throw HarnessFailure(description: "\(method) \(path): \(failure.description)")
        }
    }

    /// Parses a whole response read to EOF; failures name the request.
    public static func parse(_ bytes: [UInt8], method: String, path: String) throws -> HTTPResponse {
        do {
            return try TestClient.parse(bytes)
        } catch let failure as HarnessFailure {
            throw HarnessFailure(description: "\(method) \(path): \(failure.description)")
        }
    }

    /// Sends raw `request` bytes on a fresh connection and returns everything read until the server closes it.
    public static func exchange(port: Int, _ request: String, timeout: Double = 5) throws -> String {
        let connection = try TestClient(port: port, timeout: timeout)
        try connection.send(request)
        return String(decoding: try connection.readToEOF(), as: UTF8.self)
    }
}
