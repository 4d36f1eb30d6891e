import API
import AppStoreJWS
import Foundation
import JSON
import Primitives

/// `bouncer verify`: a command-line StoreKit 2 verifier (think jwt.io for App Store signed data).
///
/// Prints the verified payload as pretty JSON (nested JWS in notifications verified and decoded in
/// place) and exits 0, or prints `CODE (step): reason` on stderr and exits 1. Usage errors exit 2.
public enum VerifyCommand {
    /// Help text for `bouncer verify --help` and usage errors.
    public static let usage = """
        usage: bouncer verify [options] [JWS | FILE | -]
               bouncer verify --receipt FILE|- [options]

        Verifies a StoreKit 2 signed transaction, renewal info, app transaction or App Store Server
        Notification V2 and prints its payload as JSON. Input: the JWS itself, a file holding it, a
        JSON body with "signedPayload" (or signedTransactionInfo / signedRenewalInfo /
        signedAppTransactionInfo), or stdin ("-" or no argument).

        A FILE that is a transactions export with its JWS (exports/transactions.csv?include_jws=true,
        bouncer export transactions --include-jws) is re-verified row by row: each JWS as above, its
        SHA-256 against jws_sha256, the row's signed fields against the payload's, its money against the
        signed price and refund. Prints each failing row and a summary; exit 1 if a row fails.

        options:
          --root FILE            trust this root (DER or PEM); repeatable. Default: $BOUNCER_ROOT_CERTIFICATES
                                 (colon-separated paths), else the embedded Apple Root CA G3 + G2
          --bundle-id ID         require this bundleId (default: accept the payload's own, with a warning)
          --environment ENV      allow Production, Sandbox, Xcode or LocalTesting; repeatable
                                 (default: Production and Sandbox)
          --app-apple-id N       require this appAppleId (Production must carry it)
          --at DATE|signed       validate certificates at DATE (ISO 8601, "now", or Unix seconds)
                                 instead of the payload's signedDate ("signed", the default)
          --allow-xcode          accept StoreKit Testing in Xcode data (self-signed, no Apple chain)
          --type KIND            transaction, renewalInfo, notification or appTransaction (default: guessed)
          --receipt FILE         verify a StoreKit 1 app receipt instead (base64 text or DER; "-" for stdin):
                                 PKCS#7 signer chained to the embedded Apple Inc. Root (or --root) at the
                                 receipt's creation date ("created", the default for --at); prints every
                                 decoded field and the verdict as JSON (also when rejected: exit 1)
          -h, --help             show this help
        """

    struct Options {
        var roots: [String] = []
        var bundleId: String?
        var environments: Set<AppStoreEnvironment> = []
        var appAppleId: Int64?
        var at: Date?
        var allowXcode = false
        var kind: SignedDataKind?
        var input: String?
        var receipt: String?
    }

    enum UsageError: Error { case message(String), help }

