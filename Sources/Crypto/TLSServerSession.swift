import COpenSSL
import Glibc

/// The outcome of one non-blocking step of a `TLSServerSession`.
public enum TLSStep: Sendable, Equatable {
    /// The operation completed; for reads and writes, this many bytes (a read of 0 bytes never happens: see `closed`).
    case done(Int)
    /// Retry when the socket is readable (`SSL_ERROR_WANT_READ`).
    case wantRead
    /// Retry when the socket is writable (`SSL_ERROR_WANT_WRITE`).
    case wantWrite
    /// The peer closed the stream (close_notify, or EOF where that is acceptable).
    case closed
    /// A protocol, certificate or socket error: the connection is done. The reason is for logs only.
    case failed(String)
}

/// A server-side TLS session on a non-blocking socket (or, for fuzzing, on memory buffers): owns one `SSL`.
///
/// Unlike `TLSConnection` it never waits: each call does what it can and returns `wantRead`/`wantWrite`, and the
/// caller (an epoll loop) calls again when the socket is ready. The socket descriptor stays owned by the caller
/// (`SSL_set_fd`'s BIO never closes it). One thread at a time; the session is not `Sendable`.
public final class TLSServerSession {
    private let handle: SSLHandle
    private var ssl: OpaquePointer { handle.ssl }
    /// The memory BIOs' far ends when the session runs on memory (fuzzing): network input goes into `input`,
    /// output is read back from `output`. Both belong to the `SSL` (SSL_set_bio), freed by SSL_free.
    private let input: OpaquePointer?
    private let output: OpaquePointer?
    /// Whether the handshake has completed.
    public private(set) var isEstablished = false
    /// Set after a fatal error, the peer's close or our close_notify: `shutdown()` then does nothing.
    private var finished = false

    /// A session on an accepted, non-blocking socket.
    public init(context: TLSContext, socket fd: Int32) throws(CryptoError) {
        precondition(!context.isClient, "server session from a client context")
        handle = try SSLHandle(context: context)
        input = nil
        output = nil
        try handle.attach(socket: fd)
        SSL_set_accept_state(ssl)
    }

    /// A session whose network side is two memory buffers (`receive` / `takeOutput`): the fuzz harness's way to
    /// feed hostile records to the same state machine without a socket.
    public init(inMemoryWith context: TLSContext) throws(CryptoError) {
        precondition(!context.isClient, "server session from a client context")
        handle = try SSLHandle(context: context)
        guard let rbio = BIO_new(BIO_s_mem()) else { throw CryptoError(.internalFailure, "cannot create BIO") }
        guard let wbio = BIO_new(BIO_s_mem()) else {
            BIO_free(rbio)
            throw CryptoError(.internalFailure, "cannot create BIO")
        }
        SSL_set_bio(handle.ssl, rbio, wbio)   // the SSL now owns both BIOs; we keep borrowed pointers
        input = rbio
        output = wbio
        SSL_set_accept_state(ssl)
    }

    /// Continues the handshake: `.done(0)` once established.
    public func handshake() -> TLSStep {
        if isEstablished { return .done(0) }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            isEstablished = true
            return .done(0)
        }
        return step(result, endOfStreamIsClose: false)
    }

    /// Reads decrypted bytes into `buffer` (up to its size).
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSStep {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .done(0) }
        return transfer(endOfStreamIsClose: true) { ssl, count in SSL_read_ex(ssl, base, buffer.count, &count) }
    }

    /// Encrypts and sends up to `bytes.count` bytes (partial writes allowed; a retry after `wantWrite` may pass a
    /// moved buffer with the same unsent bytes).
    public func write(_ bytes: UnsafeRawBufferPointer) -> TLSStep {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return .done(0) }
        return transfer(endOfStreamIsClose: false) { ssl, written in SSL_write_ex(ssl, base, bytes.count, &written) }
    }

    /// Sends close_notify once, without waiting for the peer's (RFC 8446 §6.1 allows it); best effort.
    public func shutdown() {
        guard isEstablished, !finished else { return }
        finished = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The ALPN protocol selected, if any.
    public var negotiatedApplicationProtocol: String? { handle.negotiatedApplicationProtocol }

    // MARK: memory transport (fuzzing)

    /// Appends network bytes to a memory session's input; false on a socket session.
    @discardableResult
    public func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let input, let base = bytes.baseAddress, bytes.count > 0, bytes.count <= Int(Int32.max) else { return false }
        return BIO_write(input, base, Int32(bytes.count)) == Int32(bytes.count)
    }

    /// Takes what a memory session wrote to the network so far.
    public func takeOutput() -> [UInt8] {
        guard let output else { return [] }
        let pending = bouncer_BIO_pending(output)
        guard pending > 0, pending <= Int(Int32.max) else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(pending))
        let n = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32(pending)) }
        return n > 0 ? Array(bytes.prefix(Int(n))) : []
    }

    /// Runs one `SSL_read_ex` or `SSL_write_ex` (`operation`) on a clear error queue: `.done` with the bytes it
    /// moved, or the step its failure calls for.
    private func transfer(endOfStreamIsClose: Bool, _ operation: (OpaquePointer, inout Int) -> Int32) -> TLSStep {
        ERR_clear_error()
        var count = 0
        let result = operation(ssl, &count)
        if result == 1 { return .done(count) }
        return step(result, endOfStreamIsClose: endOfStreamIsClose)
    }

    private func step(_ result: Int32, endOfStreamIsClose: Bool) -> TLSStep {
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            finished = true
            return .closed
        case SSL_ERROR_SYSCALL:
            finished = true   // after SSL_ERROR_SYSCALL or SSL_ERROR_SSL no further I/O, not even SSL_shutdown
            let code = errno
            ERR_clear_error()
            // EOF without close_notify (SSL_OP_IGNORE_UNEXPECTED_EOF makes it ZERO_RETURN on reads) or a reset.
            if code == 0 || code == ECONNRESET || code == EPIPE { return endOfStreamIsClose ? .closed : .failed("eof") }
            return .failed("errno \(code)")
        default:
            finished = true
            return .failed(OpenSSLErrors.drain())
        }
    }
}
