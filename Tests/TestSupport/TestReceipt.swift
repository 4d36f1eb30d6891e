public import Foundation

/// A synthetic StoreKit 1 app receipt: the payload is built here as DER (Apple's `SET OF ReceiptAttribute`, each
/// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`, in-app records (17) being such SETs themselves)
/// and signed as PKCS#7 SignedData by the test PKI (`openssl cms -sign`), so tests can post receipts whose records
/// are active *now*, which no real receipt of Tests/Fixtures/apple/test-vectors is any more.
///
/// Field numbers and encodings are Apple's "Receipt Fields" table: strings as UTF8String, dates as IA5String in
/// RFC 3339 UTC (`2025-01-02T03:04:05Z`), counts and flags as INTEGER. Attributes are written in the order given,
/// like Apple's receipts (which are not DER-sorted either).
public struct TestReceipt: Sendable {
    /// One in-app purchase record (field 17).
    public struct InApp: Sendable {
        /// 1702.
        public var productId: String
        /// 1703.
        public var transactionId: String
        /// 1705 (omitted when nil).
        public var originalTransactionId: String?
        /// 1701.
        public var quantity: Int64 = 1
        /// 1704 (whole seconds are written).
        public var purchaseDate: Date
        /// 1706 (omitted when nil).
        public var originalPurchaseDate: Date?
        /// 1708: present makes the record an auto-renewable subscription (`ReceiptRules.productType`).
        public var expiresDate: Date?
        /// 1711.
        public var webOrderLineItemId: Int64?
        /// 1712: a refund or revocation.
        public var cancellationDate: Date?
        /// 1713.
        public var isTrialPeriod: Bool?
        /// 1719.
        public var isInIntroOfferPeriod: Bool?
        /// Date attributes written with this exact text instead (1704, 1706, 1708, 1712), present or not: dates no
        /// `Date` can say (year 0000, 10000, garbage) as a forger would sign them.
        public var rawDates: [Int64: String] = [:]

