public import Foundation

/// A project's App Store Server API credentials as front ends show them: never the private key.
public struct AppStoreCredentials: Sendable, Equatable {
    /// The team's Issuer ID (a UUID, lowercase), the JWT's `iss`.
    public var issuerId: String
    /// The In-App Purchase key's 10-character id, the JWT's `kid`.
    public var keyId: String
    /// Lowercase hex SHA-256 of the key's public half (DER SubjectPublicKeyInfo): identifies the key without
    /// revealing it (`openssl pkey -in key.p8 -pubout -outform DER | sha256sum` prints the same).
    public var keyFingerprint: String
    /// When credentials were first stored for the project.
    public var createdAt: Date
    /// When they were last replaced.
    public var updatedAt: Date

    /// Creates a value.
    public init(issuerId: String, keyId: String, keyFingerprint: String, createdAt: Date, updatedAt: Date) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.keyFingerprint = keyFingerprint
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// Bytes sealed by a `CredentialSealing` (AES-256-GCM in production), with the id of the key that sealed them.
///
/// `bytes` are the sealer's own versioned format (nonce, ciphertext, tag); only the sealer reads them.
public struct SealedSecret: Sendable, Equatable {
    /// Which encryption key sealed `bytes`: lowercase hex of the first 8 bytes of SHA-256 of the key.
    public var keyId: String
    /// The sealed box.
    public var bytes: [UInt8]

    /// Creates a value.
    public init(keyId: String, bytes: [UInt8]) {
        self.keyId = keyId
        self.bytes = bytes
    }
}

/// A key as a store keeps it: what front ends may show, and the private key (a PKCS#8 PEM in clear only inside the
/// sealer) sealed.
public struct SealedKey<Public: Sendable & Equatable>: Sendable, Equatable {
    /// What front ends may show.
    public var publicHalf: Public
    /// The private key, sealed.
    public var sealedPrivateKey: SealedSecret

    /// Creates a value.
    public init(publicHalf: Public, sealedPrivateKey: SealedSecret) {
        self.publicHalf = publicHalf
        self.sealedPrivateKey = sealedPrivateKey
    }
}

/// Credentials as the store keeps them: the metadata and the sealed private key.
public typealias StoredAppStoreCredentials = SealedKey<AppStoreCredentials>

/// Credentials opened for use (signing Apple's JWT): the only value that holds the private key in clear.
///
/// Printing it (`description`, `debugDescription`, `dump`, a log interpolation) shows the metadata only.
public struct UnsealedAppStoreCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The metadata.
    public var credentials: AppStoreCredentials
    /// The PKCS#8 PEM as it was stored.
    public var privateKeyPEM: String

    /// The key id and fingerprint, never the key.
    public var description: String {
        "UnsealedAppStoreCredentials(keyId: \(credentials.keyId), fingerprint: \(credentials.keyFingerprint))"
    }

    /// Same as `description`.
    public var debugDescription: String { description }

    /// Reflection (`dump`, `String(reflecting:)` of a containing value) sees the metadata only.
    public var customMirror: Mirror { Mirror(self, children: ["credentials": credentials]) }
}

/// Seals secrets at rest (AES-256-GCM under `BOUNCER_ENCRYPTION_KEY`, implemented by the executable over `Crypto`).
///
/// `associatedData` is authenticated but not stored: a sealed value opens only with the same bytes, so a value
/// copied to another project's row does not open there.
public protocol CredentialSealing: Sendable {
    /// The id of the key `seal` uses (see `SealedSecret.keyId`).
    var currentKeyId: String { get }
    /// Seals `plaintext` under the current key.
    func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> SealedSecret
    /// Opens a value sealed under the current key or a previous one still configured.
    /// - Throws: `DomainError` `.encryptionKeyUnknown` (no configured key has `sealed.keyId`) or
    ///   `.sealedSecretCorrupt` (authentication failed: wrong associated data, or the bytes were altered).
    func open(_ sealed: SealedSecret, associatedData: [UInt8]) throws -> [UInt8]
}

extension Optional where Wrapped == any CredentialSealing {
    /// The sealer, or `.encryptionKeyMissing` saying what cannot be done without one (the server has no
    /// `BOUNCER_ENCRYPTION_KEY`): one author of the refusal for every secret Bouncer stores sealed.
    func required(_ refusal: @autoclosure () -> String) throws -> any CredentialSealing {
        guard let self else { throw DomainError(.encryptionKeyMissing, refusal()) }
        return self
    }

    /// The sealer, or `.encryptionKeyMissing` saying that `secrets` (e.g. "webhook secrets") cannot be encrypted
    /// and how the operator makes a key: the refusal of every per-project secret a request seals.
    func required(toEncrypt secrets: String) throws -> any CredentialSealing {
        try required("BOUNCER_ENCRYPTION_KEY is not set: \(secrets) cannot be encrypted. Set it to "
            + "32 random bytes in base64 (`openssl rand -base64 32`).")
    }
}

