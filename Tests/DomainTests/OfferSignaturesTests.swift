@testable import Domain
import Foundation
import Synchronization
import XCTest

/// The legacy payload's exact bytes, the input rules, and the use case's order and outputs, over in-memory stores
/// and a recording signer (the real signer is exercised end to end against the public key).
final class OfferSignaturesTests: XCTestCase {
    static let nonce = UUID(uuidString: "5C6E1A2B-3D4F-4A5B-8C9D-0E1F2A3B4C5D")!
    static let token = UUID(uuidString: "A1B2C3D4-E5F6-4789-ABCD-EF0123456789")!

    // MARK: The legacy payload

    func testLegacyPayloadIsTheSevenFieldsJoinedByInvisibleSeparatorsWithLowercaseUUIDs() {
        let payload = OfferSignatureRules.legacyPayload(
            bundleId: "com.example.App", keyId: "2X9R4HXF34", productId: "com.example.Pro.Monthly",
            offerId: "WINBACK50", appAccountToken: Self.token, nonce: Self.nonce, timestamp: 1_732_406_400_123)
        let s = "\u{E2}\u{81}\u{A3}"   // U+2063 in UTF-8, spelled out so the test does not reuse the constant
        let expected = "com.example.App" + s + "2X9R4HXF34" + s + "com.example.Pro.Monthly" + s + "WINBACK50" + s
            + "a1b2c3d4-e5f6-4789-abcd-ef0123456789" + s + "5c6e1a2b-3d4f-4a5b-8c9d-0e1f2a3b4c5d" + s + "1732406400123"
        XCTAssertEqual(Array(payload.utf8), Array(expected.unicodeScalars.map { UInt8($0.value) }))
        XCTAssertEqual(payload.utf8.filter { $0 == 0xE2 }.count, 6, "six separators, no other U+2063 bytes")
        // Case of bundle, key, product and offer ids is kept: Apple signs them as they are.
        XCTAssertTrue(payload.hasPrefix("com.example.App\u{2063}2X9R4HXF34\u{2063}com.example.Pro.Monthly"))
    }

    func testLegacyPayloadWithoutTokenHasAnEmptyField() {
        let payload = OfferSignatureRules.legacyPayload(
            bundleId: "b", keyId: "K", productId: "p", offerId: "o", appAccountToken: nil, nonce: Self.nonce,
            timestamp: 0)
        XCTAssertEqual(payload, "b\u{2063}K\u{2063}p\u{2063}o\u{2063}\u{2063}5c6e1a2b-3d4f-4a5b-8c9d-0e1f2a3b4c5d\u{2063}0")
        XCTAssertEqual(payload.split(separator: "\u{2063}", omittingEmptySubsequences: false).count, 7)
    }

    // MARK: Rules

    func problems(_ product: String? = "p", _ offer: String? = "o", format: OfferSignatureFormat? = .legacy,
                  token: String? = nil, transaction: String? = nil) -> [FieldProblem] {
        OfferSignatureRules.problems(productId: product, offerId: offer, format: format, appAccountToken: token,
                                     transactionId: transaction)
    }

    func testRules() {
        XCTAssertEqual(problems(), [])
        XCTAssertEqual(problems(token: "A1B2C3D4-E5F6-4789-ABCD-EF0123456789"), [], "either case")
        XCTAssertEqual(problems(format: .jws, transaction: "2000000123456789"), [])
        XCTAssertEqual(problems("", ""), [
            FieldProblem(path: ["product_id"], message: "String must contain at least 1 character(s)"),
            FieldProblem(path: ["offer_id"], message: "String must contain at least 1 character(s)"),
        ])
        XCTAssertEqual(problems(String(repeating: "p", count: 257), String(repeating: "o", count: 257)).map(\.message),
                       ["String must contain at most 256 character(s)", "String must contain at most 256 character(s)"])
        XCTAssertEqual(problems(String(repeating: "é", count: 256)), [], "counted in scalars")
        XCTAssertEqual(problems("a\u{2063}b", "o\u{0}"), [
            FieldProblem(path: ["product_id"], message: "String must not contain NUL or U+2063 characters"),
            FieldProblem(path: ["offer_id"], message: "String must not contain NUL or U+2063 characters"),
        ])
        for bad in ["", "nope", "a1b2c3d4e5f64789abcdef0123456789", "{a1b2c3d4-e5f6-4789-abcd-ef0123456789}",
                    "a1b2c3d4-e5f6-4789-abcd-ef012345678g"] {
            XCTAssertEqual(problems(token: bad), [FieldProblem(path: ["app_account_token"], message: "Invalid uuid")], bad)
        }
        XCTAssertEqual(problems(transaction: "1"),
                       [FieldProblem(path: ["transaction_id"], message: "Only allowed with format 'jws'")])
        XCTAssertEqual(problems(format: .jws, token: "a1b2c3d4-e5f6-4789-abcd-ef0123456789").map(\.path),
                       [["app_account_token"]])
        XCTAssertTrue(problems(format: .jws, token: "x").first?.message.hasPrefix("Only allowed with format 'legacy'")
                      ?? false)
        for bad in ["", "12a", "-1", " 1", String(repeating: "9", count: 33), "１２"] {
            XCTAssertEqual(problems(format: .jws, transaction: bad), [FieldProblem(
                path: ["transaction_id"],
                message: "Must be 1 to 32 decimal digits (a transaction id or appTransactionId)")], bad)
        }
        XCTAssertEqual(problems(nil, nil, format: nil, token: "x", transaction: "y").map(\.path),
                       [["app_account_token"], ["transaction_id"]], "without a format only the value rules apply")
    }

