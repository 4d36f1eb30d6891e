/// A JSON object: ordered `(key, value)` members with unique keys.
///
/// Order is insertion (= document) order, so serialization is deterministic. Small objects are
/// searched linearly (faster than hashing for the ~25 keys of an Apple payload); objects with more
/// than `indexThreshold` members carry a dictionary index so lookups and the parser's duplicate
/// check stay O(1) on hostile input.
///
/// Equality is JSON's: the same keys with equal values, in any order.
public struct JSONObject: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One member.
    public typealias Element = (key: String, value: JSONValue)

    /// Member count above which a key → position index is kept.
    static let indexThreshold = 32

    /// Storage element. A struct rather than the `Element` tuple so the array's value witnesses
    /// are specialized (tuple arrays go through the runtime's generic tuple code).
    struct Member: Sendable {
        let key: String
        var value: JSONValue
    }

    /// Iterates members in order as `(key, value)`.
    public struct Iterator: IteratorProtocol {
        private var base: IndexingIterator<[Member]>
        init(_ members: [Member]) { base = members.makeIterator() }
        /// The next member, or `nil` at the end.
        public mutating func next() -> Element? {
            guard let member = base.next() else { return nil }
            return (member.key, member.value)
        }
    }

    private var members: [Member]
    private var index: [String: Int]

    /// An empty object.
    public init() {
        members = []
        index = [:]
    }

    /// Members from the parser, already known to have unique keys; `index` built when large.
    init(uniqueMembers: [Member], index: [String: Int]) {
        self.members = uniqueMembers
        self.index = index
    }

    /// Builds an object in the given order; a repeated key replaces the earlier value in place.
    public init(_ pairs: some Sequence<(String, JSONValue)>) {
        self.init()
        for (key, value) in pairs { self[key] = value }
    }

    /// `["a": 1, "b": "x"]`, keeping the written order; a repeated key replaces the earlier value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }

    /// Number of members.
    public var count: Int { members.count }

    /// True if there are no members.
    public var isEmpty: Bool { members.isEmpty }

    /// Keys in order.
    public var keys: [String] { members.map(\.key) }

    /// Values in order.
    public var values: [JSONValue] { members.map(\.value) }

    /// Iterates members in order.
    public func makeIterator() -> Iterator { Iterator(members) }

    /// The value for `key`, or `nil`. Setting replaces in place or appends; setting `nil` removes.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let position = position(of: key) else { return nil }
            return members[position].value
        }
        set {
            let position = position(of: key)
            switch (position, newValue) {
            case (let position?, let value?):
                members[position].value = value
            case (nil, let value?):
                members.append(Member(key: key, value: value))
                if !index.isEmpty {
                    index[key] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    rebuildIndex()
                }
            case (let position?, nil):
                members.remove(at: position)
                rebuildIndex()
            case (nil, nil):
                break
            }
        }
    }

    /// True if `key` is present (even with a `null` value).
    public func contains(key: String) -> Bool { position(of: key) != nil }

    /// Compact JSON text.
    public var description: String { JSONValue.object(self).serializedString() }

    private func position(of key: String) -> Int? {
        if !index.isEmpty { return index[key] }
        for position in members.indices where members[position].key == key { return position }
        return nil
    }

    private mutating func rebuildIndex() {
        guard members.count > Self.indexThreshold else {
            index = [:]
            return
        }
        var fresh = [String: Int](minimumCapacity: members.count)
        for (position, member) in members.enumerated() { fresh[member.key] = position }
        index = fresh
    }

    /// Same keys, equal values, any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for member in lhs.members {
            guard let other = rhs[member.key], other == member.value else { return false }
        }
        return true
    }

    /// True if both have the same members in the same order (`==` ignores order).
    public func orderedEquals(_ other: JSONObject) -> Bool {
        members.elementsEqual(other.members) { $0.key == $1.key && $0.value == $1.value }
    }
}
