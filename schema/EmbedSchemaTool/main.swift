// EmbedSchemaTool <output.swift> <schema/NNNN_name.sql | schema/functions/name.sql>...
//
// Run by the EmbedSchema build-tool plugin (schema/EmbedSchema) when a file in schema/ changes: writes the
// Swift source of `Migration.embedded`, one `Migration` per `NNNN_name.sql`, in version order, and of
// `SchemaFunction.embedded`, one `SchemaFunction` per `functions/name.sql`, in name order, with each file's text
// reproduced byte for byte (the migrator records a SHA-256 of that text: a changed byte would make `migrate` refuse
// an already-migrated database, or re-apply a function). Exits 1 with a message naming the file on anything it
// cannot embed exactly, or on a function file that defines anything but `CREATE OR REPLACE FUNCTION name`, which
// fails the build.
import Foundation

struct FunctionFile {
    let name: String
    let sql: String
}

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

/// `bouncer_purchase_status.sql` → "bouncer_purchase_status"; nil unless lowercase ASCII letters, digits and `_`
/// (a PostgreSQL identifier that needs no quoting).
func parseFunctionFileName(_ fileName: String) -> String? {
    guard fileName.hasSuffix(".sql") else { return nil }
    let name = fileName.dropLast(4)
    guard let first = name.first, first.isASCII, first.isLetter || first == "_",
          name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
    else { return nil }
    return String(name)
}

/// The functions `sql` creates (every `CREATE [OR REPLACE] FUNCTION name`, lowercased, in order) and whether each
/// says `OR REPLACE`. Comments count too: a function file has no reason to spell that phrase in one.
func createdFunctions(_ sql: String) -> [(name: String, replaces: Bool)] {
    let words = sql.lowercased().split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
    var found: [(String, Bool)] = []
    for i in words.indices where words[i] == "create" {
        var j = i + 1
        var replaces = false
        if j + 1 < words.count, words[j] == "or", words[j + 1] == "replace" {
            replaces = true
            j += 2
        }
        if j + 1 < words.count, words[j] == "function" { found.append((String(words[j + 1]), replaces)) }
    }
    return found
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
guard arguments.count >= 2 else { fail("usage: EmbedSchemaTool <output.swift> <schema/NNNN_name.sql | schema/functions/name.sql>...") }
let output = URL(fileURLWithPath: arguments[1])

/// The file's text, exactly: strict UTF-8 (a lossy decode would embed text whose checksum differs from the file's) and
/// no NUL byte (PostgreSQL text cannot hold one).
func readExactly(_ path: String) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
    guard let sql = String(validating: Array(data), as: UTF8.self) else { fail("\(path) is not valid UTF-8") }
    guard !sql.utf8.contains(0) else { fail("\(path) contains a NUL byte, which PostgreSQL text cannot hold") }
    return sql
}

var files: [SchemaFile] = []
var functions: [FunctionFile] = []
for path in arguments.dropFirst(2) {
    let url = URL(fileURLWithPath: path)
    let fileName = url.lastPathComponent
    if url.deletingLastPathComponent().lastPathComponent == "functions" {
        guard let name = parseFunctionFileName(fileName) else {
            fail("\(path): a function file is named after its function, lowercase letters, digits and _ (e.g. bouncer_purchase_status.sql)")
        }
        let sql = readExactly(path)
        let created = createdFunctions(sql)
        guard !created.isEmpty, created.allSatisfy({ $0.name == name && $0.replaces }) else {
            fail("\(path) must define \(name) (and its overloads) with CREATE OR REPLACE FUNCTION \(name), and nothing else: it defines \(created.map { ($0.replaces ? "" : "(not OR REPLACE) ") + $0.name })")
        }
        functions.append(FunctionFile(name: name, sql: sql))
        continue
    }
    guard let (version, name) = parseFileName(fileName) else {
        fail("\(path): a migration is named NNNN_name.sql, the name of ASCII letters, digits, _ and - (e.g. 0004_add_refunds.sql)")
    }
    files.append(SchemaFile(version: version, name: name, fileName: fileName, sql: readExactly(path)))
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

    extension SchemaFunction {
        /// Every function in `schema/functions/`, in name order, compiled into the binary at build time.
        public static let embedded: [SchemaFunction] = [

    """
functions.sort { $0.name < $1.name }
for function in functions {
    source += """
                // schema/functions/\(function.name).sql
                SchemaFunction(name: "\(function.name)", sql: \"\"\"
        \(swiftLiteralBody(function.sql))
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
