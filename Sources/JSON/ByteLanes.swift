/// SWAR tests of eight bytes at once, for the string fast paths of the parser and the writer.
enum ByteLanes {
    /// High bit set in each byte lane of `word` that is `"`, `\` or < 0x20. Classic "has zero / has less" bit
    /// tricks: borrows can only set lanes *above* a true hit, so the lowest set lane is always exact, which is all
    /// `Parser.scanRun` and `writeString` use.
    @inline(__always)
    static func quoteBackslashOrControl(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let flagged = ((quotes &- ones) & ~quotes)
            | ((backslashes &- ones) & ~backslashes)
            | ((word &- ones &* 0x20) & ~word)
        return flagged & 0x8080_8080_8080_8080
    }
}
