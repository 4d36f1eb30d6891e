import COpenSSL

/// Owns one `SSL` of a `TLSContext`, for `TLSConnection` and `TLSServerSession` alike: created in `init`, freed
/// in `deinit` (also when a session's `init` throws before it is complete), lent out as `ssl`.
final class SSLHandle {
    /// The `SSL`; it must not outlive this object.
    let ssl: OpaquePointer

    /// A new `SSL` of `context`.
    init(context: TLSContext) throws(CryptoError) {
        guard let ssl = try context.withContext({ (ctx) throws(CryptoError) -> OpaquePointer? in SSL_new(ctx) }) else {
            throw CryptoError(.configuration, "cannot create TLS session")
        }
        self.ssl = ssl
    }

    deinit { SSL_free(ssl) }

    /// Runs the session on socket `fd` (`SSL_set_fd`'s BIO never closes the descriptor).
    func attach(socket fd: Int32) throws(CryptoError) {
        guard SSL_set_fd(ssl, fd) == 1 else { throw CryptoError(.io, "cannot attach socket") }
    }

    /// The ALPN protocol selected, if any.
    var negotiatedApplicationProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)   // get0: points into the SSL, copied out at once
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }
}
