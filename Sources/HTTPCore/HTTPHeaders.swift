/// Ordered HTTP header fields; duplicates are kept, lookups are case-insensitive (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One field as received or to be sent.
    public typealias Element = (name: String, value: String)

    @usableFromInline var fields: [Element]

    /// Empty headers.
    public init() { fields = [] }

    /// Headers in the given order.
    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    /// `["Content-Type": "application/json"]`; order is the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Number of fields, counting duplicates.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The first value of `name` (case-insensitive) or nil; `set` replaces all values of `name`.
    public subscript(name: String) -> String? {
        get {
            for field in fields where Self.equalsIgnoringASCIICase(field.name, name) { return field.value }
            return nil
        }
        set {
            if let newValue { set(name, newValue) } else { remove(name) }
        }
    }

    /// Every value of `name` in order (case-insensitive).
    public func values(for name: String) -> [String] {
        fields.filter { Self.equalsIgnoringASCIICase($0.name, name) }.map(\.value)
    }

    /// Appends a field, keeping existing ones with the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalsIgnoringASCIICase($0.name, name) }
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.equalsIgnoringASCIICase($0.name, name) }
    }

    /// Iterates fields in order.
    public func makeIterator() -> IndexingIterator<[Element]> { fields.makeIterator() }

    /// `name: value` lines, for debugging.
    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// ASCII case-insensitive comparison: header names are tokens, so no Unicode folding applies.
    static func equalsIgnoringASCIICase(_ a: String, _ b: String) -> Bool {
        var ia = a.utf8.makeIterator()
        var ib = b.utf8.makeIterator()
        while true {
            let ca = ia.next(), cb = ib.next()
            guard let x = ca, let y = cb else { return ca == nil && cb == nil }
            if x == y { continue }
            if (x | 0x20) != (y | 0x20) { return false }
            let lower = x | 0x20
            if lower < 0x61 || lower > 0x7A { return false }
        }
    }
}
