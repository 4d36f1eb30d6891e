import Jobs
import API
import Domain
import Foundation
import JSON
import Storage

/// `bouncer project credentials …` (the admin API's App Store credential routes, straight against the database)
/// and `bouncer credentials reencrypt` (after rotating `BOUNCER_ENCRYPTION_KEY`). Both call
/// `CredentialAdministration`, the API's use cases, so the rules and the JSON printed are the API's.
public enum CredentialCommands {
    static let usage = """
        usage: bouncer project credentials set PROJECT_ID --issuer-id UUID --key-id KEY_ID --private-key-file FILE
               bouncer project credentials show PROJECT_ID
               bouncer project credentials delete PROJECT_ID

        The project's App Store Server API key: an In-App Purchase key from App Store Connect > Users and Access >
        Integrations > In-App Purchase. --issuer-id is the Issuer ID shown above the keys, --key-id the key's
        10-character Key ID, FILE the .p8 downloaded when the key was generated (`-` reads standard input).
        The private key is checked (P-256, PKCS#8) and stored encrypted under BOUNCER_ENCRYPTION_KEY; nothing
        ever prints it: show prints the metadata and the key's fingerprint
        (`openssl pkey -in FILE -pubout -outform DER | sha256sum` prints the same).
        Exit status: 0 done, 1 failed (unknown project, no credentials, no encryption key, database),
        2 invalid arguments (nothing changed).

        """

    static let reencryptUsage = """
        usage: bouncer credentials reencrypt

        Re-encrypts every stored App Store private key under BOUNCER_ENCRYPTION_KEY. Rotate the key like this:
          1. every instance: BOUNCER_ENCRYPTION_KEY=<new>, BOUNCER_ENCRYPTION_KEY_PREVIOUS=<old>; restart
          2. bouncer credentials reencrypt   (with the same two variables)
          3. every instance: unset BOUNCER_ENCRYPTION_KEY_PREVIOUS; restart; destroy the old key
        Progress goes to stderr, one line per project; a JSON summary to stdout. Safe to run again and while
        serving (a value stored meanwhile is left as written: it is already under the new key).
        Exit status: 0 all current, 1 some value could not be opened (listed) or the database failed,
        2 invalid arguments or configuration.

        """

    public static let command = Command(name: "credentials", summary: "Re-encrypt App Store credentials after a key rotation",
                                 usage: reencryptUsage) { args in
        guard args == ["reencrypt"] else {
            if args.first == "--help" || args.first == "-h" {
                CLI.out(reencryptUsage)
                return 0
            }
            CLI.err("bouncer: expected `bouncer credentials reencrypt`\n\n" + reencryptUsage)
            return 2
        }
        return reencrypt()
    }

    /// `bouncer project credentials …` (the arguments after `credentials`).
    static func run(_ args: [String]) -> Int32 {
        AdminCommands.run(args, usage: usage, { args throws(AdminCommands.UsageError) in try parse(args) },
                          administration: administration)
    }

    /// The use cases over the database, sealing with the environment's keys.
    static func administration(_ settings: ServeSettings, _ database: Database) -> CredentialAdministration {
        CredentialAdministration(
            projects: PostgresProjectStore(pool: database.pool), store: PostgresCredentialStore(pool: database.pool),
            sealer: AESGCMCredentialSealer(settings: settings), inspector: P256KeyInspector(), now: { Date() })
    }

    /// One start-up line naming the encryption keys by id (never the keys).
    public static func encryptionLogLine(_ sealer: AESGCMCredentialSealer?) -> String {
        guard let sealer else {
            return jsonLine("encryption", "BOUNCER_ENCRYPTION_KEY is unset: storing App Store credentials is refused")
        }
        return jsonLine("encryption", "App Store credentials seal under key \(sealer.currentKeyId)"
            + (sealer.previousKeyId.map { "; key \($0) (BOUNCER_ENCRYPTION_KEY_PREVIOUS) still opens" } ?? ""))
    }

