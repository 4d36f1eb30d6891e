public import Foundation

/// The App Store credential use cases (set, show, delete, open for use, re-encrypt), shared by the admin API and
/// the CLI (`bouncer project credentials …`, `bouncer credentials reencrypt`) so both apply the same rules.
///
/// The private key goes in once (`setCredentials`) and comes out only through `unsealedCredentials`, which no
/// front end renders. Throws `DomainError`: `.invalidInput` (with `details`), `.projectNotFound`,
/// `.appStoreCredentialsNotFound`, `.encryptionKeyMissing`, the sealer's and the store's.
public struct CredentialAdministration: Sendable {
    private let projects: any ProjectStore
    private let store: any AppStoreCredentialStore
    private let sealer: (any CredentialSealing)?
    private let inspector: any PrivateKeyInspecting
    private let now: @Sendable () -> Date

    /// Use cases over `store`; `sealer` is `nil` when `BOUNCER_ENCRYPTION_KEY` is unset (storing and opening are
    /// then refused with `.encryptionKeyMissing`; showing and deleting still work).
    public init(
        projects: any ProjectStore, store: any AppStoreCredentialStore, sealer: (any CredentialSealing)?,
        inspector: any PrivateKeyInspecting, now: @escaping @Sendable () -> Date
    ) {
        self.projects = projects
        self.store = store
        self.sealer = sealer
        self.inspector = inspector
        self.now = now
    }

    /// Checks and stores credentials, the private key sealed; replaces any the project had.
    ///
    /// Order: the encryption key must be configured (nothing else matters until it is), then the input's rules
    /// (every problem at once), then the project must exist.
    public func setCredentials(projectId: UUID, issuerId: String, keyId: String, privateKeyPEM: String) throws
        -> AppStoreCredentials
    {
        let sealer = try requireSealer()
        var problems = AppStoreCredentialRules.problems(issuerId: issuerId, keyId: keyId, privateKeyPEM: privateKeyPEM)
        var inspected: InspectedPrivateKey?
        if !problems.contains(where: { $0.path == ["private_key"] }) {
            do {
                inspected = try inspector.inspect(pem: privateKeyPEM)
            } catch let rejection as PrivateKeyRejection {
                problems.append(FieldProblem(path: ["private_key"], message: rejection.reason))
            }
        }
        guard problems.isEmpty, let inspected else {
            throw DomainError(.invalidInput, "Invalid App Store credentials.", details: problems)
        }
        _ = try projects.existingProject(id: projectId)
        let pem = privateKeyPEM.trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
        let sealed = try sealer.seal(Array(pem.utf8), associatedData: Self.associatedData(projectId))
        let at = now()
        let stored = try store.setCredentials(projectId: projectId, StoredAppStoreCredentials(
            publicHalf: AppStoreCredentials(
                issuerId: issuerId.lowercased(), keyId: keyId, keyFingerprint: inspected.fingerprint,
                createdAt: at, updatedAt: at),
            sealedPrivateKey: sealed))
        return stored.publicHalf
    }

    /// The project's credentials (metadata only).
    public func credentials(projectId: UUID) throws -> AppStoreCredentials {
        try stored(projectId: projectId).publicHalf
    }

    /// Deletes the project's credentials.
    public func deleteCredentials(projectId: UUID) throws {
        try projects.delete(in: projectId, { try store.deleteCredentials(projectId: projectId) },
                            else: Self.credentialsNotFound(projectId))
    }

    /// The credentials with the private key opened, for signing requests to Apple. Never rendered by a front end.
    ///
    /// Absent credentials are reported before a missing encryption key: the key matters only once there is
    /// something sealed to open, and "store credentials first" is the fix the caller can act on.
    public func unsealedCredentials(projectId: UUID) throws -> UnsealedAppStoreCredentials {
        let stored = try stored(projectId: projectId)
        let sealer = try requireSealer()
        let bytes = try sealer.open(stored.sealedPrivateKey, associatedData: Self.associatedData(projectId))
        return UnsealedAppStoreCredentials(credentials: stored.publicHalf,
                                           privateKeyPEM: String(decoding: bytes, as: UTF8.self))
    }

    /// What `reencryptAll` did.
    public struct ReencryptionReport: Sendable, Equatable {
        /// One project whose key could not be re-sealed, and why (safe to print: codes and ids, no key bytes).
        public struct Failure: Sendable, Equatable {
            /// The project.
            public var projectId: UUID
            /// The error's client-safe description.
            public var reason: String
        }

        /// Values sealed under another key, now sealed under the current one.
        public var resealed: Int = 0
        /// Values already sealed under the current key (untouched).
        public var alreadyCurrent: Int = 0
        /// Values changed by a concurrent `setCredentials` while this ran (that write is already current).
        public var changedConcurrently: Int = 0
        /// Values that could not be opened (unknown key, corrupt).
        public var failures: [Failure] = []
    }

    /// Re-seals every private key not sealed under the current key (opening it with the current or previous key),
    /// one project at a time; `progress` hears about each project. A failure for one project is reported and the
    /// rest continue.
    public func reencryptAll(progress: (UUID, String) -> Void = { _, _ in }) throws -> ReencryptionReport {
        let sealer = try requireSealer()
        var report = ReencryptionReport()
        for (projectId, sealed) in try store.allSealedPrivateKeys() {
            if sealed.keyId == sealer.currentKeyId {
                report.alreadyCurrent += 1
                progress(projectId, "already current")
                continue
            }
            let associatedData = Self.associatedData(projectId)
            do {
                let plaintext = try sealer.open(sealed, associatedData: associatedData)
                let resealed = try sealer.seal(plaintext, associatedData: associatedData)
                if try store.replaceSealedPrivateKey(projectId: projectId, old: sealed, new: resealed) {
                    report.resealed += 1
                    progress(projectId, "re-encrypted (key \(sealed.keyId) -> \(resealed.keyId))")
                } else {
                    report.changedConcurrently += 1
                    progress(projectId, "changed concurrently (left as written)")
                }
            } catch let error as DomainError where error.code == .encryptionKeyUnknown || error.code == .sealedSecretCorrupt {
                report.failures.append(ReencryptionReport.Failure(projectId: projectId, reason: error.description))
                progress(projectId, "failed: \(error.description)")
            }
        }
        return report
    }

    /// What the sealed key is bound to: this project's credentials row, in format version 1.
    static func associatedData(_ projectId: UUID) -> [UInt8] {
        SealedSecret.associatedData("app-store-credentials", projectId)
    }

    private func stored(projectId: UUID) throws -> StoredAppStoreCredentials {
        try projects.existing(in: projectId, { try store.credentials(projectId: projectId) },
                              else: Self.credentialsNotFound(projectId))
    }

    private func requireSealer() throws -> any CredentialSealing {
        try sealer.required(toEncrypt: "App Store credentials")
    }

    private static func credentialsNotFound(_ id: UUID) -> DomainError {
        DomainError(.appStoreCredentialsNotFound,
                    "Project \(id.lowercasedText) has no App Store credentials.")
    }
}
