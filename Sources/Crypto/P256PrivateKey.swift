import Primitives

import COpenSSL

extension P256 {
    /// An EC P-256 private key (e.g. an App Store Connect `.p8`): owns one OpenSSL `EVP_PKEY`, signs ES256.
    ///
    /// `@unchecked Sendable`: immutable after `init`; every signature uses its own `EVP_MD_CTX`.
    /// The key material never appears in `description` or errors.
    public final class PrivateKey: @unchecked Sendable, CustomStringConvertible {
        private let pkey: OpaquePointer

        /// Parses a PEM private key: PKCS#8 `PRIVATE KEY` (what App Store Connect's `.p8` files hold) or
        /// SEC1 `EC PRIVATE KEY`. Refuses encrypted keys and any key that is not EC on P-256.
        public init(pem: String) throws(CryptoError) {
            OpenSSLErrors.clear()
            let parsed = try OpenSSLCoding.readPEM(pem, "private key") { bio in
                // A nil password callback with an empty passphrase: encrypted PEM fails instead of prompting on a tty.
                PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            }
            guard let parsed else { throw CryptoError(.invalidKey, "not a PEM private key (PKCS#8 PRIVATE KEY or EC PRIVATE KEY, unencrypted)") }
            guard P256.isP256(parsed) else {
                EVP_PKEY_free(parsed)
                throw CryptoError(.unsupportedKey, "private key is not EC P-256 (ES256 requires prime256v1)", debugDetail: "")
            }
            pkey = parsed   // PEM_read_bio_PrivateKey returned a new reference: ours, freed in deinit
        }

        /// Generates a fresh random P-256 key.
        public init() throws(CryptoError) {
            OpenSSLErrors.clear()
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError(.internalFailure, "EC key context unavailable") }
            defer { EVP_PKEY_CTX_free(context) }
            var key: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1,
                  EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
                  EVP_PKEY_generate(context, &key) == 1, let key
            else { throw CryptoError(.internalFailure, "P-256 key generation failed") }
            pkey = key   // EVP_PKEY_generate hands us the new key
        }

        deinit { EVP_PKEY_free(pkey) }

        /// The matching public key.
        public var publicKey: PublicKey {
            get throws(CryptoError) { try PublicKey(derSubjectPublicKeyInfo: P256.subjectPublicKeyInfo(pkey)) }
        }

        /// SHA-256 of the public key's DER SubjectPublicKeyInfo, lowercase hex (safe to log: public data).
        public var fingerprint: String { Hex.encode(Digest.sha256(P256.subjectPublicKeyInfo(pkey))) }

        /// Never prints key material.
        public var description: String { "P256.PrivateKey(fingerprint: \(fingerprint))" }

        /// The PKCS#8 PEM (`PRIVATE KEY`) of this key: for tests and key export tools, never for logs.
        public func pkcs8PEM() throws(CryptoError) -> String {
            OpenSSLErrors.clear()
            guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError(.internalFailure, "cannot allocate BIO") }
            defer { BIO_free(bio) }
            guard PEM_write_bio_PKCS8PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
                throw CryptoError(.internalFailure, "cannot encode PKCS#8")
            }
            var pointer: UnsafeMutablePointer<CChar>?
            // BIO_get_mem_data is a macro; BIO_ctrl with BIO_CTRL_INFO returns the length and sets `pointer`
            // to memory still owned by the BIO (copied out before the deferred free).
            let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
            guard length > 0, let pointer else { throw CryptoError(.internalFailure, "empty PKCS#8 output") }
            return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
        }

        /// ES256 signature over `message` as JOSE's raw r‖s (64 bytes, RFC 7518 §3.4): for JWS/JWT.
        public func signES256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
            try P256.rawSignature(fromDER: signDER(message))
        }

        /// ECDSA-SHA256 signature over `message` as DER `ECDSA-Sig-Value` (Apple's legacy promotional
        /// offer signatures expect this form, base64-encoded).
        public func signDER(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
            OpenSSLErrors.clear()
            guard let context = EVP_MD_CTX_new() else { throw CryptoError(.internalFailure, "cannot allocate EVP_MD_CTX") }
            defer { EVP_MD_CTX_free(context) }
            // DigestSignInit borrows pkey (takes its own reference inside the context's EVP_PKEY_CTX).
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
                throw CryptoError(.internalFailure, "cannot initialise ECDSA signing")
            }
            var length = 0
            let sized = message.withUnsafeBufferPointer { EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }
            guard sized == 1, length > 0 else { throw CryptoError(.internalFailure, "cannot size ECDSA signature") }
            var signature = [UInt8](repeating: 0, count: length)
            let signed = signature.withUnsafeMutableBufferPointer { out in
                message.withUnsafeBufferPointer { EVP_DigestSign(context, out.baseAddress, &length, $0.baseAddress, $0.count) }
            }
            guard signed == 1, length <= signature.count else { throw CryptoError(.internalFailure, "ECDSA signing failed") }
            return Array(signature.prefix(length))
        }
    }
}
