/// A project's key pair as generated: the public key ships in apps, the secret key only to the customer's backend.
public struct ProjectKeys: Sendable, Equatable {
    /// `pk_` followed by 32 hex digits (128 random bits).
    public var publicKey: String
    /// `sk_` followed by 64 hex digits (256 random bits); shown once, stored only hashed.
    public var secretKey: String

    /// Generates a fresh pair from `generator` (the system's CSPRNG in production).
    public static func generate(using generator: inout some RandomNumberGenerator) -> ProjectKeys {
        ProjectKeys(publicKey: "pk_" + hex(count: 16, &generator), secretKey: "sk_" + hex(count: 32, &generator))
    }

    /// Generates a fresh pair from the system's CSPRNG.
    public static func generate() -> ProjectKeys {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    private static func hex(count: Int, _ generator: inout some RandomNumberGenerator) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(count * 2)
        for _ in 0..<count {
            let byte = UInt8.random(in: 0...255, using: &generator)
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return out
    }

    /// Whether `key` looks like a public key (cheap syntax check before any lookup).
    public static func isPublicKeySyntax(_ key: String) -> Bool {
        key.hasPrefix("pk_") && key.utf8.count == 35 && key.utf8.dropFirst(3).allSatisfy(isHexDigit)
    }

    /// Whether `key` looks like a secret key.
    public static func isSecretKeySyntax(_ key: String) -> Bool {
        key.hasPrefix("sk_") && key.utf8.count == 67 && key.utf8.dropFirst(3).allSatisfy(isHexDigit)
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 97 && c <= 102)
    }

    /// Compares two byte strings in time that depends only on their lengths (for secrets and their hashes).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
