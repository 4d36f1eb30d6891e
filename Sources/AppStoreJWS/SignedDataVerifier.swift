import Domain
import Crypto
public import Foundation
import JSON
import Primitives

/// Verifies StoreKit 2 signed data (transactions, renewal infos, notifications, app transactions)
/// offline, stricter than Apple's libraries, at about one ECDSA verification per JWS in steady state.
///
/// The pipeline, each step named in `VerificationError.Step`:
/// 1. **split**: at most `maxJWSBytes`, exactly three non-empty base64url segments.
/// 2. **header**: JSON object; a `crit` parameter is rejected (RFC 7515 §4.1.11: we understand none).
/// 3. **algorithm**: `alg` exactly `ES256` (never `none`, HS*, ES384; never a fallback).
/// 4. **x5c**: exactly 3 standard-base64 DER certificates; x5c[2] is ignored (never trusted).
/// 5. **chain / validity**: x5c[0] ← x5c[1] ← a configured root, RFC 5280 with `X509_V_FLAG_X509_STRICT`,
///    at the effective date: the payload's `signedDate` (`receiptCreationDate` for app transactions);
///    a notification without `signedDate` (early 2022) is checked at *now*, as Apple's libraries do;
///    other kinds without it are rejected. Unknown critical extensions fail (OpenSSL, RFC 5280 §4.2).
/// 6. **oid**: leaf has non-critical 1.2.840.113635.100.6.11.1, intermediate 1.2.840.113635.100.6.2.1
///    (exact); the leaf is no CA, may sign (keyUsage digitalSignature) and has a P-256 key.
/// 7. **signature**: ES256 over the received `header.payload` bytes; 64-byte raw r‖s only.
/// 8. **claims**: bundleId, then appAppleId, then environment (Apple's order), on the signed JSON.
/// 9. **payload**: the typed decode; missing required fields are named.
///
/// The payload JSON is parsed (not decoded into types) before step 5 because the effective date lives
/// in it; nothing from it is trusted until step 7 passes.
///
/// **Xcode** (StoreKit Testing): Apple's libraries skip all cryptography for it. Here, data whose
/// environment (or `receiptType`) is `Xcode` is rejected with ENVIRONMENT_NOT_ALLOWED unless the policy
/// sets `allowXcode` and allows Sandbox (test data never counts for a Production-only project); if it
/// does, steps 1–3 still apply, `x5c` must hold 1–3 certificates, and the signature must verify with
/// x5c[0]'s P-256 key, but no chain, validity or marker OID is checked (anyone can mint such data: only
/// development projects should allow it, and Bouncer stores it apart from Apple-signed purchases).
/// Data claiming any other environment always takes the full path, so Xcode data can never satisfy a
/// policy that did not opt in.
///
/// **Online revocation (OCSP)** is not implemented: verification is offline and every failure is final
/// (`isRetryable == false`). The seam for it is the cache-miss path (`validateChain`), where an OCSP
/// check of leaf and intermediate would run and a network failure would surface as a retryable error.
public final class SignedDataVerifier: Sendable {
    /// Upper bound on one compact JWS (a notification with both nested JWS is about 19 KB).
    public static let maxJWSBytes = 64 * 1024

    let roots: TrustedRoots
    let cache: ChainCache
    /// SHA-256 over the roots' fingerprints: part of every cache key, so an entry names its anchors.
    let rootsIdentity: [UInt8]
    let strictX509: Bool
    let now: @Sendable () -> Date

    /// Creates a verifier over `roots`; `chainCacheCapacity` 0 disables the chain cache (benchmarks).
    /// `now` is only consulted for notifications without `signedDate`.
    public convenience init(roots: TrustedRoots = .apple, chainCacheCapacity: Int = 64, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(roots: roots, chainCacheCapacity: chainCacheCapacity, strictX509: true, now: now)
    }

    /// Test seam: `strictX509: false` only for Apple's mock CA, which lacks key identifiers.
    init(roots: TrustedRoots, chainCacheCapacity: Int, strictX509: Bool, now: @escaping @Sendable () -> Date) {
        self.roots = roots
        self.cache = ChainCache(capacity: chainCacheCapacity)
        self.rootsIdentity = Digest.sha256(roots.fingerprints.flatMap { $0 })
        self.strictX509 = strictX509
        self.now = now
    }

    /// Number of verified chains currently cached.
    public var cachedChainCount: Int { cache.count }

    // MARK: Public entry points

