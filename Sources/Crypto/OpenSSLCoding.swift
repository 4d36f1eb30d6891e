import COpenSSL

/// OpenSSL's three ways in and out of bytes, each spelled once: `d2i` (parse DER), `i2d` (write DER) and
/// `PEM_read_bio` (parse PEM through a memory BIO). Every object they return is a new reference: the caller's.
enum OpenSSLCoding {
    /// Parses one object from `der` with `d2i` (e.g. `{ d2i_X509(nil, $0, $1) }`); nil when it fails. Also says
    /// whether it consumed every byte: d2i advances the cursor past what it read.
    static func decode(
        _ der: [UInt8], with d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?
    ) -> (object: OpaquePointer, consumedAll: Bool)? {
        der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            guard let object = d2i(&cursor, buffer.count) else { return nil }
            return (object, cursor == base + buffer.count)
        }
    }

    /// Parses exactly one object from `der` with `d2i`: trailing bytes are not ours to ignore, so then the object
    /// is freed with `free` and the answer is nil, as when parsing fails.
    static func decodeWhole(
        _ der: [UInt8], with d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?,
        free: (OpaquePointer) -> Void
    ) -> OpaquePointer? {
        guard case let (object, consumedAll)? = decode(der, with: d2i) else { return nil }
        guard consumedAll else { free(object); return nil }
        return object
    }

    /// The DER encoding `i2d` writes (e.g. `{ i2d_X509(x509, $0) }`); empty when it fails. With a NULL output
    /// pointer i2d returns the length; the second call writes and advances `cursor`.
    static func encode(with i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8] {
        let length = i2d(nil)
        guard length > 0 else { return [] }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d(&cursor)
        }
        return der
    }

    /// Reads one PEM object of `pem` with `read` (e.g. `{ PEM_read_bio_PUBKEY($0, nil, nil, nil) }`); nil when it
    /// fails, `.invalidKey` ("PEM `what` is empty or too large") beyond 64 KiB.
    static func readPEM(_ pem: String, _ what: String, with read: (OpaquePointer) -> OpaquePointer?)
        throws(CryptoError) -> OpaquePointer?
    {
        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 * 1024 else { throw CryptoError(.invalidKey, "PEM \(what) is empty or too large") }
        return bytes.withUnsafeBytes { buffer -> OpaquePointer? in
            // The memory BIO only borrows `buffer` (read-only) for the duration of this closure.
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
    }
}
