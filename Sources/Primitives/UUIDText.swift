extension Hex {
    /// A UUID's 16 bytes as its 8-4-4-4-12 text (RFC 9562 §4), lowercase unless `uppercase`: the one writer of an id's
    /// text (the API's and the database's lowercase ids, the cache's uppercase announcements). Foundation's
    /// `uuidString` costs ~6,600 instructions a call; this writes 36 bytes. Bytes past the 16th are ignored and a
    /// shorter buffer writes only its own bytes, so it never reads out of bounds.
    public static func uuidText(_ bytes: UnsafeRawBufferPointer, uppercase: Bool = false) -> String {
        let digits: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { out in
            var o = 0
            for (i, byte) in bytes.prefix(16).enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o &+= 1
                }
                // byte >> 4 and byte & 0x0F are both < 16: always inside the 16-byte table.
                out[o] = digits.utf8Start[Int(byte &>> 4)]
                out[o &+ 1] = digits.utf8Start[Int(byte & 0x0F)]
                o &+= 2
            }
            return o
        }
    }
}