    /// Verifies a `signedTransactionInfo`. `at` replaces the effective date (default: `signedDate`).
    public func verifyTransaction(_ jws: String, policy: VerificationPolicy, at date: Date? = nil) throws(VerificationError) -> VerifiedTransaction {
        try verifyPayload(jws, kind: .transaction, policy: policy, at: date)
    }

    /// Verifies a `signedRenewalInfo` (no bundleId in it: only the environment is checked).
    public func verifyRenewalInfo(_ jws: String, policy: VerificationPolicy, at date: Date? = nil) throws(VerificationError) -> VerifiedRenewalInfo {
        try verifyPayload(jws, kind: .renewalInfo, policy: policy, at: date)
    }

    /// Verifies an app transaction (`receiptType` is its environment, `receiptCreationDate` its date).
    public func verifyAppTransaction(_ jws: String, policy: VerificationPolicy, at date: Date? = nil) throws(VerificationError) -> VerifiedAppTransaction {
        try verifyPayload(jws, kind: .appTransaction, policy: policy, at: date)
    }

    /// Verifies a notification `signedPayload` and every nested JWS in it (same policy; they share
    /// the chain, so the nested ones are cache hits). A nested failure fails the whole notification,
    /// with the nested field named in the reason.
    public func verifyNotification(_ jws: String, policy: VerificationPolicy, at date: Date? = nil) throws(VerificationError) -> VerifiedNotification {
        let outer: VerifiedPayload<NotificationPayload> = try verifyPayload(jws, kind: .notification, policy: policy, at: date)
        let notification = outer.payload
        var result = VerifiedNotification(notification: notification, payloadJSON: outer.payloadJSON, details: outer.details)
        do {
            if let nested = notification.data?.signedTransactionInfo {
                result.transaction = try nestedError("data.signedTransactionInfo") { () throws(VerificationError) in
                    try verifyTransaction(nested, policy: policy, at: date)
                }
            }
            if let nested = notification.data?.signedRenewalInfo {
                result.renewalInfo = try nestedError("data.signedRenewalInfo") { () throws(VerificationError) in
                    try verifyRenewalInfo(nested, policy: policy, at: date)
                }
            }
            if let nested = notification.appData?.signedAppTransactionInfo {
                result.appTransaction = try nestedError("appData.signedAppTransactionInfo") { () throws(VerificationError) in
                    try verifyAppTransaction(nested, policy: policy, at: date)
                }
            }
        }
        return result
    }

    /// Runs the pipeline for `kind` and decodes the verified payload as `Payload`.
    private func verifyPayload<Payload: SignedPayload>(
        _ jws: String, kind: Kind, policy: VerificationPolicy, at date: Date?
    ) throws(VerificationError) -> VerifiedPayload<Payload> {
        let verified = try verifySigned(jws, kind: kind, policy: policy, at: date)
        return VerifiedPayload(payload: try Payload(PayloadReader(verified.payload)), payloadJSON: verified.payloadBytes,
                               details: verified.details)
    }

    private func nestedError<T>(_ field: String, _ body: () throws(VerificationError) -> T) throws(VerificationError) -> T {
        do { return try body() } catch {
            var wrapped = error
            wrapped.reason = "nested \(field): \(error.reason)"
            // The notification's field, then the nested payload's: signedPayload → data.signedTransactionInfo.expiresDate.
            wrapped.field = error.field.map { "\(field).\($0)" }
            throw wrapped
        }
    }

    // MARK: The pipeline

    enum Kind {
        case transaction, renewalInfo, notification, appTransaction, realtimeRequest

        var dateField: String { self == .appTransaction ? "receiptCreationDate" : "signedDate" }
        var dateSource: VerificationDetails.DateSource { self == .appTransaction ? .receiptCreationDate : .signedDate }
    }

    struct Verified {
        var payloadBytes: [UInt8]
        var payload: JSONObject
        var details: VerificationDetails
    }

    /// The identity claims of one payload, read from the (not yet trusted) JSON.
    struct Claims {
        var bundleId: String?
        var checksBundleId: Bool
        var appAppleId: Int64?
        var checksAppAppleId: Bool
        var environment: AppStoreEnvironment?
        /// Where they were read from, for reasons (`data.`, `summary.`, …).
        var path: String
    }

    private static let headerLimits = JSONParser.Limits(maxDepth: 8, maxBytes: maxJWSBytes, maxStringBytes: maxJWSBytes, maxNumberBytes: 64)
    private static let payloadLimits = JSONParser.Limits(maxDepth: 32, maxBytes: maxJWSBytes, maxStringBytes: maxJWSBytes, maxNumberBytes: 64)

