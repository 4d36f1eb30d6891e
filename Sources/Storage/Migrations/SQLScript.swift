/// A migration's text cut into its statements, for a server that must receive them one by one (`Migrator` on a Citus
/// coordinator: Citus forwards a `CREATE INDEX` on a distributed table to the workers with the whole query string it
/// came in, and a worker refuses several commands there: "cannot insert multiple commands into a prepared statement").
///
/// Splits at `;` outside quotes and comments, as psql does: '…' (with '' inside; E'…' with backslash escapes too),
/// "…", $tag$…$tag$, -- to the end of the line and /* … */ (nested). Input is our own schema files, compiled into the
/// binary, never a request's. Each statement keeps its text without the `;`; empty ones (only blanks and comments)
/// are left out.
enum SQLScript {
    static func statements(_ script: String) -> [String] {
        let s = Array(script.unicodeScalars)
        var statements: [String] = []
        var start = 0
        var meaningful = false  // the current statement has something besides blanks and comments
        var i = 0
        func isIdentifier(_ c: Unicode.Scalar) -> Bool {
            c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "$"
        }
        func finish(_ end: Int) {
            if meaningful { statements.append(String(String.UnicodeScalarView(s[start..<end]))) }
            meaningful = false
        }
        while i < s.count {
            let c = s[i]
            let next: Unicode.Scalar? = i + 1 < s.count ? s[i + 1] : nil
            if c == "-" && next == "-" {
                while i < s.count && s[i] != "\n" { i += 1 }
            } else if c == "/" && next == "*" {
                var depth = 1
                i += 2
                while i < s.count && depth > 0 {
                    if s[i] == "/" && i + 1 < s.count && s[i + 1] == "*" { depth += 1; i += 2 }
                    else if s[i] == "*" && i + 1 < s.count && s[i + 1] == "/" { depth -= 1; i += 2 }
                    else { i += 1 }
                }
            } else if c == "'" {
                meaningful = true
                let escapes = i > 0 && (s[i - 1] == "E" || s[i - 1] == "e") && !(i > 1 && isIdentifier(s[i - 2]))
                i += 1
                while i < s.count {
                    if escapes && s[i] == "\\" { i += 2; continue }
                    if s[i] == "'" {
                        if i + 1 < s.count && s[i + 1] == "'" { i += 2; continue }
                        break
                    }
                    i += 1
                }
                i += 1
            } else if c == "\"" {
                meaningful = true
                i += 1
                while i < s.count && s[i] != "\"" { i += 1 }  // "" inside is two quoted parts: the same split
                i += 1
            } else if c == "$" && !(i > 0 && isIdentifier(s[i - 1])), let tag = dollarTag(s, at: i) {
                meaningful = true
                i += tag.count
                while i < s.count && !s[i...].starts(with: tag) { i += 1 }
                i += tag.count
            } else if c == ";" {
                finish(i)
                i += 1
                start = i
            } else {
                if !c.properties.isWhitespace { meaningful = true }
                i += 1
            }
        }
        finish(min(i, s.count))
        return statements
    }

    /// The dollar-quote opening at `i` (`$$` or `$tag$`, the tag an identifier without `$`), or nil (a parameter
    /// such as `$1`, or a lone `$`).
    private static func dollarTag(_ s: [Unicode.Scalar], at i: Int) -> [Unicode.Scalar]? {
        var j = i + 1
        while j < s.count, s[j] != "$" {
            let c = s[j]
            guard c.properties.isAlphabetic || c == "_" || (j > i + 1 && ("0"..."9").contains(c)) else { return nil }
            j += 1
        }
        guard j < s.count else { return nil }
        return Array(s[i...j])
    }
}