extension SealedSecret {
    /// What a project's sealed secret is bound to: its kind and its project, in format version 1
    /// (`bouncer:KIND:v1:PROJECT`), so a value copied to another project's row or another kind's column does not open.
    static func associatedData(_ kind: String, _ projectId: UUID) -> [UInt8] {
        Array("bouncer:\(kind):v1:\(projectId.lowercasedText)".utf8)
    }
}

/// What a private key shows about itself once parsed.
public struct InspectedPrivateKey: Sendable, Equatable {
    /// See `AppStoreCredentials.keyFingerprint`.
    public var fingerprint: String

    /// Creates a value.
    public init(fingerprint: String) {
        self.fingerprint = fingerprint
    }
}

/// Checks that a PEM is a PKCS#8 P-256 private key (an App Store Connect `.p8`) and fingerprints it.
public protocol PrivateKeyInspecting: Sendable {
    /// The key's fingerprint.
    /// - Throws: `PrivateKeyRejection` with a reason safe to show (never the key's bytes).
    func inspect(pem: String) throws -> InspectedPrivateKey
}

/// A private key that is not usable: not PEM, not PKCS#8, not EC, not P-256.
public struct PrivateKeyRejection: Error, Sendable, CustomStringConvertible {
    /// Why, safe to show a client (it never quotes the key).
    public var reason: String

    /// Creates a value.
    public init(reason: String) {
        self.reason = reason
    }

    /// See `reason`.
    public var description: String { reason }
}

/// Per-project App Store Server API credentials.
///
/// Every method throws `DomainError` with `.serviceUnavailable` when the store cannot be reached.
public protocol AppStoreCredentialStore: Sendable {
    /// The project's credentials, if any.
    func credentials(projectId: UUID) throws -> StoredAppStoreCredentials?
    /// Creates or replaces the project's credentials (keeping the first `createdAt`); `.projectNotFound` when the
    /// project does not exist.
    func setCredentials(projectId: UUID, _ credentials: StoredAppStoreCredentials) throws -> StoredAppStoreCredentials
    /// Deletes the project's credentials; false when there were none.
    func deleteCredentials(projectId: UUID) throws -> Bool
    /// Every project's sealed private key, by project id (for re-encryption).
    func allSealedPrivateKeys() throws -> [(projectId: UUID, sealed: SealedSecret)]
    /// Replaces the sealed private key only if it is still `old` (a concurrent `setCredentials` wins); true when
    /// replaced. Nothing else changes (`updatedAt` is about the credentials, not their encryption).
    func replaceSealedPrivateKey(projectId: UUID, old: SealedSecret, new: SealedSecret) throws -> Bool
}

/// The rules for credentials as App Store Connect issues them, shared by the admin API and the CLI.
public enum AppStoreCredentialRules {
    /// A `.p8` is ~250 bytes; the bound only keeps hostile input small.
    public static let maxPrivateKeyBytes = 8192
    /// App Store Connect's key ids are 10 characters, uppercase letters and digits (e.g. `2X9R4HXF34`).
    public static let keyIdLength = 10
    /// The header a PKCS#8 PEM (what App Store Connect's `.p8` contains) starts with.
    public static let pkcs8Header = "-----BEGIN PRIVATE KEY-----"

    /// Every syntactic rule the inputs break (the key's cryptography is `PrivateKeyInspecting`'s).
    public static func problems(issuerId: String, keyId: String, privateKeyPEM: String) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if UUID(uuidString: issuerId) == nil || issuerId.utf8.count != 36 {
            out.append(FieldProblem(path: ["issuer_id"], message: "Invalid uuid"))
        }
        if keyId.utf8.count != keyIdLength || !keyId.utf8.allSatisfy(isKeyIdByte) {
            out.append(FieldProblem(
                path: ["key_id"], message: "Must be \(keyIdLength) characters: uppercase letters and digits"))
        }
        out += problems(privateKeyPEM: privateKeyPEM)
        return out
    }

    /// The PEM's framing problems: empty, too long, a SEC1 (`EC PRIVATE KEY`) or other PEM instead of PKCS#8.
    public static func problems(privateKeyPEM pem: String) -> [FieldProblem] {
        let path = ["private_key"]
        if pem.utf8.count > maxPrivateKeyBytes {
            return [FieldProblem(path: path, message: "String must contain at most \(maxPrivateKeyBytes) character(s)")]
        }
        let trimmed = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty {
            return [FieldProblem(path: path, message: "String must contain at least 1 character(s)")]
        }
        if trimmed.hasPrefix("-----BEGIN EC PRIVATE KEY-----") {
            return [FieldProblem(path: path, message: "Expected a PKCS#8 PEM (BEGIN PRIVATE KEY), got a SEC1 EC key "
                + "(BEGIN EC PRIVATE KEY); send the .p8 file unchanged")]
        }
        if !trimmed.hasPrefix(pkcs8Header) || !trimmed.hasSuffix("-----END PRIVATE KEY-----") {
            return [FieldProblem(path: path, message: "Expected a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)")]
        }
        return []
    }

    private static func isKeyIdByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
    }
}
