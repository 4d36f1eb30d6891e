public import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1, port 0, plain or TLS (built on Crypto's `TLSContext`), for client
/// tests: a scripted handler answers each request, and the server counts connections and requests so a
/// test can assert keep-alive reuse. One thread per connection; requests are parsed only as far as a test
/// client needs (request line, headers, Content-Length body).
///
/// The fake App Store Server API of later work builds on this: its handler routes on `request.path`.
public final class LocalHTTPSServer: @unchecked Sendable {
    /// What the server does with one request.
    public enum Action: Sendable {
        /// Sends these exact bytes (status line, headers, body — for malformed or chunked responses).
        case raw([UInt8])
        /// Sends a well-formed response with Content-Length.
        case respond(status: Int, headers: [(String, String)] = [], body: String = "")
        /// Reads the request, then sends nothing for this long before closing (a stalled server).
        case stall(seconds: Double)
        /// Closes the connection without answering.
        case close
        /// Sends a well-formed keep-alive response, then closes anyway (an idle timeout on the server side).
        case respondThenClose(status: Int, body: String = "")
        /// Sends these bytes one at a time with a pause between them (a slow-drip server).
        case drip([UInt8], interval: Double)
    }

    /// One received request.
    public struct Request: Sendable {
        /// e.g. "GET".
        public var method: String
        /// The request target, e.g. "/inApps/v1/history/1?revision=x".
        public var path: String
        /// Header fields in order, names as sent.
        public var headers: [(String, String)]
        /// The body (Content-Length framed).
        public var body: [UInt8]
        /// Which connection (1-based, in accept order) carried it.
        public var connection: Int

        /// First value of a header, case-insensitive.
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    /// The bound port.
    public let port: Int
    private let listener: Int32
    private let tls: TLSContext?
    private let handler: @Sendable (Request) -> Action
    private struct State { var connections = 0; var requests: [Request] = []; var open: Set<Int32> = []; var stopped = false }
    private let state = Mutex(State())

    /// Starts listening; `tls` nil serves plain HTTP.
    public init(tls: TLSServerConfiguration? = nil, handler: @escaping @Sendable (Request) -> Action) throws {
        self.tls = try tls.map { try TLSContext(server: $0) }
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TLSTestPKIError(message: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw TLSTestPKIError(message: "bind/listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Connections accepted so far.
    public var connectionCount: Int { state.withLock { $0.connections } }
    /// Requests received so far, in order.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting and closes every open connection.
    public func stop() {
        // Under the lock, so a connection thread cannot close its descriptor (freeing the number for reuse
        // by someone else's socket) between our snapshot and the shutdown(2) calls.
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            Glibc.shutdown(listener, Int32(SHUT_RDWR))
            for fd in state.open { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        // Closed under the lock with `stopped` set, so a later stop() never shuts down a reused number.
        defer { state.withLock { $0.stopped = true; close(listener) } }
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let number = state.withLock { state -> Int? in
                guard !state.stopped else { return nil }
                state.connections += 1
                state.open.insert(fd)
                return state.connections
            }
            guard let number else { close(fd); return }
            Thread { [self] in
                serve(fd: fd, connection: number)
                state.withLock { state in
                    state.open.remove(fd)
                    close(fd)
                }
            }.start()
        }
    }

    /// Byte stream over the socket, TLS or plain, with a generous deadline so a stuck test fails instead of hanging.
    private final class Stream {
        let fd: Int32
        let tls: TLSConnection?
        var buffer: [UInt8] = []
        init(fd: Int32, tls: TLSConnection?) { self.fd = fd; self.tls = tls }

        func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            let deadline = ContinuousClock.now + .seconds(30)
            let count: Int
            if let tls {
                count = (try? chunk.withUnsafeMutableBytes { try tls.read(into: $0, deadline: deadline) }) ?? 0
            } else {
                count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            }
            guard count > 0 else { return false }
            buffer += chunk.prefix(count)
            return true
        }

        func write(_ bytes: [UInt8]) -> Bool {
            if let tls {
                return (try? bytes.withUnsafeBytes { try tls.write($0, deadline: ContinuousClock.now + .seconds(30)) }) != nil
            }
            var offset = 0
            while offset < bytes.count {
                let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }

    private func serve(fd: Int32, connection: Int) {
        var session: TLSConnection?
        if let tls {
            // A failed handshake (the client refused our certificate) just ends this connection.
            guard let accepted = try? TLSConnection(context: tls, acceptedSocket: fd, deadline: .now + .seconds(10)) else { return }
            session = accepted
        }
        let stream = Stream(fd: fd, tls: session)
        defer { session?.shutdown(deadline: .now + .milliseconds(200)) }
        while let request = readRequest(stream, connection: connection) {
            state.withLock { $0.requests.append(request) }
            switch handler(request) {
            case .raw(let bytes):
                guard stream.write(bytes) else { return }
            case .respond(let status, let headers, let body):
                var head = "HTTP/1.1 \(status) Test\r\nContent-Length: \(body.utf8.count)\r\n"
                for (name, value) in headers { head += "\(name): \(value)\r\n" }
                guard stream.write(Array((head + "\r\n" + body).utf8)) else { return }
            case .stall(let seconds):
                Thread.sleep(forTimeInterval: seconds)
                return
            case .close:
                return
            case .drip(let bytes, let interval):
                for byte in bytes {
                    guard stream.write([byte]) else { return }
                    Thread.sleep(forTimeInterval: interval)
                }
            case .respondThenClose(let status, let body):
                _ = stream.write(Array("HTTP/1.1 \(status) Test\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
                return
            }
            if request.header("Connection")?.lowercased() == "close" { return }
        }
    }

    private func readRequest(_ stream: Stream, connection: Int) -> Request? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if stream.buffer.count >= 4 {
                headEnd = (0...(stream.buffer.count - 4)).first { Array(stream.buffer[$0..<($0 + 4)]) == terminator }
            }
            if headEnd == nil, !stream.fill() { return nil }
        }
        guard let end = headEnd else { return nil }
        let head = String(decoding: stream.buffer[..<end], as: UTF8.self)
        stream.buffer.removeFirst(end + 4)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        while stream.buffer.count < length { guard stream.fill() else { return nil } }
        let body = Array(stream.buffer.prefix(length))
        stream.buffer.removeFirst(length)
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body, connection: connection)
    }
}