        /// A record; the original transaction id defaults to the transaction id.
        public init(productId: String, transactionId: String, originalTransactionId: String? = nil, purchaseDate: Date,
                    expiresDate: Date? = nil, cancellationDate: Date? = nil) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId ?? transactionId
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.cancellationDate = cancellationDate
        }
    }

    /// Field 0: `ProductionSandbox` (Sandbox), `Production`, `Xcode`…
    public var receiptType = "ProductionSandbox"
    /// Field 2.
    public var bundleId: String
    /// Field 3.
    public var applicationVersion = "42"
    /// Field 19.
    public var originalApplicationVersion = "1.0"
    /// Field 12: the instant the verifier judges the signer chain at and every record's `signedDate`.
    public var creationDate: Date
    /// Field 17, in order.
    public var inApp: [InApp]
    /// Date attributes written with this exact text instead (12 creation, 21 expiration), present or not.
    public var rawDates: [Int64: String] = [:]

    /// A Sandbox receipt for `bundleId` created at `creationDate`.
    public init(bundleId: String, creationDate: Date = Date(), inApp: [InApp] = []) {
        self.bundleId = bundleId
        self.creationDate = creationDate
        self.inApp = inApp
    }

    /// Apple's receipt date text, `yyyy-MM-dd'T'HH:mm:ss'Z'` (UTC, whole seconds: the fraction is dropped).
    public static func dateText(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    /// `date` truncated to whole seconds: what a receipt can carry, hence what the server answers.
    public static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }

    // MARK: Payload

    /// The payload's DER: the content PKCS#7 signs.
    public var payloadDER: [UInt8] {
        var attributes: [[UInt8]] = [
            Self.attribute(0, DER.utf8(receiptType)),
            Self.attribute(2, DER.utf8(bundleId)),
            Self.attribute(3, DER.utf8(applicationVersion)),
            // 4 and 5 (opaque value, SHA-1 device hash) are kept unchecked by the server: fixed bytes do.
            Self.attribute(4, Array("opaque-value".utf8)),
            Self.attribute(5, [UInt8](repeating: 0x5A, count: 20)),
            Self.attribute(12, DER.ia5(rawDates[12] ?? Self.dateText(creationDate))),
            Self.attribute(19, DER.utf8(originalApplicationVersion)),
        ]
        if let expiration = rawDates[21] { attributes.append(Self.attribute(21, DER.ia5(expiration))) }
        for record in inApp { attributes.append(Self.attribute(17, Self.record(record))) }
        return DER.set(Array(attributes.joined()))
    }

    private static func record(_ r: InApp) -> [UInt8] {
        var fields: [[UInt8]] = [
            attribute(1701, DER.integer(r.quantity)),
            attribute(1702, DER.utf8(r.productId)),
            attribute(1703, DER.utf8(r.transactionId)),
            attribute(1704, DER.ia5(r.rawDates[1704] ?? dateText(r.purchaseDate))),
        ]
        if let original = r.originalTransactionId { fields.append(attribute(1705, DER.utf8(original))) }
        if let date = r.rawDates[1706] ?? r.originalPurchaseDate.map(dateText) { fields.append(attribute(1706, DER.ia5(date))) }
        // Apple writes an empty date for "does not apply"; the decoder reads "" as absent.
        fields.append(attribute(1708, DER.ia5(r.rawDates[1708] ?? r.expiresDate.map(dateText) ?? "")))
        if let id = r.webOrderLineItemId { fields.append(attribute(1711, DER.integer(id))) }
        if let date = r.rawDates[1712] ?? r.cancellationDate.map(dateText) { fields.append(attribute(1712, DER.ia5(date))) }
        if let flag = r.isTrialPeriod { fields.append(attribute(1713, DER.integer(flag ? 1 : 0))) }
        if let flag = r.isInIntroOfferPeriod { fields.append(attribute(1719, DER.integer(flag ? 1 : 0))) }
        return DER.set(Array(fields.joined()))
    }

    /// `SEQUENCE { type, version 1, OCTET STRING value }` (`value`: a DER element, or raw bytes for fields 4 and 5).
    private static func attribute(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
        DER.sequence(DER.integer(type) + DER.integer(1) + DER.octetString(value))
    }

    // MARK: Signing

    /// The receipt as PKCS#7 SignedData DER, signed by `signer`/`key` with `certificates` added (default: the test
    /// PKI's receipt-signing leaf and its intermediate, marker OIDs included), through `openssl cms -sign`.
    public func signedDER(signer: String = TestPKI.leaf, key: String = TestPKI.file("leaf.key"),
                          certificates: [String] = [TestPKI.intermediate], digest: String = "sha256") throws -> [UInt8] {
        let directory = NSTemporaryDirectory() + "bouncer-receipt-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let payload = directory + "/payload.der", output = directory + "/receipt.der"
        try Data(payloadDER).write(to: URL(fileURLWithPath: payload))
        var arguments = ["openssl", "cms", "-sign", "-binary", "-nodetach", "-outform", "DER", "-md", digest,
                         "-in", payload, "-signer", signer, "-inkey", key, "-out", output]
        for certificate in certificates { arguments += ["-certfile", certificate] }
        try Subprocess.run(arguments, in: directory)
        return Array(try Data(contentsOf: URL(fileURLWithPath: output)))
    }

    /// `signedDER` as standard base64: the `receipt_data` a StoreKit 1 app posts.
    public func base64(signer: String = TestPKI.leaf, key: String = TestPKI.file("leaf.key"),
                       certificates: [String] = [TestPKI.intermediate]) throws -> String {
        Data(try signedDER(signer: signer, key: key, certificates: certificates)).base64EncodedString()
    }

    // MARK: DER

    /// The few DER encoders a receipt needs (definite lengths, X.690 §8.1.3).
    public enum DER {
        /// Tag, definite length, content.
        public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            var out: [UInt8] = [tag]
            if content.count < 0x80 {
                out.append(UInt8(content.count))
            } else {
                var length: [UInt8] = []
                var n = content.count
                while n > 0 {
                    length.insert(UInt8(n & 0xFF), at: 0)
                    n >>= 8
                }
                out.append(0x80 | UInt8(length.count))
                out += length
            }
            return out + content
        }

        /// INTEGER: minimal two's complement (X.690 §8.3).
        public static func integer(_ value: Int64) -> [UInt8] {
            var bytes = withUnsafeBytes(of: value.bigEndian, Array.init)
            // Drop a leading byte while the next one carries the same sign.
            while bytes.count > 1,
                  (bytes[0] == 0x00 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0) {
                bytes.removeFirst()
            }
            return tlv(0x02, bytes)
        }

        /// OCTET STRING.
        public static func octetString(_ content: [UInt8]) -> [UInt8] { tlv(0x04, content) }
        /// UTF8String.
        public static func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
        /// IA5String.
        public static func ia5(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
        /// SEQUENCE of already-encoded elements.
        public static func sequence(_ content: [UInt8]) -> [UInt8] { tlv(0x30, content) }
        /// SET of already-encoded elements, in the given order.
        public static func set(_ content: [UInt8]) -> [UInt8] { tlv(0x31, content) }
    }
}
