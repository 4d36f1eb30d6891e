public import Jobs
public import Domain
import Foundation
import JSON
import Storage

/// `bouncer signing-key rotate` and the entitlement-token wiring `bouncer serve` shares with it: both build
/// `EntitlementTokens`, the API's use cases, over the database and `BOUNCER_ENCRYPTION_KEY`.
public enum SigningKeyCommands {
    static let usage = """
        usage: bouncer signing-key rotate

        Makes a new current entitlement-token signing key (P-256, stored encrypted under BOUNCER_ENCRYPTION_KEY).
        New tokens carry its kid at once (every instance reads the current key per token); the replaced key stays
        in GET /.well-known/jwks.json as the previous key (and for at least 24 h, the longest token lifetime), so
        tokens it signed keep verifying until they expire. Verifiers that cached the JWKS refetch it when they
        meet an unknown kid. Prints {"kid", "previous_kid"}.
        Exit status: 0 rotated, 1 failed (no encryption key, database), 2 invalid arguments.

        """

    public static let command = Command(name: "signing-key", summary: "Rotate the entitlement-token signing key",
                                 usage: usage) { args in
        AdminCommands.run(args, usage: usage, { args throws(AdminCommands.UsageError) in try parse(args) },
                          administration: { settings, database in
                              entitlementTokens(settings: settings, database: database,
                                                purchases: PostgresPurchaseStore(pool: database.pool),
                                                sealer: AESGCMCredentialSealer(settings: settings))
                          })
    }

    /// The use cases over the database, sealing with the environment's keys.
    public static func entitlementTokens(settings: ServeSettings, database: Database, purchases: any PurchaseStore,
                                  sealer: AESGCMCredentialSealer?) -> EntitlementTokens {
        EntitlementTokens(store: PostgresSigningKeyStore(pool: database.pool), purchases: purchases, sealer: sealer,
                          signer: EntitlementTokenSigner(), issuer: settings.tokenIssuer, now: { Date() })
    }

    /// Makes the first signing key if there is none (so the JWKS is ready before the first token) and says which
    /// key signs; never the key. A failure here is retried by the first token request.
    public static func startupLogLine(_ tokens: EntitlementTokens?, sealer: AESGCMCredentialSealer?) -> String {
        guard let tokens, sealer != nil else {
            return jsonLine("entitlement_tokens", "BOUNCER_ENCRYPTION_KEY is unset: entitlement tokens are unavailable "
                + "(the token route answers 409 ENCRYPTION_KEY_MISSING; the JWKS publishes stored public keys only)")
        }
        do {
            let key = try tokens.ensureCurrentKey()
            return jsonLine("entitlement_tokens", "tokens sign with key \(key.kid)")
        } catch {
            return jsonLine("entitlement_tokens", "no signing key yet (retried on the first token): \(error)")
        }
    }

    private static func parse(_ args: [String]) throws(AdminCommands.UsageError) -> (EntitlementTokens) throws -> [[UInt8]] {
        guard args == ["rotate"] else {
            throw AdminCommands.UsageError(message: "expected `bouncer signing-key rotate`")
        }
        return { tokens in
            let (current, previous) = try tokens.rotate()
            return [JSONValue.object(JSONObject([
                ("kid", .string(current.kid)), ("previous_kid", previous.map { .string($0.kid) } ?? .null),
            ])).serialized()]
        }
    }
}
