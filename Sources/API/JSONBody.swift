import Foundation
import JSON
import Primitives

/// Builds a response body directly as JSON bytes.
///
/// Responses have a fixed shape, so writing them field by field avoids building a `JSONValue` tree (an
/// allocation per node) on the hot path. A resource's writer opens an object, writes each member with `field`
/// (or `key` before a nested object or array) and closes it; the body places the commas. Keys and strings go
/// through the JSON module's `JSONWriter.writeString`, the one JSON string escaper of the codebase.
struct JSONBody {
    private var writer: JSONWriter
    /// Whether the next value or key starts its container or follows a key (no comma before it).
    private var atStart = true

    /// The bytes written so far.
    var bytes: [UInt8] { writer.bytes }

    init(capacity: Int = 256) {
        writer = JSONWriter(reservingCapacity: capacity)
    }

    /// A comma when a value or key follows another in its container.
    private mutating func separate() {
        if !atStart { writer.writeRaw(",") }
        atStart = false
    }

    /// The bytes of a new body (room for `capacity` bytes) that `write` writes: a response's one value.
    static func bytes(capacity: Int, _ write: (inout JSONBody) -> Void) -> [UInt8] {
        var body = JSONBody(capacity: capacity)
        write(&body)
        return body.bytes
    }

    /// `{"key":[…]}`, each item written by `write`: the envelope every admin list answers with.
    static func list<Item>(_ key: StaticString, _ items: [Item], capacity: Int,
                           _ write: (Item, inout JSONBody) -> Void) -> [UInt8] {
        bytes(capacity: capacity) { $0.object { $0.array(key, items, write) } }
    }

    // MARK: - Structure

    /// Opens an object (after a comma, when it follows a sibling).
    mutating func beginObject() { open("{") }

    /// Closes the open object.
    mutating func endObject() { close("}") }

    /// Opens an array (after a comma, when it follows a sibling).
    mutating func beginArray() { open("[") }

    /// Closes the open array.
    mutating func endArray() { close("]") }

    /// Writes an opening `bracket` (after a comma, when it follows a sibling): what follows is its first member.
    private mutating func open(_ bracket: StaticString) {
        separate()
        writer.writeRaw(bracket)
        atStart = true
    }

    /// Writes a closing `bracket`: what follows is its container's next member.
    private mutating func close(_ bracket: StaticString) {
        writer.writeRaw(bracket)
        atStart = false
    }

    /// Writes `"key":` in the open object; the next value (or `beginObject`/`beginArray`) is its value.
    mutating func key(_ key: StaticString) {
        writer.writeKey(key, comma: !atStart)
        atStart = true
    }

    /// Writes `"key":` for a key the data names (a currency code), escaped like any string.
    mutating func key(named key: String) {
        separate()
        writer.writeString(key)
        writer.writeRaw(":")
        atStart = true
    }

    // MARK: - Members

    /// Writes `"key":value`: a string, a Bool, an integer, a date (`"2027-03-20T00:00:00.000Z"`), `["a","b"]`, or
    /// `null` for a `nil` of any of them.
    mutating func field(_ key: StaticString, _ value: some JSONBodyValue) {
        self.key(key)
        value.write(into: &self)
    }

    /// Writes `"key":null`.
    mutating func null(_ key: StaticString) {
        self.key(key)
        null()
    }

    /// Writes `{…}`, its members written by `members`.
    mutating func object(_ members: (inout JSONBody) -> Void) {
        beginObject()
        members(&self)
        endObject()
    }

    /// Writes `"key":[…]`, each item written by `write` (one value each).
    mutating func array<Items: Sequence>(_ key: StaticString, _ items: Items,
                                         _ write: (Items.Element, inout JSONBody) -> Void) {
        self.key(key)
        beginArray()
        for item in items { write(item, &self) }
        endArray()
    }

    /// Writes `"key":[{…},…]`, one object per item, its members written by `members`.
    mutating func objects<Items: Sequence>(_ key: StaticString, _ items: Items,
                                           _ members: (Items.Element, inout JSONBody) -> Void) {
        array(key, items) { item, body in body.object { members(item, &$0) } }
    }

    // MARK: - Values

    /// Appends `null`.
    mutating func null() {
        separate()
        writer.writeRaw("null")
    }

    /// Appends `value` as a JSON string.
    mutating func string(_ value: String) {
        separate()
        writer.writeString(value)
    }

    /// Appends `["a","b"]`.
    mutating func strings(_ values: [String]) {
        beginArray()
        for value in values { string(value) }
        endArray()
    }

    /// Appends `true` or `false`.
    mutating func bool(_ value: Bool) {
        separate()
        if value { writer.writeRaw("true") } else { writer.writeRaw("false") }
    }

    /// Appends an integer.
    mutating func int(_ value: Int64) {
        separate()
        writer.writeRaw { $0.append(contentsOf: String(value).utf8) }
    }

    /// Appends `"2027-03-20T00:00:00.000Z"`.
    mutating func date(_ value: Date) {
        separate()
        writer.writeRaw { bytes in
            bytes.append(UInt8(ascii: "\""))
            RFC3339.append(secondsSince1970: value.timeIntervalSince1970, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// Appends a parsed JSON value (stored JSON re-serialized, so only well-formed JSON is ever embedded).
    mutating func json(_ value: JSONValue) {
        separate()
        writer.write(value)   // into the body's buffer: no intermediate String
    }
}

/// A value `JSONBody.field` writes as a member's value; `nil` of any of them is `null`.
protocol JSONBodyValue {
    /// Appends the value (after a comma, when it follows a sibling).
    func write(into body: inout JSONBody)
}

extension String: JSONBodyValue {
    func write(into body: inout JSONBody) { body.string(self) }
}

extension Bool: JSONBodyValue {
    func write(into body: inout JSONBody) { body.bool(self) }
}

extension Int64: JSONBodyValue {
    func write(into body: inout JSONBody) { body.int(self) }
}

extension Int: JSONBodyValue {
    func write(into body: inout JSONBody) { body.int(Int64(self)) }
}

extension Date: JSONBodyValue {
    func write(into body: inout JSONBody) { body.date(self) }
}

extension Array: JSONBodyValue where Element == String {
    func write(into body: inout JSONBody) { body.strings(self) }
}

extension Optional: JSONBodyValue where Wrapped: JSONBodyValue {
    func write(into body: inout JSONBody) {
        if let self { self.write(into: &body) } else { body.null() }
    }
}
