import COpenSSL

/// PBKDF2 (RFC 8018 §5.2) with HMAC-SHA256, through OpenSSL's `PKCS5_PBKDF2_HMAC`: the one place a password
/// becomes a key.
public enum PBKDF2 {
    /// The `length`-byte key PBKDF2-HMAC-SHA256 derives from `password` and `salt` over `iterations` rounds; nil when
    /// the parameters are out of range (an iteration count below 1, a length outside 1...1024) or OpenSSL fails.
    public static func sha256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8]? {
        guard iterations >= 1, iterations <= Int(Int32.max), length >= 1, length <= 1024,
              password.count <= Int(Int32.max), salt.count <= Int(Int32.max) else { return nil }
        var out = [UInt8](repeating: 0, count: length)
        // Empty inputs are legal: pass valid pointers with length 0 rather than NULL.
        let passwordStorage = password.isEmpty ? [UInt8(0)] : password
        let saltStorage = salt.isEmpty ? [UInt8(0)] : salt
        let ok = passwordStorage.withUnsafeBytes { passwordBytes in
            saltStorage.withUnsafeBufferPointer { saltBytes in
                out.withUnsafeMutableBufferPointer { outBytes in
                    // Writes exactly `length` bytes into `out`; every buffer outlives the call.
                    PKCS5_PBKDF2_HMAC(passwordBytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                                      Int32(password.count), saltBytes.baseAddress, Int32(salt.count),
                                      Int32(iterations), EVP_sha256(), Int32(length), outBytes.baseAddress)
                }
            }
        }
        return ok == 1 ? out : nil
    }
}