    func verifySigned(_ jws: String, kind: Kind, policy: VerificationPolicy, at override: Date?) throws(VerificationError) -> Verified {
        // OpenSSL's error queue is per thread: start clean, and leave nothing behind for the next request
        // (failures drain what they need into `debugDetail` first).
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        // split
        let length = jws.utf8.count
        guard length <= Self.maxJWSBytes else {
            throw .format(.split, "JWS is \(length) bytes; the limit is \(Self.maxJWSBytes)")
        }
        let bytes = Array(jws.utf8)
        var dots: [Int] = []
        for index in bytes.indices where bytes[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 2 { break }
        }
        guard dots.count == 2 else {
            throw .format(.split, dots.count > 2 ? "more than 3 dot-separated segments" : "expected 3 dot-separated segments, found \(dots.count + 1)")
        }
        let ranges = [0..<dots[0], (dots[0] + 1)..<dots[1], (dots[1] + 1)..<bytes.count]
        for (index, name) in ["header", "payload", "signature"].enumerated() where ranges[index].isEmpty {
            throw .format(.split, "\(name) segment is empty")
        }
        // A header text that a verified JWS carried before names its chain's cache key: skip the header steps
        // (they passed for exactly these bytes) and the certificate decoding; otherwise check it now.
        let headerText = ChainCache.HeaderText(bytes: Array(bytes[ranges[0]]))
        let memo = cache.memo(forHeader: headerText)
        let memoKey = memo?.key
        let checkedFirst = memoKey == nil ? try Self.checkHeader(bytes, range: ranges[0]) : nil

        let decoded = bytes.withUnsafeBufferPointer { buffer in
            [ranges[1], ranges[2]].map { Base64.decodeURL(UnsafeBufferPointer(rebasing: buffer[$0])) }
        }
        guard let payloadBytes = decoded[0] else { throw .format(.split, "payload segment is not base64url") }
        guard let signature = decoded[1] else { throw .format(.split, "signature segment is not base64url") }

        // the (untrusted) payload JSON: needed for the effective date and the Xcode decision
        let payload = try Self.parseObject(payloadBytes, limits: Self.payloadLimits, step: .payload, what: "payload")
        let claims = Self.claims(of: payload, kind: kind)

        // effective date
        let effective: Date
        let source: VerificationDetails.DateSource
        if let override {
            effective = override; source = .caller
        } else if let value = payload[kind.dateField], !value.isNull {
            guard let ms = value.millisecondsValue else { throw .invalidDate(kind.dateField, isNumber: false) }
            guard SignedDateRange.contains(ms) else { throw .invalidDate(kind.dateField) }
            effective = Date(appleMilliseconds: ms); source = kind.dateSource
        } else if kind == .notification {
            effective = now(); source = .now   // Apple's rule for early-2022 notifications
        } else {
            throw .format(.payload, "payload field \(kind.dateField) is required (it is the effective date for certificate validity)")
        }
        // Clamped to years 1...9999: a caller's `at:` may be any Date, Int64(Double) traps outside
        // Int64's range, and OpenSSL cannot compare certificate times beyond year 9999.
        let interval = effective.timeIntervalSince1970.rounded(.down)
        let seconds = interval.isNaN ? 0 : Int64(max(-62_135_596_800, min(253_402_300_799, interval)))
        let signingInput = 0..<dots[1]

        if claims.environment == .xcode {
            let checked = try Self.header(checkedFirst, bytes, range: ranges[0])
            let x5c = checked.x5c
            guard policy.allowXcode else {
                throw VerificationError(code: .environmentNotAllowed, step: .claims, reason: "Xcode (StoreKit Testing) data is not allowed for this project")
            }
            guard (1...3).contains(checked.count) else { throw .format(.x5c, "Xcode x5c must hold 1 to 3 certificates; found \(checked.count)") }
            guard let der = Base64.decodeStandard(x5c[0]), let certificate = Certificate(der: der) else {
                throw .format(.x5c, "x5c[0] is not a base64 DER certificate")
            }
            guard let key = certificate.p256PublicKey() else { throw .failed(.oid, "x5c[0] key is not EC P-256 (ES256)") }
            try Self.verifySignature(key: key, signature: signature, bytes: bytes, range: signingInput)
            try Self.check(claims, policy: policy)
            return Verified(payloadBytes: payloadBytes, payload: payload, details: VerificationDetails(
                effectiveDate: effective, effectiveDateSource: source, environment: .xcode, chainCacheHit: false, isXcodeSigned: true))
        }

        // Steady state: these exact header bytes and certificates verified a JWS before, and the effective
        // date is inside their window.
        if let memoKey, let cached = cache.entry(memoKey), cached.notBefore <= seconds, seconds < cached.notAfter {
            try Self.verifySignature(key: cached.key, signature: signature, bytes: bytes, range: signingInput,
                                     prefix: memo?.signingInputPrefix, prefixEnd: dots[0] + 1)
            try Self.check(claims, policy: policy)
            return Verified(payloadBytes: payloadBytes, payload: payload, details: VerificationDetails(
                effectiveDate: effective, effectiveDateSource: source, environment: claims.environment ?? .production,
                chainCacheHit: true, isXcodeSigned: false))
        }

        let checked = try Self.header(checkedFirst, bytes, range: ranges[0])
        let x5c = checked.x5c
        guard checked.count == 3 else {
            throw .format(.x5c, "x5c must hold exactly 3 certificates (leaf, intermediate, root); found \(checked.count)")
        }
        guard let leafDER = Base64.decodeStandard(x5c[0]) else { throw .format(.x5c, "x5c[0] is not a base64 DER certificate") }
        guard let intermediateDER = Base64.decodeStandard(x5c[1]) else {
            throw .format(.x5c, "x5c[1] is not a base64 DER certificate")
        }
        let cacheKey = ChainCache.Key(leafDER: leafDER, intermediateDER: intermediateDER, rootsIdentity: rootsIdentity)

        // These certificates verified a JWS before (perhaps under another header text) and the effective date
        // is inside their window.
        if let cached = cache.entry(cacheKey), cached.notBefore <= seconds, seconds < cached.notAfter {
            try Self.verifySignature(key: cached.key, signature: signature, bytes: bytes, range: signingInput)
            try Self.check(claims, policy: policy)
            cache.remember(header: headerText, as: cacheKey)
            return Verified(payloadBytes: payloadBytes, payload: payload, details: VerificationDetails(
                effectiveDate: effective, effectiveDateSource: source, environment: claims.environment ?? .production,
                chainCacheHit: true, isXcodeSigned: false))
        }

        // chain, validity, oid: full validation
        let validated = try validateChain(leafDER: leafDER, intermediateDER: intermediateDER, at: seconds, effective: effective, source: source)

        // signature
        try Self.verifySignature(key: validated.key, signature: signature, bytes: bytes, range: signingInput)

        // claims
        try Self.check(claims, policy: policy)
        // Only now, with everything verified, may the chain enter the cache (one insertion per verified JWS).
        cache.insert(cacheKey, publicKey: validated.key, notBefore: validated.notBefore, notAfter: validated.notAfter)
        cache.remember(header: headerText, as: cacheKey)
        return Verified(payloadBytes: payloadBytes, payload: payload, details: VerificationDetails(
            effectiveDate: effective, effectiveDateSource: source, environment: claims.environment ?? .production,
            chainCacheHit: false, isXcodeSigned: false))
    }

