public import Foundation

/// Which promotional-offer signature StoreKit is given.
public enum OfferSignatureFormat: String, Sendable, CaseIterable {
    /// ECDSA over Apple's U+2063-joined payload, for `Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:
    /// signature:timestamp:)` and `SKPaymentDiscount`.
    case legacy
    /// A compact ES256 JWS, for `Product.PurchaseOption.promotionalOffer(_:compactJWS:)` (iOS 18.4 and later).
    case jws
}

/// A request to sign a promotional offer of one of the project's products.
public struct OfferSignatureRequest: Sendable, Equatable {
    /// The subscription's product id (must be mapped in the project).
    public var productId: String
    /// The promotional offer's identifier, as set up in App Store Connect.
    public var offerId: String
    /// The form StoreKit gets.
    public var format: OfferSignatureFormat
    /// `legacy` only: the app account token the purchase will carry (a UUID, any case; signed lowercase).
    public var appAccountToken: String?
    /// `jws` only: a transaction id (or `appTransactionId`) of the customer, Apple's optional `transactionId` claim.
    public var transactionId: String?

    /// Creates a value.
    public init(productId: String, offerId: String, format: OfferSignatureFormat, appAccountToken: String? = nil,
                transactionId: String? = nil) {
        self.productId = productId
        self.offerId = offerId
        self.format = format
        self.appAccountToken = appAccountToken
        self.transactionId = transactionId
    }
}

/// A signed promotional offer, in the form that was asked for.
public enum OfferSignature: Sendable, Equatable {
    /// The legacy signature and the values the app passes to StoreKit with it.
    case legacy(LegacyOfferSignature)
    /// The compact JWS.
    case jws(String)
}

/// What StoreKit's legacy promotional-offer purchase option takes besides the product and offer ids.
public struct LegacyOfferSignature: Sendable, Equatable {
    /// The In-App Purchase key's id (StoreKit's `keyID`).
    public var keyId: String
    /// The one-time UUID, lowercase.
    public var nonce: String
    /// Milliseconds since 1970 when signed (Apple honours the signature for 24 hours).
    public var timestamp: Int64
    /// Base64 of the DER `ECDSA-Sig-Value`.
    public var signature: String
}

/// What a JWS signed for StoreKit carries besides the base claims: its audience, and its own claims (which the
/// signer writes).
public protocol StoreKitSignedRequest: Sendable, Equatable {
    /// `aud`.
    static var audience: String { get }
}

/// The claims of a JWS the server signs for StoreKit with the project's In-App Purchase key, as Apple's "Generating
/// JWS to sign App Store requests" lists them: the base claims (`iss`, `iat`, `aud`, `bid`, `nonce`), `productId`, the
/// request's own claims and an optional `transactionId`. The header is `{"alg":"ES256","kid":<key id>,"typ":"JWT"}`.
/// One type for promotional offers (`PromotionalOfferClaims`) and introductory-offer eligibility
/// (`IntroductoryOfferEligibilityClaims`).
public struct StoreKitSignatureClaims<Request: StoreKitSignedRequest>: Sendable, Equatable {
    /// `aud`.
    public static var audience: String { Request.audience }

    /// `iss`: the team's Issuer ID.
    public var issuerId: String
    /// `iat`: seconds since 1970.
    public var issuedAt: Int64
    /// `bid`: the app's bundle id.
    public var bundleId: String
    /// `nonce`: a one-time UUID, lowercase.
    public var nonce: String
    /// `productId`.
    public var productId: String
    /// The request's own claims.
    public var request: Request
    /// `transactionId`, omitted when `nil`.
    public var transactionId: String?
}

/// A promotional offer's own claim (`aud` `promotional-offer`).
public struct PromotionalOfferClaim: StoreKitSignedRequest {
    /// `aud` for promotional offers.
    public static let audience = "promotional-offer"
    /// `offerIdentifier`.
    public var offerIdentifier: String
}

/// The claims of a JWS promotional-offer signature: the base claims and `productId`, `offerIdentifier`, optional
/// `transactionId`.
public typealias PromotionalOfferClaims = StoreKitSignatureClaims<PromotionalOfferClaim>

extension StoreKitSignatureClaims where Request == PromotionalOfferClaim {
    /// Creates a value.
    public init(issuerId: String, issuedAt: Int64, bundleId: String, nonce: String, productId: String,
                offerIdentifier: String, transactionId: String?) {
        self.init(issuerId: issuerId, issuedAt: issuedAt, bundleId: bundleId, nonce: nonce, productId: productId,
                  request: PromotionalOfferClaim(offerIdentifier: offerIdentifier), transactionId: transactionId)
    }

