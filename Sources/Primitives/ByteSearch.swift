#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding one byte in contiguous memory: the one author of the scans over a receipt's texts (a JWS's dots, a field's
/// or a bind's NUL). `memchr` reads machine words; iterating `String.utf8` costs ~30 instructions a byte, and a
/// receipt carries ~4 KB of such text several times over (issue 22).
extension UnsafeBufferPointer<UInt8> {
    /// The offset of the first `byte` at or after `start`; nil when there is none or `start` is past the end.
    public func offset(of byte: UInt8, from start: Int = 0) -> Int? {
        guard let base = baseAddress, start >= 0, start < count,
              let found = memchr(base + start, Int32(byte), count - start) else { return nil }
        return UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
    }
}

extension String {
    /// The UTF-8 offset of the first `byte` at or after UTF-8 offset `start`; nil when there is none. A bridged or
    /// otherwise non-contiguous string is made contiguous first (one copy).
    public func utf8Offset(of byte: UInt8, from start: Int = 0) -> Int? {
        var text = self
        return text.withUTF8 { $0.offset(of: byte, from: start) }
    }
}

extension Array<UInt8> {
    /// The offset of the first `byte`; nil when there is none.
    public func offset(of byte: UInt8) -> Int? {
        withUnsafeBufferPointer { $0.offset(of: byte) }
    }
}
