internal import COpenSSL
import Synchronization

/// Owns one OpenSSL `EVP_PKEY` holding an EC P-256 public key and verifies ES256 signatures with it.
///
/// `@unchecked Sendable`: the key is immutable after `init`; OpenSSL allows concurrent verifications
/// with one `EVP_PKEY` as long as each uses its own `EVP_PKEY_CTX`, which the pool guarantees.
///
/// Why a pool: `EVP_PKEY_verify_init` fetches the ECDSA implementation from OpenSSL 3's provider store
/// on every call (locks, hash-table walks): several times the cost of the P-256 verification itself.
/// An initialised context can verify any number of digests (as `openssl speed` does), so each key
/// keeps a few idle ones; a verification borrows one exclusively and returns it.
final class PublicKey: @unchecked Sendable {
    private let pkey: OpaquePointer
    /// Idle `EVP_PKEY_CTX`s already set up by `EVP_PKEY_verify_init`; owned here, freed in `deinit`.
    private let idleContexts = Mutex<[VerifyContext]>([])
    /// One `EVP_PKEY_CTX`; `@unchecked Sendable` because the pool hands each to one thread at a time.
    private struct VerifyContext: @unchecked Sendable { let pointer: OpaquePointer }
    private static let maxIdleContexts = 8

    /// Takes its own reference on `key` (borrowed from an `X509` via `X509_get0_pubkey`) when the key
    /// is EC on prime256v1; `nil` for any other type or curve.
    init?(borrowingP256 key: OpaquePointer) {
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var name = [CChar](repeating: 0, count: 32)
        var length = 0
        let ok = name.withUnsafeMutableBufferPointer { buffer in
            EVP_PKEY_get_group_name(key, buffer.baseAddress, buffer.count, &length)
        }
        guard ok == 1, String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1"
        else { return nil }
        // up_ref: this object now co-owns the key; EVP_PKEY_free in deinit drops our reference only.
        guard EVP_PKEY_up_ref(key) == 1 else { return nil }
        pkey = key
    }

    deinit {
        idleContexts.withLock { contexts in
            for context in contexts { EVP_PKEY_CTX_free(context.pointer) }
            contexts.removeAll()
        }
        EVP_PKEY_free(pkey)
    }

    /// A verify-initialised context (from the pool or new); the caller owns it until `recycle`.
    private func borrowContext() -> OpaquePointer? {
        if let context = idleContexts.withLock({ $0.popLast() }) { return context.pointer }
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { return nil }
        guard EVP_PKEY_verify_init(context) == 1 else { EVP_PKEY_CTX_free(context); return nil }
        return context
    }

    private func recycle(_ context: OpaquePointer) {
        let kept = idleContexts.withLock { contexts -> Bool in
            guard contexts.count < Self.maxIdleContexts else { return false }
            contexts.append(VerifyContext(pointer: context))
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
    }

    /// Verifies a JOSE ES256 signature (RFC 7518 §3.4: 64 bytes, r‖s big-endian) over `message`.
    /// The caller has already checked the length; DER signatures never reach this function.
    func verifyES256(rawSignature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
        guard rawSignature.count == 64 else { return false }
        let der = Self.derSignature(rawSignature)
        let digest = Digest.sha256(message)
        guard let context = borrowContext() else { return false }
        let result = der.withUnsafeBufferPointer { signature in
            digest.withUnsafeBufferPointer { digest in
                EVP_PKEY_verify(context, signature.baseAddress, signature.count, digest.baseAddress, digest.count)
            }
        }
        // A failed verification leaves the context reusable (it holds no per-call state), so it goes
        // back to the pool either way.
        recycle(context)
        return result == 1
    }

    /// Encodes r‖s as the DER `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` OpenSSL expects.
    /// Done by hand (at most 72 bytes, lengths < 128 so short-form) to avoid four allocations of
    /// `ECDSA_SIG`/`BIGNUM` per request.
    static func derSignature(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ half: ArraySlice<UInt8>) -> [UInt8] {
            var bytes = Array(half.drop { $0 == 0 })
            if bytes.isEmpty { bytes = [0] }
            if let first = bytes.first, first & 0x80 != 0 { bytes.insert(0, at: 0) }   // keep it positive
            return [0x02, UInt8(bytes.count)] + bytes
        }
        let r = integer(raw[0..<32]), s = integer(raw[32..<64])
        return [0x30, UInt8(r.count + s.count)] + r + s
    }
}
