public import Foundation

/// The verified facts of one app transaction (StoreKit `AppTransaction`: proof that an Apple account bought or
/// installed the app), as Bouncer stores them.
public struct AppTransactionFacts: Sendable, Equatable {
    /// Apple's id of this app download (`appTransactionId`); stored per project and environment by it.
    public var appTransactionId: String
    /// The app, as signed (the verifier has checked it is the project's).
    public var bundleId: String
    /// `receiptType`: where it was signed.
    public var environment: StoreEnvironment
    /// The app version the customer first bought or installed. On iOS, iPadOS, tvOS and visionOS this is the
    /// build number (`CFBundleVersion`), on macOS the marketing version (`CFBundleShortVersionString`).
    public var originalApplicationVersion: String?
    /// When the customer first got the app.
    public var originalPurchaseDate: Date?
    /// When the app receipt was created (the effective date of its certificate chain).
    public var receiptCreationDate: Date
    /// The verified payload exactly as signed (JSON text).
    public var payloadJSON: String

    /// Creates a fact record.
    public init(
        appTransactionId: String, bundleId: String, environment: StoreEnvironment, originalApplicationVersion: String?,
        originalPurchaseDate: Date?, receiptCreationDate: Date, payloadJSON: String
    ) {
        self.appTransactionId = appTransactionId
        self.bundleId = bundleId
        self.environment = environment
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.receiptCreationDate = receiptCreationDate
        self.payloadJSON = payloadJSON
    }
}

/// A stored app transaction as the read path needs it.
public struct StoredAppTransaction: Sendable, Equatable {
    /// Apple's id of the app download.
    public var appTransactionId: String
    /// Where it was signed.
    public var environment: StoreEnvironment
    /// See `AppTransactionFacts.originalApplicationVersion`.
    public var originalApplicationVersion: String?
    /// When the customer first got the app.
    public var originalPurchaseDate: Date?
    /// When a parent or guardian withdrew consent (RESCIND_CONSENT), if they did.
    public var consentRescindedAt: Date?

    /// Creates a value.
    public init(
        appTransactionId: String, environment: StoreEnvironment, originalApplicationVersion: String?,
        originalPurchaseDate: Date?, consentRescindedAt: Date? = nil
    ) {
        self.appTransactionId = appTransactionId
        self.environment = environment
        self.originalApplicationVersion = originalApplicationVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.consentRescindedAt = consentRescindedAt
    }
}

/// The outcome of recording an app transaction.
public struct RecordedAppTransaction: Sendable, Equatable {
    /// The app transaction as stored (with any consent withdrawal already recorded for it).
    public var stored: StoredAppTransaction
    /// The user it was bound to before this call, when that was another one (who no longer holds it).
    public var previousUserId: String?

    /// Creates a value.
    public init(stored: StoredAppTransaction, previousUserId: String?) {
        self.stored = stored
        self.previousUserId = previousUserId
    }
}

/// A project setting: customers who first got the app before a version receive entitlements (paid-app customers
/// kept whole after a move to subscriptions).
public struct AppPurchaseEntitlements: Sendable, Equatable {
    /// Customers whose `originalApplicationVersion` is lower than this (dotted numeric) are granted `entitlements`.
    public var purchasedBeforeVersion: String
    /// What they are granted (sorted, unique).
    public var entitlements: [String]

    /// Creates the setting; entitlements are deduplicated and sorted.
    public init(purchasedBeforeVersion: String, entitlements: [String]) {
        self.purchasedBeforeVersion = purchasedBeforeVersion
        self.entitlements = Array(Set(entitlements)).sorted()
    }
}

/// A dotted numeric version ("2", "2.0", "1.10.3"): compared part by part as integers, missing parts are zero
/// ("2" == "2.0"), so "1.9" < "1.10".
public struct DottedVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numeric parts.
    public let parts: [UInt64]
    /// The text as given.
    public let description: String

    /// At most this many parts, each at most this many digits: bounded work, no overflow.
    public static let maxParts = 8
    /// See `maxParts`.
    public static let maxDigits = 9

    /// Parses `text`; `nil` unless it is 1 to `maxParts` groups of 1 to `maxDigits` ASCII digits separated by dots.
    public init?(_ text: String) {
        let groups = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard !groups.isEmpty, groups.count <= Self.maxParts else { return nil }
        var parts: [UInt64] = []
        for group in groups {
            guard !group.isEmpty, group.count <= Self.maxDigits else { return nil }
            var value: UInt64 = 0
            for byte in group {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value &* 10 &+ UInt64(byte &- UInt8(ascii: "0"))  // ≤ 9 digits: cannot overflow
            }
            parts.append(value)
        }
        self.parts = parts
        self.description = text
    }

    public static func == (a: DottedVersion, b: DottedVersion) -> Bool { compare(a, b) == 0 }
    public func hash(into hasher: inout Hasher) {
        var trimmed = parts
        while trimmed.last == 0 { trimmed.removeLast() }
        hasher.combine(trimmed)
    }
    public static func < (a: DottedVersion, b: DottedVersion) -> Bool { compare(a, b) < 0 }

    private static func compare(_ a: DottedVersion, _ b: DottedVersion) -> Int {
        for i in 0..<max(a.parts.count, b.parts.count) {
            let x = i < a.parts.count ? a.parts[i] : 0
            let y = i < b.parts.count ? b.parts[i] : 0
            if x != y { return x < y ? -1 : 1 }
        }
        return 0
    }
}