    /// `offerIdentifier`.
    public var offerIdentifier: String { request.offerIdentifier }
}

/// Signs promotional offers with a project's In-App Purchase key (implemented over `Crypto` by the executable's
/// wiring). The key never leaves the signer; errors never quote it.
public protocol PromotionalOfferSigning: Sendable {
    /// ECDSA P-256 / SHA-256 over the UTF-8 bytes of `payload`, as DER.
    func signLegacy(_ payload: String, with credentials: UnsealedAppStoreCredentials) throws -> [UInt8]
    /// The compact ES256 JWS of `claims`, its header naming `credentials.credentials.keyId`.
    func signJWS(_ claims: PromotionalOfferClaims, with credentials: UnsealedAppStoreCredentials) throws -> String
    /// The compact ES256 JWS of introductory-offer eligibility `claims`, with the same header.
    func signEligibility(_ claims: IntroductoryOfferEligibilityClaims, with credentials: UnsealedAppStoreCredentials)
        throws -> String
}

/// The input rules of offer signing, shared by every front end.
public enum OfferSignatureRules {
    /// Product ids as the project maps them.
    public static let productIdLength = ProjectRules.productIdLength
    /// Offer identifiers: App Store Connect's are short; the bound only keeps hostile input small.
    public static let offerIdLength = 1...256
    /// Transaction ids (and `appTransactionId`s) are decimal strings of up to 20 digits; 32 leaves room.
    public static let transactionIdLength = 1...32
    /// U+2063 INVISIBLE SEPARATOR: what Apple joins the legacy payload's parts with.
    public static let separator: Character = "\u{2063}"

    /// Every rule the fields break; `nil` means absent (or already reported as the wrong type by the caller),
    /// and a `nil` format skips the rules that depend on it.
    public static func problems(productId: String?, offerId: String?, format: OfferSignatureFormat?,
                                appAccountToken: String?, transactionId: String?) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if let productId { check(productId, ["product_id"], productIdLength, &out) }
        if let offerId { check(offerId, ["offer_id"], offerIdLength, &out) }
        if let appAccountToken {
            if format == .jws {
                out.append(FieldProblem(path: ["app_account_token"], message: "Only allowed with format 'legacy' "
                    + "(with 'jws', pass the token to StoreKit as the purchase's appAccountToken option)"))
            } else if canonicalUUID(appAccountToken) == nil {
                out.append(FieldProblem(path: ["app_account_token"], message: "Invalid uuid"))
            }
        }
        if let transactionId {
            if format == .legacy {
                out.append(FieldProblem(path: ["transaction_id"], message: "Only allowed with format 'jws'"))
            } else if !transactionIdLength.contains(transactionId.utf8.count)
                || !transactionId.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
                out.append(FieldProblem(path: ["transaction_id"], message: "Must be 1 to "
                    + "\(transactionIdLength.upperBound) decimal digits (a transaction id or appTransactionId)"))
            }
        }
        return out
    }

    /// Every rule `request` breaks.
    public static func problems(in request: OfferSignatureRequest) -> [FieldProblem] {
        problems(productId: request.productId, offerId: request.offerId, format: request.format,
                 appAccountToken: request.appAccountToken, transactionId: request.transactionId)
    }

    /// The string Apple's legacy promotional-offer signature covers: bundle id, key id, product id, offer id,
    /// app account token (lowercase, or empty), nonce (lowercase), timestamp in milliseconds, joined by U+2063.
    public static func legacyPayload(bundleId: String, keyId: String, productId: String, offerId: String,
                                     appAccountToken: UUID?, nonce: UUID, timestamp: Int64) -> String {
        [bundleId, keyId, productId, offerId, appAccountToken?.lowercasedText ?? "",
         nonce.lowercasedText, String(timestamp)].joined(separator: String(separator))
    }

    /// The UUID `text` spells in its 36-character form (either case), else `nil`.
    static func canonicalUUID(_ text: String) -> UUID? {
        guard text.utf8.count == 36 else { return nil }
        return UUID(uuidString: text)
    }

    private static func check(_ value: String, _ path: [String], _ length: ClosedRange<Int>, _ out: inout [FieldProblem]) {
        let count = value.unicodeScalars.count
        if count < length.lowerBound {
            out.append(FieldProblem(path: path, message: "String must contain at least \(length.lowerBound) character(s)"))
        } else if count > length.upperBound {
            out.append(FieldProblem(path: path, message: "String must contain at most \(length.upperBound) character(s)"))
        } else if value.unicodeScalars.contains(where: { $0.value == 0 || $0 == "\u{2063}" }) {
            // U+2063 would shift the legacy payload's fields (and no App Store id holds it or NUL).
            out.append(FieldProblem(path: path, message: "String must not contain NUL or U+2063 characters"))
        }
    }
}

