import Crypto
public import Domain

/// `MemberCryptography` over OpenSSL (`Crypto`): PBKDF2-HMAC-SHA256 for passwords, HMAC-SHA1 TOTP, `RAND_bytes`.
public struct OpenSSLMemberCryptography: MemberCryptography {
    /// The OpenSSL implementation (it holds nothing).
    public init() {}

    public func derive(password: String, salt: [UInt8], iterations: Int) -> [UInt8] {
        // Nil only for parameters out of range (MemberRules' are not) or an OpenSSL failure: an empty digest then,
        // which no stored 32-byte hash equals, so the sign-in fails closed.
        PBKDF2.sha256(password: Array(password.utf8), salt: salt, iterations: iterations) ?? []
    }

    public func totpCode(secret: [UInt8], step: UInt64) -> String {
        OneTimePassword.hotp(secret: secret, counter: step, digits: 6)
    }

    public func randomBytes(_ count: Int) -> [UInt8] { SecureRandom.bytes(count) }
}
