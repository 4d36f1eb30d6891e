import Foundation
import Glibc
import JSON

/// One HTTP response as the wire carried it.
struct HTTPResponse: CustomStringConvertible {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed by our JSON module.
    func json() throws -> JSONValue {
        do {
            return try JSONParser.parse(body)
        } catch {
            throw HarnessFailure(description: "response body is not JSON (\(error)): \(status) \(text)")
        }
    }

    /// An error body without its `request_id`, after checking that it equals the `X-Request-Id` header (so tests
    /// can compare the rest of the body as a whole).
    func errorFields() throws -> JSONValue {
        guard case .object(let object) = try json() else { throw HarnessFailure(description: "not an object: \(text)") }
        guard let id = object["request_id"]?.stringValue, id == header("X-Request-Id") else {
            throw HarnessFailure(description: "request_id is not the X-Request-Id header: \(self)")
        }
        return .object(JSONObject(object.filter { $0.key != "request_id" }.map { ($0.key, $0.value) }))
    }

    var description: String { "HTTP \(status) \(text)" }
}

/// A small blocking HTTP/1.1 client over a loopback TCP socket: one connection per request
/// (`Connection: close`), the response read to EOF and framed by Content-Length.
struct HTTPClient: Sendable {
    let port: Int
    var timeout: Double = 15

    func get(_ path: String, headers: [String: String] = [:]) throws -> HTTPResponse {
        try request("GET", path, headers: headers)
    }

    func delete(_ path: String, headers: [String: String] = [:]) throws -> HTTPResponse {
        try request("DELETE", path, headers: headers)
    }

    /// Sends `json` serialized compactly with `Content-Type: application/json`.
    func send(_ method: String, _ path: String, json: JSONValue, headers: [String: String] = [:]) throws -> HTTPResponse {
        var all = headers
        if all["Content-Type"] == nil { all["Content-Type"] = "application/json" }
        return try request(method, path, headers: all, body: Array(json.serializedString().utf8))
    }

    func post(_ path: String, json: JSONValue, headers: [String: String] = [:]) throws -> HTTPResponse {
        try send("POST", path, json: json, headers: headers)
    }

    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws -> HTTPResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessFailure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw HarnessFailure(description: "connect to 127.0.0.1:\(port): errno \(errno)") }

        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + (body ?? [])
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw HarnessFailure(description: "send: errno \(errno)") }
            offset += n
        }

        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += chunk[0..<n]; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            if errno == ECONNRESET, !received.isEmpty { break }
            throw HarnessFailure(description: "recv from \(method) \(path): errno \(errno) after \(received.count) bytes")
        }
        return try Self.parse(received, method: method, path: path)
    }

    static func parse(_ bytes: [UInt8], method: String, path: String) throws -> HTTPResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4,
              let end = (0...(bytes.count - 4)).first(where: { Array(bytes[$0..<($0 + 4)]) == separator }) else {
            throw HarnessFailure(description: "\(method) \(path): no complete response head in \(bytes.count) bytes")
        }
        var lines = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else {
            throw HarnessFailure(description: "\(method) \(path): bad status line \(statusLine.debugDescription)")
        }
        let headers = lines.map { line -> (String, String) in
            let kv = line.split(separator: ":", maxSplits: 1)
            return (String(kv.first ?? ""), kv.count > 1 ? kv[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var body = Array(bytes[(end + 4)...])
        if let lengthText = headers.first(where: { $0.0.lowercased() == "content-length" })?.1, let length = Int(lengthText) {
            guard body.count >= length else {
                throw HarnessFailure(description: "\(method) \(path): body has \(body.count) of \(length) bytes")
            }
            body = Array(body[0..<length])
        }
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}

/// One persistent HTTP/1.1 connection (keep-alive), as SDKs and backends use: requests in sequence on one socket,
/// each response framed by Content-Length.
final class KeepAliveConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeout: Int = 15) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessFailure(description: "socket: errno \(errno)") }
        var tv = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw HarnessFailure(description: "connect: errno \(errno)")
        }
    }

    deinit { close(fd) }

    func request(_ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8]? = nil) throws -> HTTPResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: e2e\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + (body ?? [])
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw HarnessFailure(description: "send: errno \(errno)") }
            offset += n
        }
        return try readResponse(method: method, path: path)
    }

    private func readResponse(method: String, path: String) throws -> HTTPResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            if buffer.count >= 4, let end = (0...(buffer.count - 4)).first(where: { Array(buffer[$0..<($0 + 4)]) == separator }) {
                let head = String(decoding: buffer[0..<end], as: UTF8.self).lowercased()
                let lengthLine = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                let length = lengthLine.flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                while buffer.count < end + 4 + length { try fill(method, path) }
                let response = try HTTPClient.parse(Array(buffer[0..<(end + 4 + length)]), method: method, path: path)
                buffer.removeFirst(end + 4 + length)
                return response
            }
            try fill(method, path)
        }
    }

    private func fill(_ method: String, _ path: String) throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else {
            throw HarnessFailure(description: "\(method) \(path): connection closed or timed out (n=\(n), errno \(errno))")
        }
        buffer += chunk[0..<n]
    }
}
