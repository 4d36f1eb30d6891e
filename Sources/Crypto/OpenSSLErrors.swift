import COpenSSL

/// Hygiene for OpenSSL's thread-local error queue: clear it before a call whose failure we report,
/// drain it after, so one request's leftovers never show up in another's diagnostics.
public enum OpenSSLErrors {
    /// Empties the queue (call before an operation whose errors we want to attribute).
    public static func clear() { ERR_clear_error() }

    /// Drains the queue into one line like `error:…:ASN1 routines::wrong tag` (for debug detail only:
    /// these strings are OpenSSL internals, not client-facing reasons).
    public static func drain() -> String {
        var parts: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if parts.count < 8 {
                buffer.withUnsafeMutableBufferPointer { pointer in
                    if let base = pointer.baseAddress { ERR_error_string_n(code, base, pointer.count) }
                }
                parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return parts.joined(separator: "; ")
    }
}
