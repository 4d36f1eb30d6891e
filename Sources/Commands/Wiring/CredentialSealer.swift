import Crypto
public import Domain
import Primitives

/// `CredentialSealing` over `Crypto.AESGCM`: seals under `BOUNCER_ENCRYPTION_KEY`, opens under it or, during a
/// rotation, under `BOUNCER_ENCRYPTION_KEY_PREVIOUS`. The one place App Store private keys are encrypted.
///
/// A sealed value records the id of its key (`keyId(_:)`), so opening picks the right key without trial
/// decryption and `bouncer credentials reencrypt` knows what is left to do.
public struct AESGCMCredentialSealer: CredentialSealing, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    private struct Key {
        let id: String
        let bytes: [UInt8]
    }

    /// Printing the sealer (or a value holding it) names the keys by id only.
    public var description: String { "AESGCMCredentialSealer(current: \(current.id), previous: \(previous?.id ?? "none"))" }
    /// The same as `description`: no key bytes in a debug print either.
    public var debugDescription: String { description }
    /// Key ids only, so `dump` shows no key bytes.
    public var customMirror: Mirror { Mirror(self, children: ["current": current.id, "previous": previous?.id as Any]) }

    private let current: Key
    private let previous: Key?

    /// A sealer over 32-byte keys (`ServeSettings` has checked their length).
    init(current: [UInt8], previous: [UInt8]?) {
        self.current = Key(id: Self.keyId(current), bytes: current)
        self.previous = previous.map { Key(id: Self.keyId($0), bytes: $0) }
    }

    /// The sealer the settings call for; `nil` without `BOUNCER_ENCRYPTION_KEY`.
    public init?(settings: ServeSettings) {
        guard let key = settings.encryptionKey else { return nil }
        self.init(current: key, previous: settings.previousEncryptionKey)
    }

    /// Lowercase hex of the first 8 bytes of SHA-256 of `key`: names the key in rows and logs, reveals nothing
    /// usable about 32 random bytes.
    static func keyId(_ key: [UInt8]) -> String {
        Hex.encode(Array(Digest.sha256(key).prefix(8)))
    }

    public var currentKeyId: String { current.id }

    /// The id of the previous key, when one is configured (for the start-up log line).
    public var previousKeyId: String? { previous?.id }

    public func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> SealedSecret {
        // A failure here is OpenSSL refusing to work (a bug or a broken install): rethrown as is, a 500.
        SealedSecret(keyId: current.id,
                     bytes: try AESGCM.seal(plaintext, key: current.bytes, authenticating: associatedData))
    }

    public func open(_ sealed: SealedSecret, associatedData: [UInt8]) throws -> [UInt8] {
        let key: Key
        if sealed.keyId == current.id {
            key = current
        } else if let previous, sealed.keyId == previous.id {
            key = previous
        } else {
            throw DomainError(
                .encryptionKeyUnknown,
                "Sealed under encryption key \(sealed.keyId), which is neither BOUNCER_ENCRYPTION_KEY (\(current.id))"
                    + (previous.map { " nor BOUNCER_ENCRYPTION_KEY_PREVIOUS (\($0.id))" }
                        ?? " nor a BOUNCER_ENCRYPTION_KEY_PREVIOUS") + ".")
        }
        do {
            return try AESGCM.open(sealed.bytes, key: key.bytes, authenticating: associatedData)
        } catch {
            // Wrong context, altered or truncated bytes: the key id matched, so the value itself is bad.
            throw DomainError(.sealedSecretCorrupt, "A sealed value under key \(key.id) does not authenticate.",
                              underlying: error.debugDescription)
        }
    }
}

/// `PrivateKeyInspecting` over `Crypto.P256.PrivateKey`: parses the PEM, refuses anything but P-256, fingerprints.
public struct P256KeyInspector: PrivateKeyInspecting {
    /// An inspector (it holds nothing).
    public init() {}

    public func inspect(pem: String) throws -> InspectedPrivateKey {
        do {
            return InspectedPrivateKey(fingerprint: try P256.PrivateKey(pem: pem).fingerprint)
        } catch {
            // Reasons in our words: OpenSSL's text stays out of responses (it never contains key bytes either).
            switch error.code {
            case .unsupportedKey:
                throw PrivateKeyRejection(reason: "Expected an EC key on P-256 (prime256v1); App Store Connect's "
                    + "In-App Purchase keys are P-256")
            case .invalidKey:
                throw PrivateKeyRejection(reason: "Not a readable PKCS#8 private key (damaged base64, or an "
                    + "encrypted key); send the .p8 file unchanged")
            default:
                throw error
            }
        }
    }
}
