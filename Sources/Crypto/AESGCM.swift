import COpenSSL

/// AES-256-GCM (NIST SP 800-38D): the one place Bouncer encrypts secrets at rest.
///
/// Sealed-box byte format, version 1 (what `seal` returns and `open` accepts):
///
///     offset  length  field
///     0       1       version = 0x01
///     1       12      nonce (random per seal: 96-bit IV, SP 800-38D §8.2.2)
///     13      n       ciphertext (same length as the plaintext)
///     13+n    16      tag (128-bit)
///
/// The version byte lets a later format (another cipher, a key id) coexist with stored v1 boxes; it is
/// not covered by the tag, so `open` rejects any other value before decrypting. Random 96-bit nonces
/// keep the collision probability below 2^-32 for up to 2^32 seals under one key (SP 800-38D §8.3).
public enum AESGCM {
    /// Key length in bytes (AES-256).
    public static let keyByteCount = 32
    /// Nonce length in bytes.
    public static let nonceByteCount = 12
    /// Tag length in bytes.
    public static let tagByteCount = 16
    /// The current sealed-box format version.
    public static let formatVersion: UInt8 = 1
    /// Bytes a sealed box adds to its plaintext.
    public static let overhead = 1 + nonceByteCount + tagByteCount

    /// Encrypts and authenticates `plaintext` (and authenticates `authenticating`) under a 32-byte key,
    /// with a fresh random nonce; returns the version-1 sealed box.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], authenticating aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let nonce = SecureRandom.bytes(nonceByteCount)
        let (ciphertext, tag) = try seal(plaintext, key: key, nonce: nonce, authenticating: aad)
        return [formatVersion] + nonce + ciphertext + tag
    }

    /// Checks and decrypts a sealed box made by `seal` with the same key and AAD.
    /// Every mismatch (key, AAD, flipped bit, truncation) is `.authenticationFailed`.
    public static func open(_ sealedBox: [UInt8], key: [UInt8], authenticating aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard sealedBox.count >= overhead else { throw CryptoError(.invalidInput, "sealed box is shorter than \(overhead) bytes", debugDetail: "") }
        guard sealedBox[0] == formatVersion else {
            throw CryptoError(.unsupportedFormat, "sealed box version \(sealedBox[0]) is not supported", debugDetail: "")
        }
        let nonce = Array(sealedBox[1..<(1 + nonceByteCount)])
        let ciphertext = Array(sealedBox[(1 + nonceByteCount)..<(sealedBox.count - tagByteCount)])
        let tag = Array(sealedBox[(sealedBox.count - tagByteCount)...])
        return try open(ciphertext, key: key, nonce: nonce, tag: tag, authenticating: aad)
    }

    /// Opens a sealed box with the first of `keys` that authenticates it, for key rotation: list the new key
    /// first and the old one after; `keyIndex > 0` tells the caller to re-seal under `keys[0]`.
    /// Fails with `.authenticationFailed` when no key opens it.
    public static func open(_ sealedBox: [UInt8], keys: [[UInt8]], authenticating aad: [UInt8] = []) throws(CryptoError) -> (plaintext: [UInt8], keyIndex: Int) {
        var lastError = CryptoError(.invalidKey, "no decryption key configured", debugDetail: "")
        for (index, key) in keys.enumerated() {
            do {
                return (try open(sealedBox, key: key, authenticating: aad), index)
            } catch {
                guard error.code == .authenticationFailed else { throw error }
                lastError = error
            }
        }
        throw lastError
    }

    /// The raw primitive with a caller-chosen nonce (for known-answer tests and foreign formats).
    /// Never reuse a nonce under one key: GCM's confidentiality and authenticity both fail.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], authenticating aad: [UInt8] = []) throws(CryptoError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        try checkSizes(key: key, nonce: nonce)
        let cipher = try CipherContext()
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        try cipher.withContext { context throws(CryptoError) in
            try begin(context, key: key, nonce: nonce, encrypt: true)
            try update(context, input: aad, output: nil, encrypt: true)
            try ciphertext.withUnsafeMutableBufferPointer { out throws(CryptoError) in try update(context, input: plaintext, output: out, encrypt: true) }
            var finalLength: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)   // GCM finalisation writes no bytes; room anyway
            guard EVP_EncryptFinal_ex(context, &scratch, &finalLength) == 1, finalLength == 0,
                  EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1
            else { throw CryptoError(.internalFailure, "AES-256-GCM finalisation failed") }
        }
        return (ciphertext, tag)
    }

    /// The raw primitive's inverse; `.authenticationFailed` when the tag does not match.
    public static func open(_ ciphertext: [UInt8], key: [UInt8], nonce: [UInt8], tag: [UInt8], authenticating aad: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try checkSizes(key: key, nonce: nonce)
        guard tag.count == tagByteCount else { throw CryptoError(.invalidInput, "GCM tag must be \(tagByteCount) bytes", debugDetail: "") }
        let cipher = try CipherContext()
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        try cipher.withContext { context throws(CryptoError) in
            try begin(context, key: key, nonce: nonce, encrypt: false)
            try update(context, input: aad, output: nil, encrypt: false)
            try plaintext.withUnsafeMutableBufferPointer { out throws(CryptoError) in try update(context, input: ciphertext, output: out, encrypt: false) }
            // SET_TAG copies the 16 bytes into the context; `expected` only needs to live for the call.
            var expected = tag
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &expected) == 1 else {
                throw CryptoError(.internalFailure, "cannot set GCM tag")
            }
            var finalLength: Int32 = 0
            var scratch = [UInt8](repeating: 0, count: 16)
            guard EVP_DecryptFinal_ex(context, &scratch, &finalLength) == 1 else {
                OpenSSLErrors.clear()   // a tag mismatch queues nothing useful; say one thing for every cause
                throw CryptoError(.authenticationFailed, "sealed data does not authenticate (wrong key, wrong context or tampered)", debugDetail: "")
            }
        }
        return plaintext
    }

    private static func checkSizes(key: [UInt8], nonce: [UInt8]) throws(CryptoError) {
        guard key.count == keyByteCount else { throw CryptoError(.invalidKey, "AES-256-GCM key must be \(keyByteCount) bytes, not \(key.count)", debugDetail: "") }
        guard nonce.count == nonceByteCount else { throw CryptoError(.invalidInput, "AES-GCM nonce must be \(nonceByteCount) bytes", debugDetail: "") }
    }

    /// Sets `context` up for AES-256-GCM under `key` with a 12-byte `nonce`, to encrypt or to decrypt.
    private static func begin(_ context: OpaquePointer, key: [UInt8], nonce: [UInt8], encrypt: Bool) throws(CryptoError) {
        let initialise = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        OpenSSLErrors.clear()
        guard initialise(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
              key.withUnsafeBufferPointer({ k in nonce.withUnsafeBufferPointer { n in initialise(context, nil, nil, k.baseAddress, n.baseAddress) } }) == 1
        else { throw CryptoError(.internalFailure, "cannot initialise AES-256-GCM") }
    }

    /// Feeds `input` in chunks below Int32.max (EVP's length type); AAD when `output` is nil.
    private static func update(_ context: OpaquePointer, input: [UInt8], output: UnsafeMutableBufferPointer<UInt8>?, encrypt: Bool) throws(CryptoError) {
        let chunk = 1 << 30
        var offset = 0
        while offset < input.count {
            let length = min(chunk, input.count - offset)
            var written: Int32 = 0
            let ok = input.withUnsafeBufferPointer { source -> Int32 in
                let inPointer = source.baseAddress.map { $0 + offset }
                let outPointer = output?.baseAddress.map { $0 + offset }
                return encrypt
                    ? EVP_EncryptUpdate(context, outPointer, &written, inPointer, Int32(length))
                    : EVP_DecryptUpdate(context, outPointer, &written, inPointer, Int32(length))
            }
            guard ok == 1, output == nil || Int(written) == length else { throw CryptoError(.internalFailure, "AES-GCM update failed") }
            offset += length
        }
    }

    /// Owns one `EVP_CIPHER_CTX` for a single seal/open.
    private final class CipherContext {
        private let context: OpaquePointer
        init() throws(CryptoError) {
            guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError(.internalFailure, "cannot allocate EVP_CIPHER_CTX") }
            self.context = context
        }
        deinit { EVP_CIPHER_CTX_free(context) }   // also wipes the expanded key
        func withContext<T>(_ body: (OpaquePointer) throws(CryptoError) -> T) throws(CryptoError) -> T { try body(context) }
    }
}