    /// What the header checks established: the x5c strings (at most 4 kept) and their count.
    struct CheckedHeader {
        var x5c: [String]
        var count: Int
    }

    /// `checked` when the header steps already ran, else runs them.
    static func header(_ checked: CheckedHeader?, _ bytes: [UInt8], range: Range<Int>) throws(VerificationError) -> CheckedHeader {
        if let checked { return checked }
        return try checkHeader(bytes, range: range)
    }

    /// Steps header, algorithm and x5c shape over the header segment.
    static func checkHeader(_ bytes: [UInt8], range: Range<Int>) throws(VerificationError) -> CheckedHeader {
        let decoded = bytes.withUnsafeBufferPointer { Base64.decodeURL(UnsafeBufferPointer(rebasing: $0[range])) }
        guard let headerBytes = decoded else { throw .format(.split, "header segment is not base64url") }

        // header
        let header = try parseObject(headerBytes, limits: headerLimits, step: .header, what: "header")
        if header["crit"] != nil {
            throw .format(.header, "header parameter crit is not supported (RFC 7515 §4.1.11)")
        }

        // algorithm
        guard let algValue = header["alg"] else {
            throw VerificationError(code: .unsupportedAlgorithm, step: .algorithm, reason: "header has no alg; ES256 is required")
        }
        guard let alg = algValue.stringValue, alg == "ES256" else {
            let shown = algValue.stringValue.map { "\"\(String($0.prefix(16)))\"" } ?? "a non-string"
            throw VerificationError(code: .unsupportedAlgorithm, step: .algorithm, reason: "alg \(shown) is not supported; ES256 is required")
        }

        // x5c shape
        guard let x5cValue = header["x5c"] else { throw .format(.x5c, "header has no x5c certificate chain") }
        guard let x5cArray = x5cValue.arrayValue else { throw .format(.x5c, "x5c must be an array of base64 certificates") }
        var x5c: [String] = []
        for (index, element) in x5cArray.prefix(4).enumerated() {
            guard let string = element.stringValue, !string.isEmpty else { throw .format(.x5c, "x5c[\(index)] must be a non-empty string") }
            x5c.append(string)
        }
        guard !x5c.isEmpty else { throw .format(.x5c, "x5c is empty") }
        return CheckedHeader(x5c: x5c, count: x5cArray.count)
    }

