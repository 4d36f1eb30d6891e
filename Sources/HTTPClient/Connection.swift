import Crypto
import Glibc

/// One TCP connection, optionally wrapped in TLS: owns the socket (closed in `deinit`) and the TLS session.
///
/// `@unchecked Sendable`: used by one request at a time; the pool hands it between threads under its lock.
final class Connection: @unchecked Sendable {
    let fd: Int32
    private let tls: TLSConnection?
    /// Requests completed on this connection (0 for a fresh one).
    var requestsServed = 0

    private init(fd: Int32, tls: TLSConnection?) {
        self.fd = fd
        self.tls = tls
    }

    deinit {
        tls?.shutdown(deadline: .now + .milliseconds(100))
        close(fd)
    }

    /// Resolves `host`, connects within `connectTimeout` (each address in turn), then runs the TLS
    /// handshake when `tls` is given (bounded by the same timeout again).
    static func open(
        host: String, port: Int, tls: TLSContext?, connectTimeout: Duration,
        allowAddress: (@Sendable ([UInt8]) -> Bool)? = nil
    ) throws(HTTPClientError) -> Connection {
        let fd = try connect(host: host, port: port, deadline: .now + connectTimeout, allowAddress: allowAddress)
        guard let tls else { return Connection(fd: fd, tls: nil) }
        do {
            let session = try TLSConnection(context: tls, connectedSocket: fd, serverName: host, deadline: .now + connectTimeout)
            return Connection(fd: fd, tls: session)
        } catch {
            close(fd)
            if error.code == .timeout { throw HTTPClientError(.timeout, "TLS handshake with \(host) timed out", debugDetail: error.debugDescription) }
            throw HTTPClientError(.tls, error.description, debugDetail: error.debugDescription)
        }
    }

    /// A pooled connection is stale when the peer closed it or sent something unasked (poll says readable).
    var isStale: Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) != 0
    }

    func write(_ bytes: [UInt8], deadline: ContinuousClock.Instant) throws(HTTPClientError) {
        if let tls {
            do { try bytes.withUnsafeBytes { try tls.write($0, deadline: deadline) } } catch {
                throw Self.map(error, while: "sending the request")
            }
            return
        }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                send(fd, buffer.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 { offset += sent; continue }
            if sent < 0, errno == EAGAIN || errno == EINTR { try wait(Int16(POLLOUT), deadline: deadline, while: "sending the request"); continue }
            throw HTTPClientError(.io, "connection broke while sending the request", debugDetail: "errno \(errno)")
        }
    }

    /// Reads what is available (at least one byte) before `deadline`; 0 at end of stream.
    func read(into buffer: inout [UInt8], deadline: ContinuousClock.Instant) throws(HTTPClientError) -> Int {
        if let tls {
            do { return try buffer.withUnsafeMutableBytes { try tls.read(into: $0, deadline: deadline) } } catch {
                throw Self.map(error, while: "reading the response")
            }
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return count }
            guard errno == EAGAIN || errno == EINTR else {
                throw HTTPClientError(.io, "connection broke while reading the response", debugDetail: "errno \(errno)")
            }
            try wait(Int16(POLLIN), deadline: deadline, while: "reading the response")
        }
    }

    private func wait(_ events: Int16, deadline: ContinuousClock.Instant, while what: String) throws(HTTPClientError) {
        try Self.wait(fd: fd, events: events, deadline: deadline, onTimeout: HTTPClientError(.timeout, "timed out \(what)"))
    }

    private static func map(_ error: any Error, while what: String) -> HTTPClientError {
        guard let error = error as? CryptoError else { return HTTPClientError(.io, "connection broke while \(what)", debugDetail: "\(error)") }
        return error.code == .timeout
            ? HTTPClientError(.timeout, "timed out \(what)", debugDetail: error.debugDescription)
            : HTTPClientError(.io, "connection broke while \(what)", debugDetail: error.debugDescription)
    }

    static func wait(fd: Int32, events: Int16, deadline: ContinuousClock.Instant, onTimeout: HTTPClientError) throws(HTTPClientError) {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw onTimeout }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw HTTPClientError(.io, "poll failed", debugDetail: "errno \(errno)") }
        }
    }

    /// getaddrinfo, then a non-blocking connect per address until one succeeds. Name resolution itself
    /// is blocking and not bounded by the deadline (glibc offers no portable timeout for it).
    private static func connect(
        host: String, port: Int, deadline: ContinuousClock.Instant, allowAddress: (@Sendable ([UInt8]) -> Bool)?
    ) throws(HTTPClientError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw HTTPClientError(.connect, "cannot resolve \(host)", debugDetail: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }   // the list is ours; every address is used before this returns
        var lastError = "no address"
        var refused = 0
        var tried = 0
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let info = cursor {
            cursor = info.pointee.ai_next
            if let allowAddress {
                // The check reads the same sockaddr that connect() gets below: nothing can re-resolve in between.
                guard let address = AddressPolicy.bytes(info.pointee), allowAddress(address) else {
                    refused += 1
                    continue
                }
            }
            tried += 1
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { lastError = "socket: errno \(errno)"; continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            guard errno == EINPROGRESS else { lastError = "connect: errno \(errno)"; close(fd); continue }
            do {
                try wait(fd: fd, events: Int16(POLLOUT), deadline: deadline,
                         onTimeout: HTTPClientError(.connect, "connect to \(host):\(port) timed out"))
            } catch {
                close(fd)
                throw error
            }
            var soError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
            if soError == 0 { return fd }
            lastError = "connect: \(String(cString: strerror(soError)))"
            close(fd)
        }
        if tried == 0, refused > 0 {
            throw HTTPClientError(.addressNotAllowed, "\(host) resolves only to addresses that are not allowed")
        }
        throw HTTPClientError(.connect, "cannot connect to \(host):\(port)", debugDetail: lastError)
    }
}
