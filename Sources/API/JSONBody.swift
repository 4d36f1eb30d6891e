import Foundation
import JSON
import Primitives

/// Builds a response body directly as JSON bytes.
///
/// Responses have a fixed shape, so writing them field by field avoids building a `JSONValue` tree (an
/// allocation per node) on the hot path. Callers write keys and punctuation in order; strings go through the
/// JSON module's `JSONWriter.writeString`, the one JSON string escaper of the codebase.
struct JSONBody {
    private var writer: JSONWriter

    /// The bytes written so far.
    var bytes: [UInt8] { writer.bytes }

    init(capacity: Int = 256) {
        writer = JSONWriter(reservingCapacity: capacity)
    }

    /// Appends literal JSON text (keys, punctuation, `true`…), written by us, never by a client.
    mutating func raw(_ text: StaticString) {
        writer.writeRaw(text)
    }

    /// Appends `value` as a JSON string.
    mutating func string(_ value: String) {
        writer.writeString(value)
    }

    /// Appends `value` as a JSON string, or `null`.
    mutating func stringOrNull(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    /// Appends `["a","b"]`.
    mutating func strings(_ values: [String]) {
        writer.writeRaw("[")
        for (i, value) in values.enumerated() {
            if i > 0 { writer.writeRaw(",") }
            string(value)
        }
        writer.writeRaw("]")
    }

    /// Appends `true` or `false`.
    mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// Appends an integer.
    mutating func int(_ value: Int64) {
        writer.writeRaw { $0.append(contentsOf: String(value).utf8) }
    }

    /// Appends an integer, or `null`.
    mutating func intOrNull(_ value: Int64?) {
        if let value { int(value) } else { raw("null") }
    }

    /// Appends `"2027-03-20T00:00:00.000Z"`.
    mutating func date(_ value: Date) {
        writer.writeRaw { bytes in
            bytes.append(UInt8(ascii: "\""))
            RFC3339.append(secondsSince1970: value.timeIntervalSince1970, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Appends a parsed JSON value (stored JSON re-serialized, so only well-formed JSON is ever embedded).
    mutating func json(_ value: JSONValue) {
        let text = value.serializedString()
        writer.writeRaw { $0.append(contentsOf: text.utf8) }
    }

    /// Appends a date, or `null`.
    mutating func dateOrNull(_ value: Date?) {
        if let value { date(value) } else { raw("null") }
    }
}
