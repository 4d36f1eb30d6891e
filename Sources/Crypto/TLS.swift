import COpenSSL
import Glibc

/// How a TLS client trusts and talks to servers. One `TLSContext` is built from it and shared by all
/// connections (OpenSSL's `SSL_CTX` is safe to share once configured).
public struct TLSClientConfiguration: Sendable {
    /// Trust the system's default CA locations (`SSL_CTX_set_default_verify_paths`).
    public var trustsSystemRoots: Bool
    /// An extra PEM file of CA certificates to trust as well (how `BOUNCER_APPLE_API_CA_FILE` works:
    /// a corporate proxy's or a test server's CA).
    public var additionalCAFile: String?
    /// ALPN protocols offered, in preference order (RFC 7301).
    public var applicationProtocols: [String]

    /// TLS 1.2 or newer, peer and host name always verified.
    public init(trustsSystemRoots: Bool = true, additionalCAFile: String? = nil, applicationProtocols: [String] = ["http/1.1"]) {
        self.trustsSystemRoots = trustsSystemRoots
        self.additionalCAFile = additionalCAFile
        self.applicationProtocols = applicationProtocols
    }
}

/// A TLS server identity: a PEM certificate chain (leaf first) and its PEM private key. TLS 1.2+, ALPN
/// `http/1.1` selected when offered.
public struct TLSServerConfiguration: Sendable {
    /// PEM file: the leaf certificate, then intermediates.
    public var certificateChainFile: String
    /// PEM file: the leaf's private key.
    public var privateKeyFile: String

    /// TLS 1.2 or newer.
    public init(certificateChainFile: String, privateKeyFile: String) {
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
    }
}

/// Owns one configured OpenSSL `SSL_CTX`, client or server.
///
/// `@unchecked Sendable`: configured in `init`, read-only afterwards; OpenSSL allows concurrent `SSL_new`
/// from one context.
public final class TLSContext: @unchecked Sendable {
    private let context: OpaquePointer
    /// Whether connections made from this context are clients.
    public let isClient: Bool