    private static func parseObject(_ bytes: [UInt8], limits: JSONParser.Limits, step: VerificationError.Step, what: String) throws(VerificationError) -> JSONObject {
        let value: JSONValue
        do { value = try JSONParser.parse(bytes, limits: limits) } catch {
            throw .format(step, "\(what) is not valid JSON (\(error))")
        }
        guard let object = value.objectValue else { throw .format(step, "\(what) must be a JSON object") }
        return object
    }

    /// ES256 over `bytes[range]`. With `prefix` (SHA-256 already over `bytes[range.lowerBound..<prefixEnd]`, the
    /// memoized header text and its dot) only the rest is hashed.
    private static func verifySignature(key: P256.PublicKey, signature: [UInt8], bytes: [UInt8], range: Range<Int>,
                                        prefix: Digest.SHA256Prefix? = nil, prefixEnd: Int = 0) throws(VerificationError) {
        guard signature.count == 64 else {
            throw .failed(.signature, "signature is \(signature.count) bytes; ES256 requires the 64-byte raw r‖s form (DER is rejected)")
        }
        OpenSSLErrors.clear()
        let valid = bytes.withUnsafeBytes { raw in
            if let prefix, range.contains(prefixEnd),
               let digest = prefix.digest(continuingWith: UnsafeRawBufferPointer(rebasing: raw[prefixEnd..<range.upperBound])) {
                return key.verifyES256(rawSignature: signature, digest: digest)
            }
            return key.verifyES256(rawSignature: signature, message: UnsafeRawBufferPointer(rebasing: raw[range]))
        }
        guard valid else {
            throw .failed(.signature, "ES256 signature does not verify with the leaf certificate's key", debug: OpenSSLErrors.drain())
        }
    }

    struct ValidatedLeaf {
        var key: P256.PublicKey
        var notBefore: Int64
        var notAfter: Int64
    }

    /// Full path validation plus Apple's marker and leaf checks (the cache-miss path).
    func validateChain(leafDER: [UInt8], intermediateDER: [UInt8], at seconds: Int64,
                       effective: Date, source: VerificationDetails.DateSource) throws(VerificationError) -> ValidatedLeaf {
        guard let leaf = Certificate(der: leafDER) else {
            throw VerificationError(code: .invalidJWSFormat, step: .x5c, reason: "x5c[0] is not a base64 DER certificate", debugDetail: OpenSSLErrors.drain())
        }
        guard let intermediate = Certificate(der: intermediateDER) else {
            throw VerificationError(code: .invalidJWSFormat, step: .x5c, reason: "x5c[1] is not a base64 DER certificate", debugDetail: OpenSSLErrors.drain())
        }
        let window: TrustStore.ValidatedChain
        switch roots.store.validate(leaf: leaf, intermediate: intermediate, at: seconds, strict: strictX509) {
        case .success(let validated):
            window = validated
        case .failure(let failure):
            switch failure.kind {
            case .validity:
                throw .failed(.validity, "\(failure.reason) \(Self.iso8601(effective)) (\(source.rawValue))", debug: failure.debug)
            case .untrusted, .constraints, .other:
                throw .failed(.chain, failure.reason, debug: failure.debug)
            }
        }
        if let problem = AppleSigningChain.problem(leaf: leaf, intermediate: intermediate, leafName: "leaf") {
            throw .failed(.oid, problem)
        }
        guard let key = leaf.p256PublicKey() else { throw .failed(.oid, "leaf certificate key is not EC P-256 (ES256)") }
        return ValidatedLeaf(key: key, notBefore: window.notBefore, notAfter: window.notAfter)
    }

