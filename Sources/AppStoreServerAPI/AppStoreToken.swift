import AppStoreJWS
import Crypto
public import Domain
public import Foundation
import JSON
import Synchronization

/// Signs and caches the ES256 JWT the App Store Server API requires (Apple's "Generating JSON Web Tokens for API
/// requests"): header `{alg: ES256, kid, typ: JWT}`, claims `{iss, iat, exp, aud: appstoreconnect-v1, bid}`.
///
/// Tokens are cached per (issuer id, key id, key fingerprint, bundle id) and replaced `renewalMargin` before
/// they expire; parsed private keys are cached per (issuer id, key id, key fingerprint), so a busy project
/// parses its `.p8` once. Both caches are bounded. Tokens and keys never appear in errors or descriptions.
public final class AppStoreTokenSigner: Sendable {
    /// Apple refuses tokens whose `exp` is more than 60 minutes after `iat`.
    public static let maximumLifetime: TimeInterval = 60 * 60

    /// How long a token is valid (clamped to 1 s … 60 min).
    public let lifetime: TimeInterval
    /// How long before `exp` a cached token is replaced.
    public let renewalMargin: TimeInterval
    /// Most tokens (and keys) kept; the cache is emptied when full (simple, and rare: one entry per project).
    public let maxEntries: Int

    private struct KeyID: Hashable { var issuerId: String; var keyId: String; var fingerprint: String }
    private struct TokenID: Hashable { var key: KeyID; var bundleId: String }
    private struct Token { var value: String; var expiresAt: Date }
    private struct Caches { var keys: [KeyID: P256.PrivateKey] = [:]; var tokens: [TokenID: Token] = [:]; var signed = 0 }
    private let caches = Mutex(Caches())

    /// A signer; the defaults are 20-minute tokens renewed 5 minutes before expiry.
    public init(lifetime: TimeInterval = 20 * 60, renewalMargin: TimeInterval = 5 * 60, maxEntries: Int = 1024) {
        let clamped = min(max(lifetime, 1), Self.maximumLifetime)
        self.lifetime = clamped
        self.renewalMargin = min(max(renewalMargin, 0), clamped / 2)
        self.maxEntries = max(1, maxEntries)
    }

    /// Tokens signed so far (tests count these to check caching).
    public var tokensSigned: Int { caches.withLock { $0.signed } }

    /// A valid token for `credentials` at `now`: the cached one while it has more than `renewalMargin` left,
    /// else a fresh one.
    /// - Throws: `.invalidRequest` when the stored key does not load or signing fails.
    public func token(for credentials: AppStoreAPICredentials, now: Date) throws(AppStoreAPIError) -> String {
        let meta = credentials.credentials.credentials
        let keyID = KeyID(issuerId: meta.issuerId, keyId: meta.keyId, fingerprint: meta.keyFingerprint)
        let tokenID = TokenID(key: keyID, bundleId: credentials.bundleId)
        if let cached = caches.withLock({ $0.tokens[tokenID] }), cached.expiresAt.timeIntervalSince(now) > renewalMargin,
           cached.expiresAt.timeIntervalSince(now) <= lifetime {   // a clock stepped back does not keep a token longer
            return cached.value
        }
        let key = try privateKey(keyID, pem: credentials.credentials.privateKeyPEM)
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let expiresAt = issuedAt + Int64(lifetime)
        let value = try Self.sign(issuerId: meta.issuerId, keyId: meta.keyId, bundleId: credentials.bundleId,
                                  issuedAt: issuedAt, expiresAt: expiresAt, key: key)
        caches.withLock { caches in
            if caches.tokens.count >= maxEntries { caches.tokens.removeAll() }
            caches.tokens[tokenID] = Token(value: value, expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt)))
            caches.signed += 1
        }
        return value
    }

    /// Forgets every cached token and key (e.g. after Apple answered 401: the next call signs afresh).
    public func invalidate(_ credentials: AppStoreAPICredentials) {
        let meta = credentials.credentials.credentials
        let keyID = KeyID(issuerId: meta.issuerId, keyId: meta.keyId, fingerprint: meta.keyFingerprint)
        caches.withLock { caches in
            caches.tokens[TokenID(key: keyID, bundleId: credentials.bundleId)] = nil
        }
    }

    /// One JWT, signed now (no cache): the header and claims in Apple's order.
    static func sign(issuerId: String, keyId: String, bundleId: String, issuedAt: Int64, expiresAt: Int64,
                     key: P256.PrivateKey) throws(AppStoreAPIError) -> String {
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyId), "typ": "JWT"]
        let claims: JSONValue = [
            "iss": .string(issuerId), "iat": JSONValue(issuedAt), "exp": JSONValue(expiresAt),
            "aud": "appstoreconnect-v1", "bid": .string(bundleId),
        ]
        do {
            return try CompactJWS.signES256(header: header.serialized(), payload: claims.serialized(), key: key)
        } catch {
            throw AppStoreAPIError(.invalidRequest, reason: "signing the App Store Server API token failed: \(error)")
        }
    }

    private func privateKey(_ id: KeyID, pem: String) throws(AppStoreAPIError) -> P256.PrivateKey {
        if let key = caches.withLock({ $0.keys[id] }) { return key }
        let key: P256.PrivateKey
        do { key = try P256.PrivateKey(pem: pem) } catch {
            // CryptoError's description never quotes the key.
            throw AppStoreAPIError(.invalidRequest, reason: "the stored In-App Purchase key does not load: \(error)")
        }
        caches.withLock { caches in
            if caches.keys.count >= maxEntries { caches.keys.removeAll() }
            caches.keys[id] = key
        }
        return key
    }
}