    /// Runs the command with the arguments after `verify`; returns the process exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        do { options = try parse(arguments) } catch {
            switch error {
            case .help:
                write(usage + "\n", to: .standardOutput)
                return 0
            case .message(let message):
                write("bouncer verify: \(message)\n\n\(usage)\n", to: .standardError)
                return 2
            }
        }

        if let receipt = options.receipt {
            guard options.input == nil else {
                write("bouncer verify: --receipt takes the receipt file; no other input\n\n\(usage)\n", to: .standardError)
                return 2
            }
            return VerifyReceiptCommand.run(path: receipt, options: options)
        }

        if let path = options.input, VerifyExportCommand.isExport(path) {
            guard let roots = loadRoots(options) else { return 2 }
            var environments = options.environments
            if environments.isEmpty { environments = [.production, .sandbox] }
            let allowXcode = options.allowXcode || environments.contains(.xcode)
            return VerifyExportCommand.run(
                path: path, verifier: SignedDataVerifier(roots: roots),
                policy: { claimed in
                    VerificationPolicy(bundleId: options.bundleId ?? claimed, environments: environments,
                                       appAppleId: options.appAppleId, allowXcode: allowXcode)
                },
                out: { write($0, to: .standardOutput) }, err: { write($0, to: .standardError) })
        }

        let jws: String
        switch readInput(options.input) {
        case .success(let text): jws = text
        case .failure(let message):
            write("bouncer verify: \(message)\n", to: .standardError)
            return 2
        }

        guard let roots = loadRoots(options) else { return 2 }

        var bundleId = options.bundleId ?? ""
        if options.bundleId == nil {
            bundleId = SignedDataKind.claimedBundleId(fromJWS: jws) ?? ""
            write("bouncer verify: warning: no --bundle-id given; bundleId not checked\n", to: .standardError)
        }
        var environments = options.environments
        if environments.isEmpty { environments = [.production, .sandbox] }
        let policy = VerificationPolicy(bundleId: bundleId, environments: environments, appAppleId: options.appAppleId,
                                        allowXcode: options.allowXcode || environments.contains(.xcode))
        let kind = options.kind ?? SignedDataKind.guess(fromJWS: jws) ?? .transaction
        let verifier = SignedDataVerifier(roots: roots)

        do {
            let output = try verify(jws, kind: kind, verifier: verifier, policy: policy, at: options.at)
            write(output.serializedString(pretty: true) + "\n", to: .standardOutput)
            return 0
        } catch {
            write("\(error.description)\n", to: .standardError)
            if !error.debugDetail.isEmpty { write("  detail: \(error.debugDetail)\n", to: .standardError) }
            return 1
        }
    }

    /// The roots to trust (`--root`, else `$BOUNCER_ROOT_CERTIFICATES`, else Apple's); nil after printing why not.
    static func loadRoots(_ options: Options) -> TrustedRoots? {
        do {
            if !options.roots.isEmpty { return try TrustedRoots(contentsOf: options.roots) }
            return try TrustedRoots.fromEnvironment(ProcessInfo.processInfo.environment)
        } catch {
            write("bouncer verify: root certificate: \(error)\n", to: .standardError)
            return nil
        }
    }

    /// Verifies and renders `{"kind", "verification": {...}, "payload": {...}}`, nested JWS decoded.
    static func verify(_ jws: String, kind: SignedDataKind, verifier: SignedDataVerifier, policy: VerificationPolicy,
                       at date: Date?) throws(VerificationError) -> JSONValue {
        switch kind {
        case .notification:
            let result = try verifier.verifyNotification(jws, policy: policy, at: date)
            var payload = parse(result.payloadJSON)
            if var data = payload["data"]?.objectValue {
                if let nested = result.transaction { data["signedTransactionInfo"] = render(.transaction, nested.payloadJSON, nested.details) }
                if let nested = result.renewalInfo { data["signedRenewalInfo"] = render(.renewalInfo, nested.payloadJSON, nested.details) }
                payload["data"] = .object(data)
            }
            if var appData = payload["appData"]?.objectValue, let nested = result.appTransaction {
                appData["signedAppTransactionInfo"] = render(.appTransaction, nested.payloadJSON, nested.details)
                payload["appData"] = .object(appData)
            }
            return render(kind, payload: .object(payload), result.details)
        case .renewalInfo:
            let result = try verifier.verifyRenewalInfo(jws, policy: policy, at: date)
            return render(kind, result.payloadJSON, result.details)
        case .appTransaction:
            let result = try verifier.verifyAppTransaction(jws, policy: policy, at: date)
            return render(kind, result.payloadJSON, result.details)
        default:
            let result = try verifier.verifyTransaction(jws, policy: policy, at: date)
            return render(kind, result.payloadJSON, result.details)
        }
    }

    private static func parse(_ bytes: [UInt8]) -> JSONObject {
        (try? JSONParser.parse(bytes))?.objectValue ?? JSONObject()
    }

    private static func render(_ kind: SignedDataKind, _ payloadJSON: [UInt8], _ details: VerificationDetails) -> JSONValue {
        render(kind, payload: .object(parse(payloadJSON)), details)
    }

    private static func render(_ kind: SignedDataKind, payload: JSONValue, _ details: VerificationDetails) -> JSONValue {
        var verification = JSONObject()
        verification["effectiveDate"] = .string(iso8601(details.effectiveDate))
        verification["effectiveDateSource"] = .string(details.effectiveDateSource.rawValue)
        verification["environment"] = .string(details.environment.rawValue)
        verification["chain"] = .string(details.isXcodeSigned ? "Xcode self-signed (not checked)" : "trusted root")
        var object = JSONObject()
        object["kind"] = .string(kind.rawValue)
        object["verification"] = .object(verification)
        object["payload"] = payload
        return .object(object)
    }

    private static func iso8601(_ date: Date) -> String {
        RFC3339.string(secondsSince1970: date.timeIntervalSince1970)
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var options = Options()
        var index = 0
        func value(_ flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw .message("\(flag) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help": throw .help
            case "--root": options.roots.append(try value(argument))
            case "--bundle-id": options.bundleId = try value(argument)
            case "--environment":
                let name = try value(argument)
                let known: [String: AppStoreEnvironment] = ["production": .production, "sandbox": .sandbox, "xcode": .xcode, "localtesting": .localTesting]
                guard let environment = known[name.lowercased()] else { throw .message("unknown environment \(name)") }
                options.environments.insert(environment)
            case "--app-apple-id":
                let text = try value(argument)
                guard let id = Int64(text) else { throw .message("--app-apple-id must be an integer") }
                options.appAppleId = id
            case "--at":
                let text = try value(argument)
                if text == "signed" || text == "created" {
                    options.at = nil
                } else if text == "now" {
                    options.at = Date()
                } else if let seconds = Int64(text) {
                    options.at = Date(timeIntervalSince1970: TimeInterval(seconds))
                } else if let date = AdminTimestamp.parse(text) {
                    options.at = date
                } else {
                    throw .message("--at takes an ISO 8601 date, Unix seconds, \"now\" or \"signed\"")
                }
            case "--allow-xcode": options.allowXcode = true
            case "--receipt": options.receipt = try value(argument)
            case "--type":
                let text = try value(argument)
                let kinds: [String: SignedDataKind] = ["transaction": .transaction, "renewalinfo": .renewalInfo, "renewal": .renewalInfo,
                                                       "notification": .notification, "apptransaction": .appTransaction]
                guard let kind = kinds[text.lowercased()] else { throw .message("unknown --type \(text)") }
                options.kind = kind
            default:
                if argument.hasPrefix("--") { throw .message("unknown option \(argument)") }
                guard options.input == nil else { throw .message("more than one input given") }
                options.input = argument
            }
            index += 1
        }
        return options
    }

    enum InputResult { case success(String), failure(String) }

    /// The JWS from an argument, a file, or stdin; a JSON body is unwrapped to its signed field.
    static func readInput(_ argument: String?) -> InputResult {
        var text: String
        if let argument, argument != "-" {
            if FileManager.default.fileExists(atPath: argument) {
                guard let data = FileManager.default.contents(atPath: argument) else { return .failure("cannot read \(argument)") }
                text = String(decoding: data, as: UTF8.self)
            } else {
                text = argument
            }
        } else {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            text = String(decoding: data, as: UTF8.self)
        }
        text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") {
            guard let object = (try? JSONParser.parse(text))?.objectValue else { return .failure("input looks like JSON but does not parse") }
            for key in ["signedPayload", "signedTransactionInfo", "signedRenewalInfo", "signedAppTransactionInfo"] {
                if let jws = object[key]?.stringValue { return .success(jws) }
            }
            return .failure("JSON input has no signedPayload / signedTransactionInfo / signedRenewalInfo / signedAppTransactionInfo")
        }
        guard !text.isEmpty else { return .failure("no JWS given") }
        return .success(text)
    }

    private static func write(_ text: String, to handle: FileHandle) {
        handle.write(Data(text.utf8))
    }
}
