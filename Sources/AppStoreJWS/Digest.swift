internal import COpenSSL

/// SHA-256 for callers that must not import OpenSSL themselves (e.g. hashing project secret keys).
public enum Digest {
    /// The SHA-256 digest (32 bytes) of `bytes`.
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let input = Array(bytes)
        var out = [UInt8](repeating: 0, count: 32)
        input.withUnsafeBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                // SHA256 writes exactly 32 bytes into `o`; both buffers outlive the call.
                _ = SHA256(inp.baseAddress, inp.count, o.baseAddress)
            }
        }
        return out
    }
}
