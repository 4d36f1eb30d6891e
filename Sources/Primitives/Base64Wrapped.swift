/// The standard-alphabet encoder (PEM) and the lenient decoder receipts need, beside the strict JWS decoders of
/// `Base64.swift` (kept in their own file so that one stays the JWS hot path alone).
extension Base64 {
    private static let standardAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes standard base64 with `=` padding (RFC 4648 §4; PEM bodies).
    public static func encodeStandard(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: standardAlphabet, padded: true)
    }

    /// Why `decodeWrapped` refused its input.
    public enum WrappedFailure: Error, Sendable, Equatable {
        /// A byte outside the standard alphabet, `=` and ASCII whitespace.
        case unexpectedCharacter
        /// More than two `=`.
        case tooMuchPadding
        /// A symbol after the first `=`.
        case dataAfterPadding
        /// A single symbol left over (it cannot carry a whole byte).
        case truncated
        /// Padding that does not complete the last quad.
        case wrongPadding
        /// More decoded bytes than the caller's limit.
        case tooLong
    }

    /// 0–63 for the alphabet, `skip` for ASCII whitespace, `pad` for "=", `bad` for everything else.
    private static let wrappedTable: [UInt8] = {
        var table = [UInt8](repeating: bad, count: 256)
        for (index, byte) in standardAlphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        for byte in [0x20, 0x09, 0x0A, 0x0D] { table[byte] = skip }
        table[Int(UInt8(ascii: "="))] = pad
        return table
    }()
    private static let bad: UInt8 = 0xFF, skip: UInt8 = 0xFE, pad: UInt8 = 0xFD

    /// Standard base64 (RFC 4648 §4) with ASCII whitespace ignored (text wrapped at 64 or 76 columns, as receipts
    /// often are); padding optional, at the end only; trailing bits not checked. At most `maxBytes` decoded bytes
    /// (checked as it goes, so a huge input fails early). An empty or all-whitespace input decodes to `[]`.
    public static func decodeWrapped(_ input: UnsafeBufferPointer<UInt8>, maxBytes: Int) throws(WrappedFailure) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(min(input.count / 4 * 3 + 3, max(maxBytes, 0) + 3))
        var accumulator: UInt32 = 0, pending = 0, padding = 0
        for byte in input {
            let value = wrappedTable[Int(byte)]
            switch value {
            case skip: continue
            case pad:
                padding += 1
                guard padding <= 2 else { throw .tooMuchPadding }
                continue
            case bad: throw .unexpectedCharacter
            default: break
            }
            guard padding == 0 else { throw .dataAfterPadding }
            accumulator = accumulator << 6 | UInt32(value)
            pending += 1
            if pending == 4 {
                output.append(UInt8(truncatingIfNeeded: accumulator >> 16))
                output.append(UInt8(truncatingIfNeeded: accumulator >> 8))
                output.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator = 0
                pending = 0
                guard output.count <= maxBytes else { throw .tooLong }
            }
        }
        guard pending != 1 else { throw .truncated }
        guard padding == 0 || (pending + padding) % 4 == 0 else { throw .wrongPadding }
        if pending == 2 {
            output.append(UInt8(truncatingIfNeeded: accumulator >> 4))
        } else if pending == 3 {
            output.append(UInt8(truncatingIfNeeded: accumulator >> 10))
            output.append(UInt8(truncatingIfNeeded: accumulator >> 2))
        }
        guard output.count <= maxBytes else { throw .tooLong }
        return output
    }

    /// `decodeWrapped` over `String`'s UTF-8 view.
    public static func decodeWrapped(_ string: String, maxBytes: Int) throws(WrappedFailure) -> [UInt8] {
        var copy = string
        // withUTF8 rethrows untyped errors: carry the typed one out in a Result.
        return try copy.withUTF8 { bytes in
            Result { () throws(WrappedFailure) in try decodeWrapped(bytes, maxBytes: maxBytes) }
        }.get()
    }
}