/// Why a user holds an entitlement that no subscription grants.
public struct AppPurchaseGrant: Sendable, Equatable {
    /// The app transaction that proves the purchase.
    public var appTransaction: StoredAppTransaction
    /// What it grants under the project's `app_purchase_entitlements` (empty when the rule does not apply).
    public var entitlements: [String]
}

/// The rule of `app_purchase_entitlements`, a pure function of the stored app transactions and the setting.
public enum AppPurchaseRules {
    /// What `appTransaction` grants under `setting`: the setting's entitlements when its original application
    /// version is lower than `purchasedBeforeVersion` (dotted numeric); nothing when there is no setting, no
    /// version, or a version that is not dotted numeric (never guessed). A consent withdrawal changes nothing: the
    /// operator decides what to erase.
    public static func entitlements(
        for appTransaction: StoredAppTransaction, setting: AppPurchaseEntitlements?
    ) -> [String] {
        guard let setting, let threshold = DottedVersion(setting.purchasedBeforeVersion),
              let original = appTransaction.originalApplicationVersion.flatMap(DottedVersion.init)
        else { return [] }
        return original < threshold ? setting.entitlements : []
    }

    /// Every app transaction of a user with what it grants, most recent purchase first.
    public static func grants(_ appTransactions: [StoredAppTransaction], setting: AppPurchaseEntitlements?)
        -> [AppPurchaseGrant]
    {
        appTransactions
            .sorted { ($0.originalPurchaseDate ?? .distantPast, $0.appTransactionId) > ($1.originalPurchaseDate ?? .distantPast, $1.appTransactionId) }
            .map { AppPurchaseGrant(appTransaction: $0, entitlements: entitlements(for: $0, setting: setting)) }
    }

    /// Problems in a setting as the admin API and CLI report them (`path` under `app_purchase_entitlements`).
    public static func problems(in setting: AppPurchaseEntitlements) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if DottedVersion(setting.purchasedBeforeVersion) == nil {
            out.append(FieldProblem(
                path: ["app_purchase_entitlements", "purchased_before_version"],
                message: "Must be a dotted numeric version such as 2.0 (1 to \(DottedVersion.maxParts) groups of 1 to "
                    + "\(DottedVersion.maxDigits) digits)"))
        }
        for problem in ProjectRules.problems(entitlements: setting.entitlements) {
            out.append(FieldProblem(path: ["app_purchase_entitlements"] + problem.path, message: problem.message))
        }
        return out
    }
}

/// The answer to posting an app transaction.
public struct AppPurchaseAnswer: Sendable, Equatable {
    /// What was verified.
    public var facts: AppTransactionFacts
    /// What was stored.
    public var recorded: RecordedAppTransaction
    /// What the app transaction grants under the project's `app_purchase_entitlements`.
    public var entitlements: [String]
}

/// The app-transaction use case (`POST /v1/app-transactions`), shared by every front end.
public enum AppPurchases {
    /// Verifies `jws` for `project`, stores it (binding `userId` when given) and answers what it grants.
    /// - Throws: `VerificationFailure` (nothing written), `DomainError`.
    public static func record(
        _ jws: String, userId: String?, project: Project, verifier: any SignedDataVerifying,
        store: any AppTransactionStore, now: Date
    ) throws -> AppPurchaseAnswer {
        try record(verified: try verifier.verifyAppTransaction(jws, for: project), userId: userId, project: project,
                   store: store, now: now)
    }

    /// Stores `facts`, already verified (a posted JWS, or Apple's answer to Get App Transaction Info), and answers
    /// what they grant.
    public static func record(
        verified facts: AppTransactionFacts, userId: String?, project: Project, store: any AppTransactionStore, now: Date
    ) throws -> AppPurchaseAnswer {
        let recorded = try store.recordAppTransaction(facts, userId: userId, project: project, now: now)
        return AppPurchaseAnswer(
            facts: facts, recorded: recorded,
            entitlements: AppPurchaseRules.entitlements(for: recorded.stored, setting: project.appPurchaseEntitlements))
    }
}
