import Primitives

/// A compact JWS as `transaction_jws` keeps it (schema/0066): its protected header segment, stored once per distinct
/// header in `jws_headers`, and the rest (`payload.signature`) per transaction. Split here, by bytes, rather than in
/// the record statement, where `split_part`/`strpos`/`substr` count the ~3.5 KB text's characters (issue 22).
struct JWSEvidence: Equatable {
    /// The text before the first `.`.
    var header: String
    /// The text after the first `.`; the whole text when it has none (as the statement's `substr` did).
    var body: String

    /// `jws` split at its first `.`; nil for nil (a StoreKit 1 receipt's record carries no JWS).
    init?(_ jws: String?) {
        guard var jws else { return nil }
        let split = jws.withUTF8 { bytes -> (String, String)? in
            guard let headerCount = bytes.offset(of: UInt8(ascii: ".")) else { return nil }
            return (String(decoding: UnsafeBufferPointer(rebasing: bytes[..<headerCount]), as: UTF8.self),
                    String(decoding: UnsafeBufferPointer(rebasing: bytes[(headerCount + 1)...]), as: UTF8.self))
        }
        (header, body) = split ?? (jws, jws)
    }
}