/// Signs promotional offers for a project's mapped products with its In-App Purchase key (the public route
/// `POST /v1/offers/:publicKey/signatures`).
///
/// Order: the input's rules (every problem at once), the product must be mapped (`.productNotFound`), the project
/// must have App Store credentials (`.appStoreCredentialsMissing`), then sign. Nonce and clock are injected.
public struct OfferSignatures: Sendable {
    private let projects: any ProjectStore
    private let credentials: CredentialAdministration
    private let signer: any PromotionalOfferSigning
    private let now: @Sendable () -> Date
    private let newNonce: @Sendable () -> UUID

    /// Use cases over `projects` (product mappings), `credentials` (the key) and `signer`.
    public init(projects: any ProjectStore, credentials: CredentialAdministration, signer: any PromotionalOfferSigning,
                now: @escaping @Sendable () -> Date, nonce: @escaping @Sendable () -> UUID = { UUID() }) {
        self.projects = projects
        self.credentials = credentials
        self.signer = signer
        self.now = now
        self.newNonce = nonce
    }

    /// Signs `request`'s offer for `project`.
    public func sign(_ request: OfferSignatureRequest, for project: Project) throws -> OfferSignature {
        let problems = OfferSignatureRules.problems(in: request)
        guard problems.isEmpty else {
            throw DomainError(.invalidInput, "Invalid offer signature request.", details: problems)
        }
        guard try projects.products(projectId: project.id).contains(where: { $0.productId == request.productId }) else {
            throw DomainError(.productNotFound, "Product \(request.productId) is not mapped in the project.")
        }
        let opened = try Self.unsealedCredentials(project, credentials)
        let nonce = newNonce()
        let at = now().timeIntervalSince1970
        switch request.format {
        case .legacy:
            guard let timestamp = Int64(exactly: (at * 1000).rounded(.down)) else { throw Self.clockOutOfRange(at) }
            let token = request.appAccountToken.flatMap(OfferSignatureRules.canonicalUUID)
            let payload = OfferSignatureRules.legacyPayload(
                bundleId: project.bundleId, keyId: opened.credentials.keyId, productId: request.productId,
                offerId: request.offerId, appAccountToken: token, nonce: nonce, timestamp: timestamp)
            let der = try signer.signLegacy(payload, with: opened)
            return .legacy(LegacyOfferSignature(keyId: opened.credentials.keyId, nonce: nonce.lowercasedText,
                                                timestamp: timestamp, signature: Data(der).base64EncodedString()))
        case .jws:
            guard let issuedAt = Int64(exactly: at.rounded(.down)) else { throw Self.clockOutOfRange(at) }
            let claims = PromotionalOfferClaims(
                issuerId: opened.credentials.issuerId, issuedAt: issuedAt, bundleId: project.bundleId,
                nonce: nonce.lowercasedText, productId: request.productId,
                offerIdentifier: request.offerId, transactionId: request.transactionId)
            return .jws(try signer.signJWS(claims, with: opened))
        }
    }

    /// The project's key, opened; "missing" (the caller cannot proceed until an admin stores credentials) rather
    /// than "not found", also when the server has no encryption key (absence is reported first). Offer signing's and
    /// introductory-offer eligibility's.
    static func unsealedCredentials(_ project: Project, _ credentials: CredentialAdministration) throws
        -> UnsealedAppStoreCredentials
    {
        do {
            return try credentials.unsealedCredentials(projectId: project.id)
        } catch let error as DomainError where error.code == .appStoreCredentialsNotFound {
            throw Self.credentialsMissing(project)
        }
    }

    private static func credentialsMissing(_ project: Project) -> DomainError {
        DomainError(.appStoreCredentialsMissing,
                    "Project \(project.id.lowercasedText) has no App Store credentials to sign offers with.")
    }

    static func clockOutOfRange(_ seconds: Double) -> DomainError {
        DomainError(.serviceUnavailable, "The server clock is out of range.", underlying: "now = \(seconds) s")
    }
}
