import Domain
import Foundation
import Synchronization

/// A stand-in for the AES-GCM sealer: reversible, but the plaintext never appears in `bytes` (each byte is XORed
/// with the key's id byte), and the associated data must match as AES-GCM's would.
struct FakeSealer: CredentialSealing {
    /// Ids of the keys it can open, current first (a rotation keeps the previous one).
    var keyIds: [String] = [FakeSealer.keyA]
    static let keyA = "aaaaaaaaaaaaaaaa"
    static let keyB = "bbbbbbbbbbbbbbbb"

    var currentKeyId: String { keyIds.first ?? "" }

    func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> SealedSecret {
        SealedSecret(keyId: currentKeyId, bytes: Self.box(plaintext, associatedData, mask: Self.mask(currentKeyId)))
    }

    func open(_ sealed: SealedSecret, associatedData: [UInt8]) throws -> [UInt8] {
        guard keyIds.contains(sealed.keyId) else {
            throw DomainError(.encryptionKeyUnknown, "Sealed under key \(sealed.keyId), which is not configured.")
        }
        let mask = Self.mask(sealed.keyId)
        let tag = Self.tag(associatedData)
        guard sealed.bytes.count >= tag.count, Array(sealed.bytes.prefix(tag.count)) == tag else {
            throw DomainError(.sealedSecretCorrupt, "The sealed value failed authentication.")
        }
        return sealed.bytes.dropFirst(tag.count).map { $0 ^ mask }
    }

    private static func mask(_ keyId: String) -> UInt8 { keyId.utf8.first ?? 0x5A }
    private static func tag(_ associatedData: [UInt8]) -> [UInt8] {
        // Not the associated data itself: its bytes folded into 8, enough to tell projects apart in tests.
        var tag = [UInt8](repeating: 0, count: 8)
        for (i, b) in associatedData.enumerated() { tag[i % 8] = tag[i % 8] &+ b &* UInt8(truncatingIfNeeded: i + 1) }
        return tag
    }
    private static func box(_ plaintext: [UInt8], _ associatedData: [UInt8], mask: UInt8) -> [UInt8] {
        tag(associatedData) + plaintext.map { $0 ^ mask }
    }
}

/// Accepts the test P-256 PEMs below (by a marker in their body) and rejects the RSA one, as `Crypto` would.
struct FakeKeyInspector: PrivateKeyInspecting {
    func inspect(pem: String) throws -> InspectedPrivateKey {
        if pem.contains(TestKeys.p256BodyMarker) {
            return InspectedPrivateKey(fingerprint: pem.contains(TestKeys.secondMarker) ? TestKeys.fingerprint2
                                                                                           : TestKeys.fingerprint)
        }
        throw PrivateKeyRejection(reason: "Expected an EC key on P-256 (prime256v1), got RSA")
    }
}

/// Test key PEMs: shaped like App Store Connect's `.p8` files (not real keys: the fake inspector only reads markers).
enum TestKeys {
    static let p256BodyMarker = "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg"
    static let secondMarker = "SECONDKEY"
    static let body = p256BodyMarker + "q1w2e3r4t5y6u7i8o9p0AbCdEfGhIjKlMnOpQrStUvWxYz"
    static let pem = "-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n"
    static let pem2 = "-----BEGIN PRIVATE KEY-----\n" + p256BodyMarker + secondMarker + "\n-----END PRIVATE KEY-----"
    static let rsaPEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    static let sec1PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI\n-----END EC PRIVATE KEY-----"
    static let fingerprint = String(repeating: "0f", count: 32)
    static let fingerprint2 = String(repeating: "e1", count: 32)
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "2X9R4HXF34"
}

/// An in-memory `AppStoreCredentialStore` with the documented semantics (the project must exist).
final class FakeCredentialStore: AppStoreCredentialStore, Sendable {
    struct State: Sendable {
        var rows: [UUID: StoredAppStoreCredentials] = [:]
        var failure: StoreFailure = .none
    }

    let state = Mutex(State())
    let projects: FakeProjectStore

    init(projects: FakeProjectStore) { self.projects = projects }

    var failure: StoreFailure {
        get { state.withLock { $0.failure } }
        set { state.withLock { $0.failure = newValue } }
    }

    var rows: [UUID: StoredAppStoreCredentials] { state.withLock { $0.rows } }

    func credentials(projectId: UUID) throws -> StoredAppStoreCredentials? {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.rows[projectId]
        }
    }

    func setCredentials(projectId: UUID, _ credentials: StoredAppStoreCredentials) throws
        -> StoredAppStoreCredentials
    {
        let exists = try projects.project(id: projectId) != nil
        return try state.withLock { s in
            try failIfNeeded(s.failure)
            guard exists else { throw DomainError(.projectNotFound, "No project with that id.") }
            var next = credentials
            if let old = s.rows[projectId] { next.publicHalf.createdAt = old.publicHalf.createdAt }
            s.rows[projectId] = next
            return next
        }
    }

    func deleteCredentials(projectId: UUID) throws -> Bool {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.rows.removeValue(forKey: projectId) != nil
        }
    }

    func allSealedPrivateKeys() throws -> [(projectId: UUID, sealed: SealedSecret)] {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            return s.rows.sorted { $0.key.uuidString < $1.key.uuidString }.map { ($0.key, $0.value.sealedPrivateKey) }
        }
    }

    func replaceSealedPrivateKey(projectId: UUID, old: SealedSecret, new: SealedSecret) throws -> Bool {
        try state.withLock { s in
            try failIfNeeded(s.failure)
            guard s.rows[projectId]?.sealedPrivateKey == old else { return false }
            s.rows[projectId]?.sealedPrivateKey = new
            return true
        }
    }
}
