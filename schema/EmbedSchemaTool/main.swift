// EmbedSchemaTool <output.swift> <schema/NNNN_name.sql>...
//
// Run by the EmbedSchema build-tool plugin (schema/EmbedSchema) when a file in schema/ changes: writes the
// Swift source of `Migration.embedded`, one `Migration` per `NNNN_name.sql`, in version order, with each
// file's text reproduced byte for byte (the migrator records a SHA-256 of that text; a changed byte would
// make `migrate` refuse an already-migrated database). Exits 1 with a message naming the file on anything
// it cannot embed exactly, which fails the build.
import Foundation

struct SchemaFile {
    let version: Int
    let name: String
    let fileName: String
    let sql: String
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("error: EmbedSchemaTool: \(message)\n".utf8))
    exit(1)
}

/// `0004_environment_identity.sql` → (4, "environment_identity"); nil when the name does not fit the pattern.
/// The name is limited to ASCII letters, digits, `_` and `-`: it is recorded in `schema_migrations.name`
/// and printed in logs, and needs no escaping in the generated source.
func parseFileName(_ fileName: String) -> (version: Int, name: String)? {
    guard fileName.hasSuffix(".sql") else { return nil }
    let base = fileName.dropLast(4)
    guard let underscore = base.firstIndex(of: "_") else { return nil }
    let digits = base[..<underscore]
    let name = base[base.index(after: underscore)...]
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let version = Int(digits),
          !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
    else { return nil }
    return (version, String(name))
}

/// The body of a Swift multi-line string literal whose value is exactly `text`: every `\` and `"` is
/// escaped (so no `"""` or line continuation can occur), CR and other control characters become escapes
/// (a literal's raw line breaks always read as LF), and LF stays a real line break for readable output.
func swiftLiteralBody(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.utf8.count + text.utf8.count / 16)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "\n": out += "\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { fail("usage: EmbedSchemaTool <output.swift> <schema/NNNN_name.sql>...") }
let output = URL(fileURLWithPath: arguments[1])

var files: [SchemaFile] = []
for path in arguments.dropFirst(2) {
    let fileName = URL(fileURLWithPath: path).lastPathComponent
    guard let (version, name) = parseFileName(fileName) else {
        fail("\(path): a migration is named NNNN_name.sql, the name of ASCII letters, digits, _ and - (e.g. 0004_add_refunds.sql)")
    }
    guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
    // Strict UTF-8: a lossy decode would embed text whose checksum differs from the file's.
    guard let sql = String(validating: Array(data), as: UTF8.self) else { fail("\(path) is not valid UTF-8") }
    guard !sql.utf8.contains(0) else { fail("\(path) contains a NUL byte, which PostgreSQL text cannot hold") }
    files.append(SchemaFile(version: version, name: name, fileName: fileName, sql: sql))
}
files.sort { $0.version < $1.version }
for (previous, next) in zip(files, files.dropFirst()) where previous.version == next.version {
    fail("\(previous.fileName) and \(next.fileName) share version \(next.version)")
}

var source = """
    // Generated at build time by the EmbedSchema plugin (schema/EmbedSchemaTool) from schema/*.sql.
    // Not in the source tree: edit or add files in schema/ and build.

    extension Migration {
        /// Every migration in `schema/`, in version order, compiled into the binary at build time.
        public static let embedded: [Migration] = [

    """
for file in files {
    source += """
                // schema/\(file.fileName)
                Migration(version: \(file.version), name: "\(file.name)", sql: \"\"\"
        \(swiftLiteralBody(file.sql))
        \"\"\"),

        """
}
source += """
        ]
    }

    """

do {
    // Rewrite only on change, so an unrelated build does not recompile Storage.
    if FileManager.default.contents(atPath: output.path) != Data(source.utf8) {
        try Data(source.utf8).write(to: output, options: .atomic)
    }
} catch {
    fail("cannot write \(output.path): \(error)")
}
