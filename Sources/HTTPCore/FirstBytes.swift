/// What the first bytes of a connection on the TLS port are: a TLS handshake record, a plain-HTTP request sent
/// to the wrong scheme, or something else. Pure, so the fuzzer and the unit tests can feed it anything.
enum FirstBytes: Equatable {
    case tlsHandshake
    case plainHTTP
    case other
    case needMore

    /// Classifies the bytes peeked from a fresh connection (any prefix of what it sent).
    static func classify(_ bytes: UnsafeRawBufferPointer) -> FirstBytes {
        guard let first = bytes.first else { return .needMore }
        // RFC 8446 §5.1: a ClientHello arrives in a handshake record (content type 22), legacy_record_version
        // 0x03xx (0x0301 for compatibility). Anything else is not TLS we could ever accept.
        if first == 0x16 {
            guard bytes.count >= 2 else { return .needMore }
            return bytes[1] == 0x03 ? .tlsHandshake : .other
        }
        // An HTTP/1.x request starts with a method token; every method we or anyone uses is upper-case letters.
        // One letter is enough to answer in HTTP: a TLS client never starts so.
        if first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") { return .plainHTTP }
        return .other
    }
}