    /// A client context: TLS 1.2+, peer verification on, trust per `configuration`.
    public init(client configuration: TLSClientConfiguration) throws(CryptoError) {
        Self.ignoreSIGPIPE
        OpenSSLErrors.clear()
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw CryptoError(.configuration, "cannot create TLS context") }
        self.context = context   // owned from here: deinit frees it even when configuration fails below
        isClient = true
        try configureCommon()
        if configuration.trustsSystemRoots, SSL_CTX_set_default_verify_paths(context) != 1 {
            throw CryptoError(.configuration, "cannot load the system's default CA locations")
        }
        if let file = configuration.additionalCAFile, SSL_CTX_load_verify_locations(context, file, nil) != 1 {
            throw CryptoError(.configuration, "cannot load CA certificates from \(file)")
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if !configuration.applicationProtocols.isEmpty {
            var wire: [UInt8] = []   // RFC 7301 §3.1: length-prefixed protocol names
            for name in configuration.applicationProtocols {
                let bytes = Array(name.utf8)
                guard !bytes.isEmpty, bytes.count < 256 else { throw CryptoError(.configuration, "invalid ALPN protocol name", debugDetail: "") }
                wire.append(UInt8(bytes.count))
                wire += bytes
            }
            // Returns 0 on success (unlike most of OpenSSL); copies the bytes.
            guard SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count)) == 0 else {
                throw CryptoError(.configuration, "cannot set ALPN protocols")
            }
        }
    }

    /// A server context presenting `configuration`'s certificate chain and key.
    public init(server configuration: TLSServerConfiguration) throws(CryptoError) {
        Self.ignoreSIGPIPE
        OpenSSLErrors.clear()
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw CryptoError(.configuration, "cannot create TLS context") }
        self.context = context
        isClient = false
        try configureCommon()
        guard SSL_CTX_use_certificate_chain_file(context, configuration.certificateChainFile) == 1 else {
            throw CryptoError(.configuration, "cannot load certificate chain from \(configuration.certificateChainFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, configuration.privateKeyFile, SSL_FILETYPE_PEM) == 1,
              SSL_CTX_check_private_key(context) == 1 else {
            throw CryptoError(.configuration, "cannot load a private key matching the certificate from \(configuration.privateKeyFile)")
        }
        bouncer_SSL_CTX_select_http11(context)   // ALPN: answer "http/1.1" when the client offers it
        // TLS 1.2 suites: ECDHE only (forward secrecy), AEAD only (AES-GCM, ChaCha20-Poly1305), ECDSA or RSA
        // certificates (Mozilla's "intermediate" list). TLS 1.3 suites are all AEAD; listed to pin the order.
        guard SSL_CTX_set_cipher_list(context, Self.tls12Ciphers) == 1,
              SSL_CTX_set_ciphersuites(context, Self.tls13Ciphersuites) == 1 else {
            throw CryptoError(.configuration, "cannot set the cipher list")
        }
        _ = SSL_CTX_set_options(context, bouncer_SSL_OP_server_defaults())
        // Resumption: a bounded server-side session-id cache (TLS 1.2) plus stateless tickets (TLS 1.2 and 1.3,
        // OpenSSL's default, keys random per context: a reload starts a new ticket key, old tickets fall back
        // to a full handshake). The id context names the cache so sessions never cross into another context.
        _ = bouncer_SSL_CTX_sess_set_cache_size(context, 20_000)
        _ = bouncer_SSL_CTX_server_cache_no_auto_clear(context)
        let sessionContext = Array("bouncer".utf8)
        guard SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count)) == 1 else {
            throw CryptoError(.configuration, "cannot set the session id context")
        }
        // Idle keep-alive connections then hold no record buffers (most of a TLS connection's memory).
        _ = bouncer_SSL_CTX_release_buffers(context)
    }

    /// TLS 1.2 cipher list of server contexts (OpenSSL names).
    public static let tls12Ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        + "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        + "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    /// TLS 1.3 cipher suites of server contexts.
    public static let tls13Ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

    /// The serial number of the leaf certificate a server context presents, uppercase hex (e.g. for a reload's
    /// log line); nil for client contexts.
    public var certificateSerial: String? {
        guard !isClient, let leaf = SSL_CTX_get0_certificate(context) else { return nil }   // get0: owned by the context
        return Self.serialHex(leaf)
    }

    /// The name of the leaf certificate a server context presents that is exactly `host`, as the certificate spells
    /// it: a DNS name of its subject alternative names (case-insensitive; a wildcard entry names no single host) or
    /// an IP address one. Nil when the certificate does not name `host`, and for client contexts. The subject's
    /// common name is never read (RFC 6125 §6.4.4: clients no longer accept it either).
    public func certificateName(matching host: String) -> String? {
        guard !isClient, !host.isEmpty, !host.utf8.contains(0),
              let leaf = SSL_CTX_get0_certificate(context) else { return nil }   // get0: owned by the context
        if TLSConnection.isIPAddress(host) { return X509_check_ip_asc(leaf, host, 0) == 1 ? host : nil }
        var matched: UnsafeMutablePointer<CChar>? = nil
        let flags = UInt32(X509_CHECK_FLAG_NO_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT)
        guard X509_check_host(leaf, host, host.utf8.count, flags, &matched) == 1 else { return nil }
        // The matched name is a copy X509_check_host allocated for us: freed here.
        defer { CRYPTO_free(matched, #fileID, #line) }
        return matched.map { String(cString: $0) }
    }

    /// The certificate's serial number as uppercase hex.
    static func serialHex(_ certificate: OpaquePointer) -> String? {
        // get0 on the serial: owned by the certificate. ASN1_INTEGER_to_BN and BN_bn2hex allocate: freed here.
        guard let serial = X509_get0_serialNumber(certificate), let number = ASN1_INTEGER_to_BN(serial, nil) else { return nil }
        defer { BN_free(number) }
        guard let hex = BN_bn2hex(number) else { return nil }
        defer { CRYPTO_free(hex, #fileID, #line) }
        return String(cString: hex)
    }

    deinit { SSL_CTX_free(context) }

    private func configureCommon() throws(CryptoError) {
        guard bouncer_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw CryptoError(.configuration, "cannot require TLS 1.2")
        }
        _ = bouncer_SSL_CTX_set_write_modes(context)
        _ = SSL_CTX_set_options(context, bouncer_SSL_OP_IGNORE_UNEXPECTED_EOF() | bouncer_SSL_OP_NO_RENEGOTIATION())
    }

    /// OpenSSL writes to sockets with write(2), not send(MSG_NOSIGNAL): a vanished peer would raise SIGPIPE
    /// and kill the process. Ignored once, process-wide (as HTTPServer does for the same reason).
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Lends the `SSL_CTX` to `TLSConnection` and `TLSServerSession`.
    func withContext<T>(_ body: (OpaquePointer) throws(CryptoError) -> T) throws(CryptoError) -> T { try body(context) }
}

/// A blocking TLS session over a connected socket, with a deadline on every operation: owns one `SSL`.
///
/// The socket is switched to non-blocking and driven with poll(2), so `SSL_ERROR_WANT_READ/WRITE` become
/// waits bounded by the deadline. The file descriptor stays owned by the caller, who closes it after
/// this object is done (`SSL_set_fd` uses a BIO that never closes the descriptor).
///
/// `@unchecked Sendable`: one thread at a time (a connection pool hands it over under a lock).
public final class TLSConnection: @unchecked Sendable {
    private let handle: SSLHandle
    private var ssl: OpaquePointer { handle.ssl }
    private let fd: Int32
    /// Set once `shutdown` ran or the peer closed: no further I/O.
    private var finished = false

    /// Runs the client handshake on `fd` (connected), verifying that the peer's certificate chains to
    /// the context's trust and names `serverName` (a DNS name, sent as SNI, or an IP address literal).
    public init(context: TLSContext, connectedSocket fd: Int32, serverName: String, deadline: ContinuousClock.Instant) throws(CryptoError) {
        precondition(context.isClient, "client connection from a server context")
        self.fd = fd
        OpenSSLErrors.clear()
        handle = try SSLHandle(context: context)
        try Self.makeNonBlocking(fd)
        try handle.attach(socket: fd)
        if Self.isIPAddress(serverName) {
            // get0: the param belongs to the SSL; set1 copies the address.
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) == 1 else {
                throw CryptoError(.configuration, "invalid IP address \(serverName)")
            }
        } else {
            // SNI (RFC 6066 §3, DNS names only) and RFC 6125 host-name matching on the leaf; both copy.
            guard bouncer_SSL_set_tlsext_host_name(ssl, serverName) == 1, SSL_set1_host(ssl, serverName) == 1 else {
                throw CryptoError(.configuration, "invalid server name \(serverName)")
            }
        }
        try drive(deadline: deadline, what: "handshake") { SSL_connect($0) }
    }

    /// Runs the server handshake on an accepted socket.
    public init(context: TLSContext, acceptedSocket fd: Int32, deadline: ContinuousClock.Instant) throws(CryptoError) {
        precondition(!context.isClient, "server connection from a client context")
        self.fd = fd
        OpenSSLErrors.clear()
        handle = try SSLHandle(context: context)
        try Self.makeNonBlocking(fd)
        try handle.attach(socket: fd)
        try drive(deadline: deadline, what: "handshake") { SSL_accept($0) }
    }

    /// The ALPN protocol the server selected, if any.
    public var negotiatedApplicationProtocol: String? { handle.negotiatedApplicationProtocol }

    /// The negotiated protocol version, e.g. "TLSv1.3".
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The serial number of the peer's leaf certificate, uppercase hex (which certificate a server presented).
    public var peerCertificateSerial: String? {
        guard let peer = SSL_get1_peer_certificate(ssl) else { return nil }   // get1: up-ref'd, freed here
        defer { X509_free(peer) }
        return TLSContext.serialHex(peer)
    }

    /// Whether the handshake resumed an earlier session (ticket or session id).
    public var sessionWasReused: Bool { SSL_session_reused(ssl) == 1 }

    /// Reads up to `buffer.count` bytes; returns 0 at the end of the stream (close_notify or EOF).
    public func read(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(CryptoError) -> Int {
        guard !finished, let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        var count = 0
        let outcome = try drive(deadline: deadline, what: "read", allowsEndOfStream: true) { ssl in
            SSL_read_ex(ssl, base, buffer.count, &count)
        }
        if outcome == .endOfStream { finished = true; return 0 }
        return count
    }

    /// Writes all of `bytes` before `deadline`.
    public func write(_ bytes: UnsafeRawBufferPointer, deadline: ContinuousClock.Instant) throws(CryptoError) {
        guard !finished else { throw CryptoError(.closed, "connection already closed", debugDetail: "") }
        var offset = 0
        while offset < bytes.count {
            guard let base = bytes.baseAddress else { return }
            var written = 0
            try drive(deadline: deadline, what: "write") { ssl in
                SSL_write_ex(ssl, base + offset, bytes.count - offset, &written)
            }
            offset += written
        }
    }

    /// Sends close_notify (best effort, bounded by `deadline`); the caller then closes the socket.
    public func shutdown(deadline: ContinuousClock.Instant) {
        guard !finished else { return }
        finished = true
        // One SSL_shutdown sends our close_notify; we do not wait for the peer's (RFC 8446 §6.1 allows it).
        _ = try? drive(deadline: deadline, what: "shutdown") { ssl in
            let result = SSL_shutdown(ssl)
            return result >= 0 ? 1 : result
        }
        OpenSSLErrors.clear()
    }

    private enum Outcome { case done, endOfStream }

    /// Calls `operation` until it succeeds, waiting on the socket for WANT_READ/WANT_WRITE.
    @discardableResult
    private func drive(deadline: ContinuousClock.Instant, what: String, allowsEndOfStream: Bool = false,
                       _ operation: (OpaquePointer) -> Int32) throws(CryptoError) -> Outcome {
        while true {
            OpenSSLErrors.clear()
            let result = operation(ssl)
            if result == 1 { return .done }
            let error = SSL_get_error(ssl, result)
            switch error {
            case SSL_ERROR_WANT_READ:
                try wait(events: Int16(POLLIN), deadline: deadline, what: what)
            case SSL_ERROR_WANT_WRITE:
                try wait(events: Int16(POLLOUT), deadline: deadline, what: what)
            case SSL_ERROR_ZERO_RETURN:
                if allowsEndOfStream { return .endOfStream }
                throw CryptoError(.closed, "peer closed the connection during \(what)")
            case SSL_ERROR_SYSCALL:
                let code = errno
                if allowsEndOfStream, code == 0 { return .endOfStream }
                throw CryptoError(.io, "socket error during \(what)", debugDetail: "errno \(code) \(String(cString: strerror(code))) \(OpenSSLErrors.drain())")
            default:
                let verify = SSL_get_verify_result(ssl)
                if verify != X509_V_OK {
                    let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "code \(verify)"
                    throw CryptoError(.certificateRejected, "server certificate rejected: \(text)")
                }
                throw CryptoError(what == "handshake" ? .handshakeFailed : .io, "TLS \(what) failed")
            }
        }
    }

    private func wait(events: Int16, deadline: ContinuousClock.Instant, what: String) throws(CryptoError) {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw CryptoError(.timeout, "\(what) timed out", debugDetail: "") }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return }   // readable, writable, or HUP/ERR: the next SSL call reports which
            if ready < 0, errno != EINTR {
                throw CryptoError(.io, "poll failed during \(what)", debugDetail: "errno \(errno)")
            }
        }
    }

    private static func makeNonBlocking(_ fd: Int32) throws(CryptoError) {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw CryptoError(.io, "cannot make the socket non-blocking", debugDetail: "errno \(errno)")
        }
    }

    static func isIPAddress(_ name: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }
}