    // MARK: The use case

    let project = Project(id: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, name: "App",
                          bundleId: "com.example.app", publicKey: "pk_x", createdAt: Date(), updatedAt: Date())
    let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG\n-----END PRIVATE KEY-----\n"
    let instant = Date(timeIntervalSince1970: 1_732_406_400.1239)

    func useCase(products: [String] = ["pro.monthly"], credentials: Bool = true, sealer: Bool = true,
                 signer: RecordingSigner = RecordingSigner()) throws -> OfferSignatures {
        let store = OneCredentialStore()
        let admin = CredentialAdministration(projects: ProductsOnly(project: project, products: []), store: store,
                                             sealer: sealer ? PlainSealer() : nil, inspector: AnyKey(),
                                             now: { Date(timeIntervalSince1970: 0) })
        if credentials {
            _ = try CredentialAdministration(projects: ProductsOnly(project: project, products: []), store: store,
                                             sealer: PlainSealer(), inspector: AnyKey(), now: { Date() })
                .setCredentials(projectId: project.id, issuerId: "57246542-96FE-1A63-E053-0824D011072A",
                                keyId: "2X9R4HXF34", privateKeyPEM: pem)
        }
        let instant = self.instant
        return OfferSignatures(projects: ProductsOnly(
            project: project, products: products.map { ProductMapping(productId: $0, entitlements: ["pro"]) }),
                               credentials: admin, signer: signer, now: { instant }, nonce: { Self.nonce })
    }

    func testLegacySignsThePayloadWithTheStoredKeyAndAnswersItsParts() throws {
        let signer = RecordingSigner()
        let signed = try useCase(signer: signer).sign(
            OfferSignatureRequest(productId: "pro.monthly", offerId: "WINBACK", format: .legacy,
                                  appAccountToken: "A1B2C3D4-E5F6-4789-ABCD-EF0123456789"), for: project)
        XCTAssertEqual(signed, .legacy(LegacyOfferSignature(
            keyId: "2X9R4HXF34", nonce: "5c6e1a2b-3d4f-4a5b-8c9d-0e1f2a3b4c5d", timestamp: 1_732_406_400_123,
            signature: "3q2+7w==")))
        XCTAssertEqual(signer.calls.withLock { $0 }, [
            "legacy com.example.app\u{2063}2X9R4HXF34\u{2063}pro.monthly\u{2063}WINBACK\u{2063}"
                + "a1b2c3d4-e5f6-4789-abcd-ef0123456789\u{2063}5c6e1a2b-3d4f-4a5b-8c9d-0e1f2a3b4c5d\u{2063}1732406400123"
                + " with " + pem,
        ])
    }

    func testJWSSignsApplesClaims() throws {
        let signer = RecordingSigner()
        let useCase = try useCase(signer: signer)
        XCTAssertEqual(try useCase.sign(OfferSignatureRequest(productId: "pro.monthly", offerId: "WINBACK",
                                                              format: .jws, transactionId: "2000000123456789"),
                                        for: project), .jws("signed.jws.token"))
        _ = try useCase.sign(OfferSignatureRequest(productId: "pro.monthly", offerId: "W", format: .jws), for: project)
        XCTAssertEqual(signer.claims.withLock { $0 }, [
            PromotionalOfferClaims(issuerId: "57246542-96fe-1a63-e053-0824d011072a", issuedAt: 1_732_406_400,
                                   bundleId: "com.example.app", nonce: "5c6e1a2b-3d4f-4a5b-8c9d-0e1f2a3b4c5d",
                                   productId: "pro.monthly", offerIdentifier: "WINBACK",
                                   transactionId: "2000000123456789"),
            PromotionalOfferClaims(issuerId: "57246542-96fe-1a63-e053-0824d011072a", issuedAt: 1_732_406_400,
                                   bundleId: "com.example.app", nonce: "5c6e1a2b-3d4f-4a5b-8c9d-0e1f2a3b4c5d",
                                   productId: "pro.monthly", offerIdentifier: "W", transactionId: nil),
        ])
        XCTAssertEqual(PromotionalOfferClaims.audience, "promotional-offer")
    }

