import Primitives

/// A project's key pair as generated: the public key ships in apps, the secret key only to the customer's backend.
public struct ProjectKeys: Sendable, Equatable {
    /// `pk_` followed by 32 hex digits (128 random bits).
    public var publicKey: String
    /// `sk_` followed by 64 hex digits (256 random bits); shown once, stored only hashed.
    public var secretKey: String

    /// Generates a fresh pair from `generator` (the system's CSPRNG in production).
    public static func generate(using generator: inout some RandomNumberGenerator) -> ProjectKeys {
        ProjectKeys(publicKey: "pk_" + Hex.random(count: 16, using: &generator),
                    secretKey: "sk_" + Hex.random(count: 32, using: &generator))
    }

    /// Generates a fresh pair from the system's CSPRNG.
    public static func generate() -> ProjectKeys {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    /// Whether `key` looks like a public key (cheap syntax check before any lookup).
    public static func isPublicKeySyntax(_ key: String) -> Bool {
        hasKeySyntax(key, tag: UInt8(ascii: "p"), length: 35)
    }

    /// Whether `key` looks like a secret key.
    public static func isSecretKeySyntax(_ key: String) -> Bool {
        hasKeySyntax(key, tag: UInt8(ascii: "s"), length: 67)
    }

    /// `<tag>k_` then lowercase hex, `length` bytes in all. Byte by byte: every request with a key runs it, and
    /// `hasPrefix` (which compares characters) with a `UTF8View` walk cost ~3,000 instructions.
    private static func hasKeySyntax(_ key: String, tag: UInt8, length: Int) -> Bool {
        var key = key
        return key.withUTF8 { bytes in
            bytes.count == length && bytes[0] == tag && bytes[1] == UInt8(ascii: "k") && bytes[2] == UInt8(ascii: "_")
                && bytes[3...].allSatisfy(Hex.isLowercaseDigit)
        }
    }

    /// Compares two byte strings in time that depends only on their lengths (for secrets and their hashes).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
