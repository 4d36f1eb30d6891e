public import Foundation
import Postgres
import Primitives

/// One "this changed" announcement on the `NOTIFY` channel that keeps every instance's caches true.
///
/// The wire form is one line per message (`P <project>`, `A <project>`, `U <project> <user>`,
/// `T <project> <environment> <original transaction id>`), free text in base64url so no user id can break a line;
/// a payload is several lines, optionally led by `I <instance>` (the sender, which skips its own echo).
public enum CacheMessage: Hashable, Sendable {
    /// The project's settings, keys or products changed, or it was deleted: reload it, forget its users' reads.
    case project(UUID)
    /// Every cached read of the project's users is stale (used when a finer message would not fit a payload).
    case allUsers(UUID)
    /// The user's set of bound purchases changed.
    case user(UUID, userId: String)
    /// The purchase's facts or holders changed: every user holding it reads again.
    case purchase(UUID, environment: String, originalTransactionId: String)

    /// The PostgreSQL channel all instances listen on.
    public static let channel = "bouncer_cache"
    /// `NOTIFY` payloads must stay under 8000 bytes; this leaves room for the instance line.
    static let payloadLimit = 7_900

    /// The project the message is about.
    public var projectId: UUID {
        switch self {
        case .project(let id), .allUsers(let id), .user(let id, _), .purchase(let id, _, _): id
        }
    }

    /// The message's line, or for a line too long for one payload, the coarser `.allUsers` line.
    var line: String {
        let text: String
        switch self {
        case .project(let id): text = "P " + Self.text(id)
        case .allUsers(let id): text = "A " + Self.text(id)
        case .user(let id, let user): text = "U " + Self.text(id) + " " + Self.encode(user)
        case .purchase(let id, let environment, let original):
            text = "T " + Self.text(id) + " " + Self.encode(environment) + " " + Self.encode(original)
        }
        return text.utf8.count <= Self.payloadLimit - 64 ? text : "A " + Self.text(projectId)
    }

    /// Parses one line; nil for anything malformed (ignored: a newer sender may know more kinds).
    init?(line: Substring) {
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count >= 2, let id = UUID(uuidString: String(parts[1])) else { return nil }
        switch (parts[0], parts.count) {
        case ("P", 2): self = .project(id)
        case ("A", 2): self = .allUsers(id)
        case ("U", 3):
            guard let user = Self.decode(parts[2]) else { return nil }
            self = .user(id, userId: user)
        case ("T", 4):
            guard let environment = Self.decode(parts[2]), let original = Self.decode(parts[3]) else { return nil }
            self = .purchase(id, environment: environment, originalTransactionId: original)
        default: return nil
        }
    }

    /// Sends `messages` from `origin` on `channel`, in one statement on one of `pool`'s connections; returns how
    /// many payloads that took.
    @discardableResult
    static func send(_ messages: [CacheMessage], origin: UUID, pool: ConnectionPool) throws -> Int {
        let payloads = payloads(messages, origin: origin)
        try pool.withConnection { connection in
            _ = try connection.execute("SELECT pg_notify(\(channel), p) FROM unnest(\(payloads)::text[]) AS p")
        }
        return payloads.count
    }

    /// Packs `messages` into as few payloads as fit the limit, each led by `I <origin>`.
    static func payloads(_ messages: [CacheMessage], origin: UUID) -> [String] {
        let head = Self.head(origin: origin)
        var payloads: [String] = []
        var current = head
        for message in messages {
            let line = message.line
            if current.utf8.count + 1 + line.utf8.count > payloadLimit {
                payloads.append(current)
                current = head
            }
            current += "\n" + line
        }
        if current != head { payloads.append(current) }
        return payloads
    }

    /// The first line of every payload `origin` sends.
    static func head(origin: UUID) -> String { "I " + text(origin) }

    /// `id.uuidString` (upper-case 8-4-4-4-12) without Foundation's formatter, which cost ~6,600 instructions a
    /// call in callgrind: every receipt announces three ids.
    static func text(_ id: UUID) -> String {
        withUnsafeBytes(of: id.uuid) { Hex.uuidText($0, uppercase: true) }
    }

    /// The sender (`I` line, if any) and the messages of a payload.
    static func parse(payload: String) -> (origin: UUID?, messages: [CacheMessage]) {
        var origin: UUID?
        var messages: [CacheMessage] = []
        for line in payload.split(separator: "\n") {
            if line.hasPrefix("I ") {
                origin = UUID(uuidString: String(line.dropFirst(2)))
            } else if let message = CacheMessage(line: line) {
                messages.append(message)
            }
        }
        return (origin, messages)
    }

    /// Unpadded base64url of the UTF-8 bytes (Foundation's encode-then-replace chain cost about 100k instructions
    /// per receipt in callgrind: every POST announces its user and purchase).
    static func encode(_ text: String) -> String {
        Base64.encodeURL(Array(text.utf8))
    }

    /// The text of an unpadded base64url string; nil for any other character (padding included), an impossible
    /// length, non-zero trailing bits or bytes that are not UTF-8.
    static func decode(_ text: Substring) -> String? {
        var text = text
        return text.withUTF8 { chars -> String? in
            guard !chars.contains(UInt8(ascii: "=")), let bytes = Base64.decodeURL(chars) else { return nil }
            return String(validating: bytes, as: UTF8.self)
        }
    }
}