    func testOrderRulesThenProductThenCredentials() throws {
        func code(_ useCase: OfferSignatures, _ request: OfferSignatureRequest) -> DomainError.Code? {
            do {
                _ = try useCase.sign(request, for: project)
                return nil
            } catch let error as DomainError {
                return error.code
            } catch {
                return nil
            }
        }
        let ok = OfferSignatureRequest(productId: "pro.monthly", offerId: "o", format: .legacy)
        let unmapped = OfferSignatureRequest(productId: "pro.yearly", offerId: "o", format: .legacy)
        let invalid = OfferSignatureRequest(productId: "pro.yearly", offerId: "", format: .legacy)
        let signer = RecordingSigner()
        let bare = try useCase(credentials: false, signer: signer)
        XCTAssertEqual(code(bare, invalid), .invalidInput)
        XCTAssertEqual(code(bare, unmapped), .productNotFound)
        XCTAssertEqual(code(bare, ok), .appStoreCredentialsMissing)
        XCTAssertEqual(code(try useCase(credentials: false, sealer: false, signer: signer), ok),
                       .appStoreCredentialsMissing, "no encryption key and nothing stored: still 'missing'")
        XCTAssertEqual(code(try useCase(credentials: true, sealer: false, signer: signer), ok), .encryptionKeyMissing,
                       "stored but unopenable: the operator's problem")
        XCTAssertEqual(signer.calls.withLock { $0 }, [], "nothing signed on any refusal")
    }
}

// MARK: - Fakes

/// Records what it was asked to sign; answers fixed bytes.
final class RecordingSigner: PromotionalOfferSigning {
    let calls = Mutex<[String]>([])
    let claims = Mutex<[PromotionalOfferClaims]>([])

    func signLegacy(_ payload: String, with credentials: UnsealedAppStoreCredentials) throws -> [UInt8] {
        calls.withLock { $0.append("legacy \(payload) with \(credentials.privateKeyPEM)") }
        return [0xDE, 0xAD, 0xBE, 0xEF]
    }

    func signJWS(_ claims: PromotionalOfferClaims, with credentials: UnsealedAppStoreCredentials) throws -> String {
        self.claims.withLock { $0.append(claims) }
        return "signed.jws.token"
    }

    func signEligibility(_ claims: IntroductoryOfferEligibilityClaims, with credentials: UnsealedAppStoreCredentials)
        throws -> String
    {
        calls.withLock { $0.append("eligibility \(claims.productId) \(claims.allowIntroductoryOffer)") }
        return "signed.eligibility.jws"
    }
}

/// One project and its product list; every other call is a test bug.
struct ProductsOnly: ProjectStore {
    var project: Project?
    var productList: [ProductMapping]

    init(project: Project? = nil, products: [ProductMapping]) {
        self.project = project
        self.productList = products
    }

    struct Unused: Error {}
    func project(publicKey: String, at now: Date) throws -> Project? { throw Unused() }
    func project(id: UUID) throws -> Project? { project?.id == id ? project : nil }
    func allProjects() throws -> [Project] { throw Unused() }
    func createProject(_ new: NewProject, keys: [StoredProjectKey], now: Date) throws -> Project { throw Unused() }
    func updateProject(id: UUID, _ changes: ProjectChanges, now: Date) throws -> Project? { throw Unused() }
    func deleteProject(id: UUID) throws -> Bool { throw Unused() }
    func rotateKeys(id: UUID, _ replacements: [KeyReplacement], now: Date) throws -> Project? { throw Unused() }
    func keys(projectId: UUID) throws -> [StoredProjectKey] { throw Unused() }
    func setProduct(projectId: UUID, _ mapping: ProductMapping, now: Date) throws -> ProductMapping { throw Unused() }
    func products(projectId: UUID) throws -> [ProductMapping] { project?.id == projectId ? productList : [] }
    func deleteProduct(projectId: UUID, productId: String) throws -> Bool { throw Unused() }
}

/// A credential store holding at most one project's credentials.
final class OneCredentialStore: AppStoreCredentialStore {
    let stored = Mutex<[UUID: StoredAppStoreCredentials]>([:])

    func credentials(projectId: UUID) throws -> StoredAppStoreCredentials? { stored.withLock { $0[projectId] } }
    func setCredentials(projectId: UUID, _ credentials: StoredAppStoreCredentials) throws -> StoredAppStoreCredentials {
        stored.withLock { $0[projectId] = credentials }
        return credentials
    }
    func deleteCredentials(projectId: UUID) throws -> Bool { stored.withLock { $0.removeValue(forKey: projectId) } != nil }
    func allSealedPrivateKeys() throws -> [(projectId: UUID, sealed: SealedSecret)] { [] }
    func replaceSealedPrivateKey(projectId: UUID, old: SealedSecret, new: SealedSecret) throws -> Bool { false }
}

/// "Seals" by copying (the real AES-GCM sealer is tested in its own suites).
struct PlainSealer: CredentialSealing {
    var currentKeyId: String { "plain" }
    func seal(_ plaintext: [UInt8], associatedData: [UInt8]) throws -> SealedSecret {
        SealedSecret(keyId: "plain", bytes: plaintext)
    }
    func open(_ sealed: SealedSecret, associatedData: [UInt8]) throws -> [UInt8] { sealed.bytes }
}

/// Accepts any PEM.
struct AnyKey: PrivateKeyInspecting {
    func inspect(pem: String) throws -> InspectedPrivateKey { InspectedPrivateKey(fingerprint: "f") }
}
