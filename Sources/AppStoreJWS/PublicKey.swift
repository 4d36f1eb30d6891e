internal import COpenSSL

/// Owns one OpenSSL `EVP_PKEY` holding an EC P-256 public key and verifies ES256 signatures with it.
///
/// `@unchecked Sendable`: the key is immutable after `init`; OpenSSL allows concurrent verifications
/// with one `EVP_PKEY` as long as each uses its own `EVP_MD_CTX` (which `verifyES256` does).
final class PublicKey: @unchecked Sendable {
    private let pkey: OpaquePointer

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

    deinit { EVP_PKEY_free(pkey) }

    /// Verifies a JOSE ES256 signature (RFC 7518 §3.4: 64 bytes, r‖s big-endian) over `message`.
    /// The caller has already checked the length; DER signatures never reach this function.
    func verifyES256(rawSignature: [UInt8], message: UnsafeRawBufferPointer) -> Bool {
        guard rawSignature.count == 64 else { return false }
        let der = Self.derSignature(rawSignature)
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        let result = der.withUnsafeBufferPointer { signature in
            EVP_DigestVerify(context, signature.baseAddress, signature.count,
                             message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count)
        }
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
