import AppReceipt
import AppStoreJWS
import Foundation
import JSON
import Primitives

/// `bouncer verify --receipt FILE`: verifies a StoreKit 1 app receipt (base64 or DER) locally and prints it as JSON
/// with the verdict. Valid: the JSON on stdout, exit 0. Rejected: `CODE (step): reason` on stderr, exit 1, and on
/// stdout the same JSON with `"verdict": {"valid": false, …}` and the payload decoded *unverified* when it could be
/// read (so an expired or foreign receipt can still be inspected). Usage errors exit 2.
public enum VerifyReceiptCommand {
    /// Runs with the options `VerifyCommand` parsed; `path` is a file or `-` for stdin.
    static func run(path: String, options: VerifyCommand.Options) -> Int32 {
        let bytes: [UInt8]
        if path == "-" {
            bytes = [UInt8](FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let data = FileManager.default.contents(atPath: path) else {
                write("bouncer verify: cannot read \(path)\n", to: .standardError)
                return 2
            }
            bytes = [UInt8](data)
        }

        let verifier: ReceiptVerifier
        if options.roots.isEmpty {
            verifier = .apple
        } else {
            var ders: [[UInt8]] = []
            for root in options.roots {
                guard let der = certificateDER(atPath: root) else {
                    write("bouncer verify: root certificate: \(root): neither PEM nor DER\n", to: .standardError)
                    return 2
                }
                ders.append(der)
            }
            guard let custom = ReceiptVerifier(rootDERs: ders) else {
                write("bouncer verify: root certificate: not an X.509 certificate\n", to: .standardError)
                return 2
            }
            verifier = custom
        }

        var bundleId = options.bundleId ?? ""
        var environments = options.environments
        if environments.isEmpty { environments = [.production, .sandbox] }
        let allowXcode = options.allowXcode || environments.contains(.xcode)   // as for a JWS: Xcode also needs Sandbox

        let der: [UInt8]
        do {
            der = try ReceiptVerifier.der(fromFileBytes: bytes)
        } catch {
            return reject(error, payload: nil)
        }
        let unverified = ReceiptVerifier.decodeUnverified(der: der)
        if options.bundleId == nil {
            bundleId = unverified?.bundleId ?? ""
            write("bouncer verify: warning: no --bundle-id given; bundle id not checked\n", to: .standardError)
        }
        let policy = VerificationPolicy(bundleId: bundleId, environments: environments, allowXcode: allowXcode)
        do {
            let verified = try verifier.verify(der: der, policy: policy, at: options.at)
            var object = JSONObject()
            object["kind"] = "receipt"
            object["verdict"] = .object(JSONObject([("valid", .bool(true))]))
            object["verification"] = .object(verification(verified))
            object["payload"] = .object(render(verified.payload))
            write(JSONValue.object(object).serializedString(pretty: true) + "\n", to: .standardOutput)
            return 0
        } catch {
            return reject(error, payload: unverified)
        }
    }

    private static func reject(_ error: VerificationError, payload: AppReceiptPayload?) -> Int32 {
        var object = JSONObject()
        object["kind"] = "receipt"
        object["verdict"] = .object(JSONObject([
            ("valid", .bool(false)), ("code", .string(error.code.rawValue)), ("step", .string(error.step.rawValue)),
            ("reason", .string(error.reason)),
        ]))
        if let payload {
            object["payloadVerified"] = .bool(false)
            object["payload"] = .object(render(payload))
        }
        write(JSONValue.object(object).serializedString(pretty: true) + "\n", to: .standardOutput)
        write("\(error.description)\n", to: .standardError)
        if !error.debugDetail.isEmpty { write("  detail: \(error.debugDetail)\n", to: .standardError) }
        return 1
    }

    private static func verification(_ verified: VerifiedReceipt) -> JSONObject {
        var object = JSONObject()
        object["effectiveDate"] = .string(iso8601(verified.effectiveDate))
        object["effectiveDateSource"] = .string(verified.effectiveDateSource.rawValue)
        object["environment"] = .string(verified.environment.rawValue)
        object["digestAlgorithm"] = .string(verified.digestAlgorithm)
        object["chain"] = .string(verified.isXcodeSigned ? "Xcode self-signed (not checked)" : "trusted root")
        object["signer"] = .string(verified.signerSubject)
        object["certificates"] = .array(verified.chainSubjects.map { .string($0) })
        return object
    }

    /// The payload under Apple's `verifyReceipt` JSON names (`receipt.in_app[]`), so a team moving off it reads
    /// familiar keys; dates as the receipt's RFC 3339 text plus `_ms`, opaque bytes in base64.
    static func render(_ p: AppReceiptPayload) -> JSONObject {
        var object = JSONObject()
        object["receipt_type"] = .string(p.receiptType)
        object["bundle_id"] = .string(p.bundleId)
        object["application_version"] = .string(p.applicationVersion)
        object["original_application_version"] = p.originalApplicationVersion.map { .string($0) } ?? .null
        date(p.creationDate, "receipt_creation_date", into: &object)
        date(p.expirationDate, "expiration_date", into: &object)
        object["opaque_value"] = .string(Data(p.opaqueValue).base64EncodedString())
        object["sha1_hash"] = .string(Data(p.sha1Hash).base64EncodedString())
        object["in_app_count"] = JSONValue(p.inAppPurchases.count)
        object["in_app"] = .array(p.inAppPurchases.map { .object(render($0)) })
        object["other_attributes"] = others(p.otherAttributes)
        return object
    }

    static func render(_ r: InAppPurchaseRecord) -> JSONObject {
        var object = JSONObject()
        object["quantity"] = r.quantity.map { JSONValue($0) } ?? .null
        object["product_id"] = .string(r.productId)
        object["transaction_id"] = .string(r.transactionId)
        object["original_transaction_id"] = r.originalTransactionId.map { .string($0) } ?? .null
        date(r.purchaseDate, "purchase_date", into: &object)
        date(r.originalPurchaseDate, "original_purchase_date", into: &object)
        date(r.expiresDate, "expires_date", into: &object)
        object["web_order_line_item_id"] = r.webOrderLineItemId.map { .string(String($0)) } ?? .null
        date(r.cancellationDate, "cancellation_date", into: &object)
        object["cancellation_reason"] = r.cancellationReason.map { JSONValue($0) } ?? .null
        object["is_trial_period"] = r.isTrialPeriod.map { .bool($0) } ?? .null
        object["is_in_intro_offer_period"] = r.isInIntroOfferPeriod.map { .bool($0) } ?? .null
        object["promotional_offer_id"] = r.promotionalOfferId.map { .string($0) } ?? .null
        object["other_attributes"] = others(r.otherAttributes)
        return object
    }

    private static func date(_ value: ReceiptDate?, _ key: String, into object: inout JSONObject) {
        object[key] = value.map { .string($0.text) } ?? .null
        object[key + "_ms"] = value.map { JSONValue($0.milliseconds) } ?? .null
    }

    private static func others(_ attributes: [ReceiptAttribute]) -> JSONValue {
        .array(attributes.map { attribute in
            .object(JSONObject([("type", JSONValue(attribute.type)), ("version", JSONValue(attribute.version)),
                                ("value", .string(Data(attribute.value).base64EncodedString()))]))
        })
    }

    /// One certificate from a DER or PEM file (the first CERTIFICATE block).
    public static func certificateDER(atPath path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let begin = text.range(of: "-----BEGIN CERTIFICATE-----") else { return [UInt8](data) }
        guard let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<text.endIndex) else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map { [UInt8]($0) }
    }

    private static func iso8601(_ date: Date) -> String {
        RFC3339.string(secondsSince1970: date.timeIntervalSince1970)
    }

    private static func write(_ text: String, to handle: FileHandle) {
        handle.write(Data(text.utf8))
    }
}
