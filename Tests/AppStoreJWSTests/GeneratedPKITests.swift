import Foundation
import XCTest
@testable import AppStoreJWS
import Crypto

/// Our own PKI (Tests/Fixtures/pki + Fixtures/certs, made by Fixtures/generate-pki.sh) and JWS minted
/// with Tests/Fixtures/pki/sign-jws: every chain defect, tampering and claim mismatch.
final class GeneratedPKITests: XCTestCase {
    let policy = VerificationPolicy(bundleId: "com.bouncer.test", environments: [.sandbox, .production], appAppleId: 42)
    /// 2025-10-09, inside the valid chain (2020–2048) and after the "expired 2021" certificates.
    let signedDate: Int64 = 1_760_000_000_000

    func verifier(cache: Int = 64) throws -> SignedDataVerifier {
        SignedDataVerifier(roots: try Fixture.testRoots(), chainCacheCapacity: cache)
    }

    func testValidTransactionVerifiesAndDecodes() throws {
        let jws = try Fixture.sign(Fixture.transactionPayload(extra: #","revocationReason":7,"offerType":9,"futureField":{"x":1},"type2":"new""#))
        let result = try verifier().verifyTransaction(jws, policy: policy)
        XCTAssertEqual(result.transaction.transactionId, "2000000123456789")
        XCTAssertEqual(result.transaction.price, 1990)
        XCTAssertEqual(result.transaction.type, .autoRenewable)
        XCTAssertEqual(result.transaction.inAppOwnershipType, .purchased)
        XCTAssertEqual(result.transaction.revocationReason?.rawValue, 7)   // unknown enum values preserved
        XCTAssertEqual(result.transaction.offerType?.rawValue, 9)
        XCTAssertEqual(result.details.effectiveDate, Date(appleMilliseconds: signedDate))
        XCTAssertEqual(result.details.environment, .sandbox)
        XCTAssertTrue(result.payloadString.hasPrefix(#"{"transactionId":"2000000123456789""#))
    }

    func testChainDefectsAtSignedDate() throws {
        let verifier = try verifier()
        let payload = Fixture.transactionPayload()
        let root = Fixture.pkiCert("root.pem"), intermediate = Fixture.pkiCert("intermediate.pem"), leaf = Fixture.pkiCert("leaf.pem")
        let cases: [(String, [String], VerificationError.Code, VerificationError.Step, String)] = [
            ("expired leaf", [Fixture.variant("leaf-expired-2021.pem"), intermediate, root], .jwsVerificationFailed, .validity, "leaf certificate expired"),
            ("future leaf", [Fixture.variant("leaf-not-before-2040.pem"), intermediate, root], .jwsVerificationFailed, .validity, "leaf certificate not yet valid"),
            ("expired intermediate", [Fixture.variant("leaf-under-expired-intermediate.pem"), Fixture.variant("intermediate-expired-2021.pem"), root],
             .jwsVerificationFailed, .validity, "intermediate certificate expired"),
            ("future intermediate", [Fixture.variant("leaf-under-future-intermediate.pem"), Fixture.variant("intermediate-not-before-2040.pem"), root],
             .jwsVerificationFailed, .validity, "intermediate certificate not yet valid"),
            ("leaf OID 6.11.2", [Fixture.variant("leaf-oid-6.11.2.pem"), intermediate, root], .jwsVerificationFailed, .oid, "1.2.840.113635.100.6.11.1"),
            ("intermediate OID 6.2.2", [Fixture.variant("leaf-under-wrong-oid-intermediate.pem"), Fixture.variant("intermediate-oid-6.2.2.pem"), root],
             .jwsVerificationFailed, .oid, "1.2.840.113635.100.6.2.1"),
            ("untrusted root", [Fixture.variant("untrusted-leaf.pem"), Fixture.variant("untrusted-intermediate.pem"), Fixture.variant("untrusted-root.pem")],
             .jwsVerificationFailed, .chain, "trusted root"),
            ("untrusted root, our root in x5c[2]", [Fixture.variant("untrusted-leaf.pem"), Fixture.variant("untrusted-intermediate.pem"), root],
             .jwsVerificationFailed, .chain, "trusted root"),
            ("swapped order", [intermediate, leaf, root], .jwsVerificationFailed, .chain, ""),
            ("unknown critical extension", [Fixture.variant("leaf-unknown-critical-extension.pem"), intermediate, root], .jwsVerificationFailed, .chain, "critical"),
            ("leaf without digitalSignature", [Fixture.variant("leaf-no-digital-signature.pem"), intermediate, root], .jwsVerificationFailed, .oid, "digitalSignature"),
            ("intermediate as leaf, root as intermediate", [intermediate, root, root], .jwsVerificationFailed, .chain, ""),
            ("2 certificates", [leaf, intermediate], .invalidJWSFormat, .x5c, "exactly 3"),
            ("4 certificates", [leaf, intermediate, root, root], .invalidJWSFormat, .x5c, "exactly 3"),
            ("1 certificate", [leaf], .invalidJWSFormat, .x5c, "exactly 3"),
        ]
        for (name, chain, code, step, reason) in cases {
            let jws = try Fixture.sign(payload, x5c: chain)
            XCTAssertVerification(try verifier.verifyTransaction(jws, policy: policy), code: code, step: step,
                                  reasonContains: reason.isEmpty ? nil : reason, file: #filePath, line: #line)
            XCTAssertFalse(name.isEmpty)
        }
        XCTAssertEqual(verifier.cachedChainCount, 0, "failures are never cached")
        // A P-384 leaf signing with its own key: the chain is fine, the key type is not ES256's.
        let p384 = try Fixture.sign(payload, x5c: [Fixture.variant("leaf-p384.pem"), intermediate, root], key: Fixture.pkiCert("keys/leaf-p384.key"))
        XCTAssertVerification(try verifier.verifyTransaction(p384, policy: policy), code: .jwsVerificationFailed, step: .oid, reasonContains: "P-256")
    }

    func testValidityBoundariesAndCacheWindow() throws {
        let verifier = try verifier()
        // leaf-expired-2021 is valid 2020-01-01 .. 2021-01-01 (notAfter exclusive at the second).
        let chain = [Fixture.variant("leaf-expired-2021.pem"), Fixture.pkiCert("intermediate.pem"), Fixture.pkiCert("root.pem")]
        let inside = try Fixture.sign(Fixture.transactionPayload(signedDate: 1_600_000_000_000), x5c: chain)
        XCTAssertNoThrow(try verifier.verifyTransaction(inside, policy: policy))
        XCTAssertEqual(verifier.cachedChainCount, 1)
        // Same chain (cached), signed after notAfter: the cache window must not accept it.
        let after = try Fixture.sign(Fixture.transactionPayload(signedDate: 1_609_459_200_000), x5c: chain)   // 2021-01-01T00:00:00Z
        XCTAssertVerification(try verifier.verifyTransaction(after, policy: policy), code: .jwsVerificationFailed, step: .validity)
        let lastSecond = try Fixture.sign(Fixture.transactionPayload(signedDate: 1_609_459_199_999), x5c: chain)
        let result = try verifier.verifyTransaction(lastSecond, policy: policy)
        XCTAssertTrue(result.details.chainCacheHit)
        let before = try Fixture.sign(Fixture.transactionPayload(signedDate: 1_577_836_799_000), x5c: chain)   // 2019-12-31T23:59:59Z
        XCTAssertVerification(try verifier.verifyTransaction(before, policy: policy), code: .jwsVerificationFailed, step: .validity, reasonContains: "not yet valid")
    }

    func testTamperingAndSignatureForms() throws {
        let verifier = try verifier()
        let jws = try Fixture.sign(Fixture.transactionPayload())
        XCTAssertNoThrow(try verifier.verifyTransaction(jws, policy: policy))
        let parts = Fixture.segments(jws)
        // Payload re-encoded with another bundle: signature fails first.
        let forged = Fixture.transactionPayload(bundleId: "com.attacker")
        XCTAssertVerification(try verifier.verifyTransaction([parts[0], Fixture.b64url(Array(forged.utf8)), parts[2]].joined(separator: "."), policy: policy),
                              code: .jwsVerificationFailed, step: .signature)
        // Header re-encoded (a harmless extra key): the signing input changed.
        var header = try XCTUnwrap(Fixture.b64urlDecode(parts[0]))
        header.removeLast()
        header += Array(#","kid":"x"}"#.utf8)
        XCTAssertVerification(try verifier.verifyTransaction([Fixture.b64url(header), parts[1], parts[2]].joined(separator: "."), policy: policy),
                              code: .jwsVerificationFailed, step: .signature)
        // Signature: flipped bit, DER form, truncated, extended, zero.
        let raw = try XCTUnwrap(Fixture.b64urlDecode(parts[2]))
        XCTAssertEqual(raw.count, 64)
        var flipped = raw; flipped[40] ^= 0x80
        let der = P256.derSignature(fromRaw: raw)
        for (signature, step) in [(flipped, VerificationError.Step.signature), (der, .signature), (Array(raw.prefix(63)), .signature),
                                  (raw + [0], .signature), ([UInt8](repeating: 0, count: 64), .signature)] {
            XCTAssertVerification(try verifier.verifyTransaction([parts[0], parts[1], Fixture.b64url(signature)].joined(separator: "."), policy: policy),
                                  code: .jwsVerificationFailed, step: step)
        }
        // Padding on the segments is tolerated; other characters are not.
        let padded = parts[0] + String(repeating: "=", count: (4 - parts[0].count % 4) % 4)
        if padded != parts[0] {
            XCTAssertVerification(try verifier.verifyTransaction([padded, parts[1], parts[2]].joined(separator: "."), policy: policy),
                                  code: .jwsVerificationFailed, step: .signature)   // decodes fine, but the signing input differs
        }
        XCTAssertVerification(try verifier.verifyTransaction(jws + "\n", policy: policy), code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyTransaction(" " + jws, policy: policy), code: .invalidJWSFormat, step: .split)
        // A standard-base64 character inside a segment (not every signature contains "-", so insert one).
        var standardAlphabet = jws
        standardAlphabet.insert("+", at: standardAlphabet.index(standardAlphabet.startIndex, offsetBy: 5))
        XCTAssertVerification(try verifier.verifyTransaction(standardAlphabet, policy: policy), code: .invalidJWSFormat, step: .split)
    }

    func testAlgorithmConfusion() throws {
        let verifier = try verifier()
        let payload = Fixture.transactionPayload()
        for alg in ["none", "HS256", "ES384", "RS256", "es256", "ES256 "] {
            XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, alg: alg), policy: policy),
                                  code: .unsupportedAlgorithm, step: .algorithm)
        }
        let x5c = try XCTUnwrap(String(decoding: try XCTUnwrap(Fixture.b64urlDecode(Fixture.segments(try Fixture.sign(payload))[0])), as: UTF8.self)
            .split(separator: "[").last.map { "[" + $0 })   // `["…","…","…"]}`
        let chain = String(x5c.dropLast())
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"x5c":\#(chain)}"#), policy: policy),
                              code: .unsupportedAlgorithm, step: .algorithm, reasonContains: "no alg")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":256,"x5c":\#(chain)}"#), policy: policy),
                              code: .unsupportedAlgorithm, step: .algorithm)
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":"ES256","alg":"none","x5c":\#(chain)}"#), policy: policy),
                              code: .invalidJWSFormat, step: .header)   // duplicate keys are rejected by the JSON parser
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":"ES256","crit":["b64"],"x5c":\#(chain)}"#), policy: policy),
                              code: .invalidJWSFormat, step: .header, reasonContains: "crit")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":"ES256","x5c":"abc"}"#), policy: policy),
                              code: .invalidJWSFormat, step: .x5c)
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":"ES256","x5c":["!!","QQ==","QQ=="]}"#), policy: policy),
                              code: .invalidJWSFormat, step: .x5c, reasonContains: "x5c[0]")
        // Not a certificate: OpenSSL's reason goes to debugDetail, and the thread's error queue is left empty.
        do {
            _ = try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":"ES256","x5c":["MAMCAQA=","MAMCAQA=","MAMCAQA="]}"#), policy: policy)
            XCTFail("accepted a non-certificate")
        } catch let error as VerificationError {
            XCTAssertEqual(error.code, .invalidJWSFormat)
            XCTAssertEqual(error.step, .x5c)
            XCTAssertTrue(error.debugDetail.contains("error:"), error.debugDetail)
            XCTAssertFalse(error.description.contains("error:"))   // OpenSSL internals never reach the client text
        }
        XCTAssertEqual(OpenSSLErrors.drain(), "")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"["alg","ES256"]"#), policy: policy),
                              code: .invalidJWSFormat, step: .header)
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(payload, header: #"{"alg":"ES256""#), policy: policy),
                              code: .invalidJWSFormat, step: .header)
    }

    func testClaims() throws {
        let verifier = try verifier()
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(Fixture.transactionPayload(bundleId: "com.bouncer.other")), policy: policy),
                              code: .bundleIdMismatch, step: .claims, reasonContains: "com.bouncer.other")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(Fixture.transactionPayload(environment: "Sandbox")),
                                                             policy: VerificationPolicy(bundleId: "com.bouncer.test")),
                              code: .environmentNotAllowed, step: .claims)
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(Fixture.transactionPayload(environment: "Staging")), policy: policy),
                              code: .environmentNotAllowed, step: .claims, reasonContains: "Staging")
        // Required fields are named.
        let missingProduct = Fixture.transactionPayload().replacingOccurrences(of: #""productId":"pro.monthly","#, with: "")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(missingProduct), policy: policy),
                              code: .invalidJWSFormat, step: .payload, reasonContains: "productId")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(Fixture.transactionPayload(transactionId: "")), policy: policy),
                              code: .invalidJWSFormat, step: .payload, reasonContains: "transactionId must not be empty")
        let wrongType = Fixture.transactionPayload().replacingOccurrences(of: #""price":1990"#, with: #""price":"1990""#)
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(wrongType), policy: policy),
                              code: .invalidJWSFormat, step: .payload, reasonContains: "price")
        let noSignedDate = Fixture.transactionPayload().replacingOccurrences(of: #""signedDate":1760000000000,"#, with: "")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign(noSignedDate), policy: policy),
                              code: .invalidJWSFormat, step: .payload, reasonContains: "signedDate")
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign("[1,2]"), policy: policy), code: .invalidJWSFormat, step: .payload)
        XCTAssertVerification(try verifier.verifyTransaction(try Fixture.sign("{\"a\":"), policy: policy), code: .invalidJWSFormat, step: .payload)
    }

    func testNotificationWithNestedJWSAndAppAppleId() throws {
        let verifier = try verifier()
        let transaction = try Fixture.sign(Fixture.transactionPayload(environment: "Production"))
        let renewal = try Fixture.sign(#"{"originalTransactionId":"2000000000000001","autoRenewStatus":1,"environment":"Production","signedDate":1760000000000,"expirationIntent":99}"#)
        func notification(appAppleId: String, environment: String = "Production", nested: String = transaction) -> String {
            #"{"notificationType":"DID_RENEW","subtype":"BRAND_NEW_SUBTYPE","notificationUUID":"u-1","version":"2.0","signedDate":1760000000000,"data":{"bundleId":"com.bouncer.test","environment":"\#(environment)"\#(appAppleId),"signedTransactionInfo":"\#(nested)","signedRenewalInfo":"\#(renewal)","status":1}}"#
        }
        let result = try verifier.verifyNotification(try Fixture.sign(notification(appAppleId: #","appAppleId":42"#)), policy: policy)
        XCTAssertEqual(result.notification.notificationType, .didRenew)
        XCTAssertEqual(result.notification.subtype?.rawValue, "BRAND_NEW_SUBTYPE")
        XCTAssertEqual(result.notification.data?.status, .active)
        XCTAssertEqual(result.transaction?.transaction.transactionId, "2000000123456789")
        XCTAssertEqual(result.renewalInfo?.renewalInfo.expirationIntent?.rawValue, 99)
        XCTAssertEqual(result.transaction?.details.chainCacheHit, true)
        // Production without the id, or with another id: mismatch. Sandbox may omit it.
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(notification(appAppleId: "")), policy: policy),
                              code: .appAppleIdMismatch, step: .claims, reasonContains: "missing")
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(notification(appAppleId: #","appAppleId":43"#)), policy: policy),
                              code: .appAppleIdMismatch, step: .claims)
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(notification(appAppleId: #","appAppleId":43"#, environment: "Sandbox")), policy: policy),
                              code: .appAppleIdMismatch, step: .claims)
        // A bad nested JWS fails the notification and is named.
        let badNested = try Fixture.sign(Fixture.transactionPayload(bundleId: "com.bouncer.other", environment: "Production"))
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(notification(appAppleId: #","appAppleId":42"#, nested: badNested)), policy: policy),
                              code: .bundleIdMismatch, step: .claims, reasonContains: "nested data.signedTransactionInfo")
    }

    func testAppTransactionUsesReceiptCreationDateAndAppAppleId() throws {
        let verifier = try verifier()
        func app(_ fields: String) -> String {
            #"{"receiptType":"Production","bundleId":"com.bouncer.test","applicationVersion":"7","receiptCreationDate":1760000000000.5,"originalPurchaseDate":1700000000000,"originalPlatform":"visionOS","appTransactionId":"704"\#(fields)}"#
        }
        let result = try verifier.verifyAppTransaction(try Fixture.sign(app(#","appAppleId":42"#)), policy: policy)
        XCTAssertEqual(result.appTransaction.receiptType, .production)
        XCTAssertEqual(result.appTransaction.originalPlatform, .visionOS)
        XCTAssertEqual(result.details.effectiveDateSource, .receiptCreationDate)
        XCTAssertEqual(result.details.effectiveDate, Date(appleMilliseconds: 1_760_000_000_000))
        XCTAssertVerification(try verifier.verifyAppTransaction(try Fixture.sign(app("")), policy: policy), code: .appAppleIdMismatch, step: .claims)
        XCTAssertVerification(try verifier.verifyAppTransaction(try Fixture.sign(app(#","appAppleId":41"#)), policy: policy), code: .appAppleIdMismatch, step: .claims)
        // The app transaction's effective date is receiptCreationDate, not signedDate.
        let noDate = #"{"receiptType":"Sandbox","bundleId":"com.bouncer.test","signedDate":1760000000000}"#
        XCTAssertVerification(try verifier.verifyAppTransaction(try Fixture.sign(noDate), policy: policy), code: .invalidJWSFormat, step: .payload,
                              reasonContains: "receiptCreationDate")
    }

    func testNotificationClaimSourcesAndMissingSignedDate() throws {
        let fixedNow = Date(timeIntervalSince1970: 1_760_000_000)
        let verifier = SignedDataVerifier(roots: try Fixture.testRoots(), now: { fixedNow })
        // externalPurchaseToken: no environment field; the id prefix decides (Apple's rule).
        let token = #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN","subtype":"UNREPORTED","notificationUUID":"u-2","externalPurchaseToken":{"externalPurchaseId":"SANDBOX_abc","tokenCreationDate":1760000000000,"appAppleId":42,"bundleId":"com.bouncer.test"}}"#
        let result = try verifier.verifyNotification(try Fixture.sign(token), policy: policy)
        XCTAssertEqual(result.details.environment, .sandbox)
        XCTAssertEqual(result.details.effectiveDateSource, .now)          // no signedDate: Apple's fallback
        XCTAssertEqual(result.details.effectiveDate, fixedNow)
        XCTAssertEqual(result.notification.externalPurchaseToken?.environment, .sandbox)
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(token), policy: VerificationPolicy(bundleId: "com.bouncer.test")),
                              code: .environmentNotAllowed, step: .claims)
        // summary carries the claims for RENEWAL_EXTENSION/SUMMARY.
        let summary = #"{"notificationType":"RENEWAL_EXTENSION","subtype":"SUMMARY","notificationUUID":"u-3","signedDate":1760000000000,"summary":{"environment":"Production","appAppleId":42,"bundleId":"com.bouncer.other","productId":"p","requestIdentifier":"r","storefrontCountryCodes":["USA"],"succeededCount":5,"failedCount":0}}"#
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(summary), policy: policy), code: .bundleIdMismatch, step: .claims,
                              reasonContains: "summary.bundleId")
        // Nothing to read the claims from.
        let bare = #"{"notificationType":"TEST","notificationUUID":"u-4","signedDate":1760000000000}"#
        XCTAssertVerification(try verifier.verifyNotification(try Fixture.sign(bare), policy: policy), code: .bundleIdMismatch, step: .claims)
    }

    func testGarbageAndHugeInputsNeverCrash() throws {
        let verifier = try verifier(cache: 4)
        let valid = try Fixture.sign(Fixture.transactionPayload())
        XCTAssertVerification(try verifier.verifyTransaction("", policy: policy), code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyTransaction("..", policy: policy), code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyTransaction(String(repeating: "A", count: 70_000), policy: policy),
                              code: .invalidJWSFormat, step: .split, reasonContains: "limit")
        XCTAssertVerification(try verifier.verifyTransaction(String(repeating: "A.", count: 2) + String(repeating: "B", count: 65_530), policy: policy),
                              code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyTransaction("e30.e30.AA", policy: policy), code: .unsupportedAlgorithm, step: .algorithm)
        XCTAssertVerification(try verifier.verifyTransaction("\u{0}.\u{0}.\u{0}", policy: policy), code: .invalidJWSFormat, step: .split)
        XCTAssertVerification(try verifier.verifyTransaction("é.é.é", policy: policy), code: .invalidJWSFormat, step: .split)
        // Deterministic pseudo-random mutations of a valid JWS: each must fail cleanly or still verify.
        var generator = SeededGenerator(seed: 0xB0_0C_E5)
        let bytes = Array(valid.utf8)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"".utf8)
        for _ in 0..<300 {
            var mutated = bytes
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let position = Int(generator.next() % UInt64(mutated.count))
                switch generator.next() % 3 {
                case 0: mutated[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                case 1: mutated.remove(at: position)
                default: mutated.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                }
            }
            do { _ = try verifier.verifyTransaction(String(decoding: mutated, as: UTF8.self), policy: policy) } catch {}
        }
    }

    func testCacheIsBoundedAndCanBeDisabled() throws {
        let uncached = try verifier(cache: 0)
        let jws = try Fixture.sign(Fixture.transactionPayload())
        XCTAssertFalse(try uncached.verifyTransaction(jws, policy: policy).details.chainCacheHit)
        XCTAssertFalse(try uncached.verifyTransaction(jws, policy: policy).details.chainCacheHit)
        XCTAssertEqual(uncached.cachedChainCount, 0)

        let cache = ChainCache(capacity: 2)
        let pem = try Data(contentsOf: URL(fileURLWithPath: Fixture.pkiCert("leaf.pem")))
        let der = try XCTUnwrap(PEM.certificates(in: [UInt8](pem))?.first)
        let key = try XCTUnwrap(Certificate(der: der)?.p256PublicKey())
        let keys = (0..<3).map { index in ChainCache.Key(bytes: Array("chain\(index)".utf8)) }
        cache.insert(keys[0], publicKey: key, notBefore: 10, notAfter: 20)
        cache.insert(keys[1], publicKey: key, notBefore: 10, notAfter: 20)
        XCTAssertNotNil(cache.lookup(keys[0], at: 10))     // keys[0] now most recently used
        XCTAssertNil(cache.lookup(keys[0], at: 20))        // notAfter is exclusive
        XCTAssertNil(cache.lookup(keys[0], at: 9))
        cache.insert(keys[2], publicKey: key, notBefore: 10, notAfter: 20)   // evicts keys[1]
        XCTAssertEqual(cache.count, 2)
        XCTAssertNotNil(cache.lookup(keys[0], at: 15))
        XCTAssertNil(cache.lookup(keys[1], at: 15))
        XCTAssertNotNil(cache.lookup(keys[2], at: 15))
    }

    func testConcurrentVerificationSharesOneVerifier() throws {
        let verifier = try verifier()
        let jws = try Fixture.sign(Fixture.transactionPayload())
        let failures = Counter()
        let policy = self.policy
        DispatchQueue.concurrentPerform(iterations: 64) { _ in
            if (try? verifier.verifyTransaction(jws, policy: policy)) == nil { failures.increment() }
        }
        XCTAssertEqual(failures.value, 0)
        XCTAssertEqual(verifier.cachedChainCount, 1)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