    private static func parse(_ args: [String]) throws(AdminCommands.UsageError)
        -> (CredentialAdministration) throws -> [[UInt8]]
    {
        guard args.count >= 2, let id = UUID(uuidString: args[1]) else {
            throw AdminCommands.UsageError(message: "credentials \(args.first ?? "") needs PROJECT_ID (a UUID)")
        }
        switch args.first {
        case "set":
            var issuerId: String?
            var keyId: String?
            var file: String?
            var rest = ArraySlice(args.dropFirst(2))
            while let flag = rest.popFirst() {
                guard let value = rest.popFirst(), !value.isEmpty else {
                    throw AdminCommands.UsageError(message: "\(flag) needs a value")
                }
                switch flag {
                case "--issuer-id": issuerId = value
                case "--key-id": keyId = value
                case "--private-key-file": file = value
                default: throw AdminCommands.UsageError(message: "unknown option \(flag)")
                }
            }
            guard let issuerId, let keyId, let file else {
                throw AdminCommands.UsageError(message: "set needs --issuer-id, --key-id and --private-key-file")
            }
            let pem = try readKeyFile(file)
            return { admin in
                [Representations.appStoreCredentials(
                    try admin.setCredentials(projectId: id, issuerId: issuerId, keyId: keyId, privateKeyPEM: pem))]
            }
        case "show":
            guard args.count == 2 else { throw AdminCommands.UsageError(message: "show takes only PROJECT_ID") }
            return { admin in [Representations.appStoreCredentials(try admin.credentials(projectId: id))] }
        case "delete":
            guard args.count == 2 else { throw AdminCommands.UsageError(message: "delete takes only PROJECT_ID") }
            return { admin in
                try admin.deleteCredentials(projectId: id)
                return []
            }
        default:
            throw AdminCommands.UsageError.unknownSubcommand("credentials", args)
        }
    }

    /// The `.p8` text, read with a bound (a key is ~250 bytes; the rules refuse more than 8 KiB anyway). Errors
    /// name the file, never its contents.
    private static func readKeyFile(_ path: String) throws(AdminCommands.UsageError) -> String {
        let limit = AppStoreCredentialRules.maxPrivateKeyBytes + 1
        let data: Data
        do {
            let handle = path == "-" ? FileHandle.standardInput : try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            data = try handle.read(upToCount: limit) ?? Data()
        } catch {
            throw AdminCommands.UsageError(message: "cannot read --private-key-file \(path): \(error.localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw AdminCommands.UsageError(message: "--private-key-file \(path) is not a PEM text file")
        }
        return text
    }

    /// `bouncer credentials reencrypt`: progress per project on stderr, a JSON summary on stdout.
    private static func reencrypt() -> Int32 {
        var failed = false
        let status = AdminCommands.run(["reencrypt"], usage: reencryptUsage, { _ throws(AdminCommands.UsageError) in
            { (admin: CredentialAdministration) in
                let report = try admin.reencryptAll { projectId, outcome in
                    CLI.err("project \(projectId.lowercasedText): \(outcome)\n")
                }
                failed = !report.failures.isEmpty
                return [summary(report)]
            }
        }, administration: administration)
        return status == 0 && failed ? 1 : status
    }

    private static func summary(_ report: CredentialAdministration.ReencryptionReport) -> [UInt8] {
        let failures = report.failures.map { failure -> JSONValue in
            .object(JSONObject([("project_id", .string(failure.projectId.lowercasedText)),
                                ("reason", .string(failure.reason))]))
        }
        return Array(JSONValue.object(JSONObject([
            ("reencrypted", JSONValue(report.resealed)), ("already_current", JSONValue(report.alreadyCurrent)),
            ("changed_concurrently", JSONValue(report.changedConcurrently)), ("failed", .array(failures)),
        ])).serializedString().utf8)
    }
}