    static func iso8601(_ date: Date) -> String {
        RFC3339.string(secondsSince1970: date.timeIntervalSince1970)
    }

    // MARK: Claims

    static func claims(of payload: JSONObject, kind: Kind) -> Claims {
        func environment(_ object: JSONObject, _ key: String = "environment") -> AppStoreEnvironment? {
            object[key]?.stringValue.map(AppStoreEnvironment.init(rawValue:))
        }
        switch kind {
        case .transaction:
            return Claims(bundleId: payload["bundleId"]?.stringValue, checksBundleId: true, appAppleId: nil,
                          checksAppAppleId: false, environment: environment(payload), path: "")
        case .renewalInfo:
            return Claims(bundleId: nil, checksBundleId: false, appAppleId: nil, checksAppAppleId: false,
                          environment: environment(payload), path: "")
        case .realtimeRequest:
            // Retention Messaging: no bundleId in the payload; the app is its appAppleId.
            return Claims(bundleId: nil, checksBundleId: false, appAppleId: payload["appAppleId"]?.int64Value,
                          checksAppAppleId: true, environment: environment(payload), path: "")
        case .appTransaction:
            return Claims(bundleId: payload["bundleId"]?.stringValue, checksBundleId: true, appAppleId: payload["appAppleId"]?.int64Value,
                          checksAppAppleId: true, environment: environment(payload, "receiptType"), path: "")
        case .notification:
            // Apple's order: the first present of data, summary, externalPurchaseToken, appData.
            for field in ["data", "summary", "externalPurchaseToken", "appData"] {
                guard let object = payload[field]?.objectValue else { continue }
                var env = environment(object)
                if field == "externalPurchaseToken" {
                    env = (object["externalPurchaseId"]?.stringValue ?? "").hasPrefix("SANDBOX") ? .sandbox : .production
                }
                return Claims(bundleId: object["bundleId"]?.stringValue, checksBundleId: true, appAppleId: object["appAppleId"]?.int64Value,
                              checksAppAppleId: true, environment: env, path: field + ".")
            }
            return Claims(bundleId: nil, checksBundleId: true, appAppleId: nil, checksAppAppleId: true, environment: nil, path: "data.")
        }
    }

    /// bundleId, then appAppleId, then environment (the order Apple's libraries use).
    static func check(_ claims: Claims, policy: VerificationPolicy) throws(VerificationError) {
        if claims.checksBundleId, claims.bundleId != policy.bundleId {
            let found = claims.bundleId.map { "\"\(String($0.prefix(200)))\"" } ?? "missing"
            throw VerificationError(code: .bundleIdMismatch, step: .claims,
                                    reason: "payload \(claims.path)bundleId \(found) does not match the project's \"\(policy.bundleId)\"")
        }
        if claims.checksAppAppleId, let expected = policy.appAppleId {
            // Production must carry the id; other environments may omit it but never carry another one.
            if claims.environment == .production || claims.appAppleId != nil, claims.appAppleId != expected {
                let found = claims.appAppleId.map(String.init) ?? "missing"
                throw VerificationError(code: .appAppleIdMismatch, step: .claims,
                                        reason: "payload \(claims.path)appAppleId \(found) does not match the project's \(expected)")
            }
        }
        guard let environment = claims.environment else {
            throw VerificationError(code: .environmentNotAllowed, step: .claims, reason: "payload \(claims.path)environment is missing")
        }
        if environment.isLocalTesting, !policy.allows(environment) {
            throw VerificationError(code: .environmentNotAllowed, step: .claims,
                                    reason: "\(environment.rawValue) (StoreKit Testing) data needs allow_xcode and Sandbox among the project's environments")
        }
        guard policy.allows(environment) else {
            let allowed = policy.environments.map(\.rawValue).sorted().joined(separator: ", ")
            throw VerificationError(code: .environmentNotAllowed, step: .claims,
                                    reason: "environment \(String(environment.rawValue.prefix(40))) is not allowed (allowed: \(allowed.isEmpty ? "none" : allowed))")
        }
    }
}

/// A payload the verifier decodes from a verified JWS.
protocol SignedPayload: Sendable {
    /// Decodes the verified payload; missing required fields are errors.
    init(_ reader: PayloadReader) throws(VerificationError)
}

extension JWSTransaction: SignedPayload {}
extension JWSRenewalInfo: SignedPayload {}
extension AppTransaction: SignedPayload {}
extension NotificationPayload: SignedPayload {}
