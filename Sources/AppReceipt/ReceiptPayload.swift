import AppStoreJWS

/// The decoded content of a StoreKit 1 app receipt: Apple's `SET OF ReceiptAttribute` where each attribute is
/// `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }` and `value` holds a DER element (or raw
/// bytes for the opaque value and hash). Field numbers are Apple's "Receipt Fields" table.
public struct AppReceiptPayload: Sendable, Equatable {
    /// Field 0, Apple's receipt type: `Production`, `ProductionSandbox`, `Xcode` (and the VPP variants). Kept raw.
    public var receiptType: String
    /// Field 2, the app's bundle identifier.
    public var bundleId: String
    /// Field 3, the app version (CFBundleVersion on iOS: the build number) the receipt was issued for.
    public var applicationVersion: String
    /// Field 4, the opaque value Apple hashes with the device identifier. Kept so a client-side device check
    /// (SHA-1 of device GUID ‖ opaque value ‖ bundle id DER) can be reproduced; the server has no device GUID.
    public var opaqueValue: [UInt8]
    /// Field 5, that SHA-1 hash (20 bytes). Kept, not checked: it needs the device GUID.
    public var sha1Hash: [UInt8]
    /// Field 5's sibling: the DER of field 2 exactly as signed (bytes the device hash covers).
    public var bundleIdDER: [UInt8]
    /// Field 12, when the App Store created the receipt: the date the signer chain is judged at.
    public var creationDate: ReceiptDate
    /// Field 19, the version of the app the customer originally purchased.
    public var originalApplicationVersion: String?
    /// Field 21, when the receipt expires (Volume Purchase Program and Xcode receipts only).
    public var expirationDate: ReceiptDate?
    /// Field 17, every in-app purchase record, in receipt order.
    public var inAppPurchases: [InAppPurchaseRecord]
    /// Every attribute this decoder does not name (Apple's private fields and future ones), kept raw.
    public var otherAttributes: [ReceiptAttribute]
}

/// One in-app purchase record (field 17 of the receipt; fields 1701… inside).
public struct InAppPurchaseRecord: Sendable, Equatable {
    /// 1701, the number of items purchased.
    public var quantity: Int64?
    /// 1702, the product identifier.
    public var productId: String
    /// 1703, the transaction identifier.
    public var transactionId: String
    /// 1705, the original transaction identifier (restores and renewals point at the first purchase).
    public var originalTransactionId: String?
    /// 1704, the purchase date.
    public var purchaseDate: ReceiptDate?
    /// 1706, the original purchase date.
    public var originalPurchaseDate: ReceiptDate?
    /// 1708, the subscription expiration date (auto-renewable subscriptions only).
    public var expiresDate: ReceiptDate?
    /// 1711, the web order line item id (auto-renewable subscriptions only).
    public var webOrderLineItemId: Int64?
    /// 1712, when Apple refunded or revoked the purchase.
    public var cancellationDate: ReceiptDate?
    /// Apple's JSON `cancellation_reason` (0 other, 1 an issue in the app). Apple publishes no ASN.1 field number
    /// for it, so a receipt never sets it; a field Apple adds later stays in `otherAttributes` until named.
    public var cancellationReason: Int64?
    /// 1719, whether the subscription was in an introductory-price period.
    public var isInIntroOfferPeriod: Bool?
    /// 1713, whether the subscription was in a free-trial period.
    public var isTrialPeriod: Bool?
    /// 1721, the promotional offer identifier.
    public var promotionalOfferId: String?
    /// Every attribute this decoder does not name (e.g. 1707, 1722), kept raw.
    public var otherAttributes: [ReceiptAttribute]
}

/// An attribute kept undecoded: its type number, version and the value's bytes.
public struct ReceiptAttribute: Sendable, Equatable {
    /// Apple's field number.
    public var type: Int64
    /// The attribute's version (Apple: "not used").
    public var version: Int64
    /// The OCTET STRING's content.
    public var value: [UInt8]
}

/// Decodes a receipt payload with `DERReader`; every malformation is a `DERError` naming the field.
enum ReceiptPayloadDecoder {
    /// The attribute sets' element count limit: bounded by the input size already, this only caps a pathological
    /// receipt of tiny attributes (long purchase histories hold a few thousand records).
    static let maxAttributes = 200_000

    static func decode(_ bytes: [UInt8]) throws(DERError) -> AppReceiptPayload {
        var top = DERReader(bytes)
        let set = try top.next(tag: DERTag.set, "receipt payload")
        guard top.isAtEnd else { throw DERError("bytes after the receipt's attribute set") }
        var reader = top.reader(for: set)

        var receiptType: String?, bundleId: String?, applicationVersion: String?, opaque: [UInt8]?, hash: [UInt8]?
        var bundleIdDER: [UInt8] = []
        var creation: ReceiptDate?, originalVersion: String?, expiration: ReceiptDate?
        var inApp: [InAppPurchaseRecord] = [], others: [ReceiptAttribute] = []
        var seen: UInt64 = 0   // bit n: field n (0…63) already read; only singleton fields are checked
        var count = 0
        while !reader.isAtEnd {
            count += 1
            guard count <= maxAttributes else { throw DERError("more than \(maxAttributes) receipt attributes") }
            let attribute = try readAttribute(&reader)
            if knownReceiptField(attribute.type) {
                let bit: UInt64 = 1 << UInt64(attribute.type)   // known fields are < 64
                guard seen & bit == 0 else { throw DERError("field \(attribute.type) appears twice") }
                seen |= bit
            }
            let value = attribute.value
            switch attribute.type {
            case 0: receiptType = try string(bytes, value, "receipt type (0)")
            case 2:
                bundleId = try string(bytes, value, "bundle id (2)")
                bundleIdDER = Array(bytes[value])
            case 3: applicationVersion = try string(bytes, value, "app version (3)")
            case 4: opaque = Array(bytes[value])
            case 5: hash = Array(bytes[value])
            case 12: creation = try requiredDate(bytes, value, "creation date (12)", field: "receipt_creation_date")
            case 17:
                do {
                    inApp.append(try record(bytes, value))
                } catch {
                    throw DERError(error.reason, field: error.field.map { "in_app[\(inApp.count)].\($0)" })
                }
            case 19: originalVersion = try string(bytes, value, "original application version (19)")
            case 21: expiration = try optionalDate(bytes, value, "expiration date (21)", field: "expiration_date")
            default: others.append(ReceiptAttribute(type: attribute.type, version: attribute.version, value: Array(bytes[value])))
            }
        }
        guard let receiptType else { throw DERError("receipt type (0) is missing") }
        guard let bundleId else { throw DERError("bundle id (2) is missing") }
        guard let creation else { throw DERError("creation date (12) is missing") }
        return AppReceiptPayload(
            receiptType: receiptType, bundleId: bundleId, applicationVersion: applicationVersion ?? "",
            opaqueValue: opaque ?? [], sha1Hash: hash ?? [], bundleIdDER: bundleIdDER, creationDate: creation,
            originalApplicationVersion: originalVersion, expirationDate: expiration,
            inAppPurchases: inApp, otherAttributes: others)
    }

    private static func knownReceiptField(_ type: Int64) -> Bool {
        switch type { case 0, 2, 3, 4, 5, 12, 19, 21: return true; default: return false }
    }
    private static func knownRecordField(_ type: Int64) -> Bool {
        switch type { case 1701...1706, 1708, 1711, 1712, 1713, 1719, 1721: return true; default: return false }
    }

    private struct Attribute { var type: Int64; var version: Int64; var value: Range<Int> }

    private static func readAttribute(_ reader: inout DERReader, _ what: String = "receipt attribute") throws(DERError) -> Attribute {
        let sequence = try reader.next(tag: DERTag.sequence, what)
        var fields = reader.reader(for: sequence)
        let type = try fields.integer(fields.next())
        let version = try fields.integer(fields.next())
        let value = try fields.next(tag: DERTag.octetString, "attribute \(type) value")
        guard fields.isAtEnd else { throw DERError("attribute \(type) has extra elements") }
        return Attribute(type: type, version: version, value: value.content)
    }

    /// The single DER element an attribute value holds.
    private static func element(_ bytes: [UInt8], _ range: Range<Int>, _ what: String) throws(DERError) -> (DERReader, DERElement) {
        var reader = DERReader(bytes, range: range)
        let element: DERElement
        do { element = try reader.next() } catch { throw DERError("\(what): \(error.reason)") }
        guard reader.isAtEnd else { throw DERError("\(what): bytes after the value") }
        return (reader, element)
    }

    private static func string(_ bytes: [UInt8], _ range: Range<Int>, _ what: String) throws(DERError) -> String {
        let (reader, element) = try element(bytes, range, what)
        do { return try reader.string(element) } catch { throw DERError("\(what): \(error.reason)") }
    }

    private static func integer(_ bytes: [UInt8], _ range: Range<Int>, _ what: String) throws(DERError) -> Int64 {
        let (reader, element) = try element(bytes, range, what)
        do { return try reader.integer(element) } catch { throw DERError("\(what): \(error.reason)") }
    }

    /// An IA5String date; an empty string means "absent" (Apple writes "" for dates that do not apply). Only instants
    /// of `SignedDateRange`, as for a JWS: a four-digit year still allows year 0000.
    private static func optionalDate(_ bytes: [UInt8], _ range: Range<Int>, _ what: String,
                                     field: String) throws(DERError) -> ReceiptDate? {
        let text = try string(bytes, range, what)
        guard !text.isEmpty else { return nil }
        guard let date = ReceiptDate(text) else { throw DERError("\(what): not an RFC 3339 UTC date", field: field) }
        guard SignedDateRange.contains(date.milliseconds) else {
            throw DERError("\(what): \(text) is outside \(SignedDateRange.text)", field: field)
        }
        return date
    }

    private static func requiredDate(_ bytes: [UInt8], _ range: Range<Int>, _ what: String,
                                     field: String) throws(DERError) -> ReceiptDate {
        guard let date = try optionalDate(bytes, range, what, field: field) else { throw DERError("\(what) is empty") }
        return date
    }

    private static func flag(_ bytes: [UInt8], _ range: Range<Int>, _ what: String) throws(DERError) -> Bool {
        switch try integer(bytes, range, what) {
        case 0: return false
        case 1: return true
        default: throw DERError("\(what): expected 0 or 1")
        }
    }

    private static func record(_ bytes: [UInt8], _ range: Range<Int>) throws(DERError) -> InAppPurchaseRecord {
        let (outer, set) = try element(bytes, range, "in-app record (17)")
        guard set.tag == DERTag.set else { throw DERError("in-app record (17): expected a SET") }
        var reader = outer.reader(for: set)
        var record = InAppPurchaseRecord(productId: "", transactionId: "", otherAttributes: [])
        var productId: String?, transactionId: String?
        var seen: UInt64 = 0   // bit n: field 1700 + n already read (known fields only)
        var count = 0
        while !reader.isAtEnd {
            count += 1
            guard count <= maxAttributes else { throw DERError("more than \(maxAttributes) in-app attributes") }
            let attribute = try readAttribute(&reader, "in-app record (17) attribute")
            if (1701...1721).contains(attribute.type) {
                let bit: UInt64 = 1 << UInt64(attribute.type - 1700)
                guard seen & bit == 0 || !knownRecordField(attribute.type) else {
                    throw DERError("in-app field \(attribute.type) appears twice")
                }
                seen |= bit
            }
            let v = attribute.value
            switch attribute.type {
            case 1701: record.quantity = try integer(bytes, v, "quantity (1701)")
            case 1702: productId = try string(bytes, v, "product id (1702)")
            case 1703: transactionId = try string(bytes, v, "transaction id (1703)")
            case 1704: record.purchaseDate = try optionalDate(bytes, v, "purchase date (1704)", field: "purchase_date")
            case 1705: record.originalTransactionId = try string(bytes, v, "original transaction id (1705)")
            case 1706:
                record.originalPurchaseDate = try optionalDate(bytes, v, "original purchase date (1706)",
                                                               field: "original_purchase_date")
            case 1708: record.expiresDate = try optionalDate(bytes, v, "expires date (1708)", field: "expires_date")
            case 1711: record.webOrderLineItemId = try integer(bytes, v, "web order line item id (1711)")
            case 1712:
                record.cancellationDate = try optionalDate(bytes, v, "cancellation date (1712)", field: "cancellation_date")
            case 1713: record.isTrialPeriod = try flag(bytes, v, "is trial period (1713)")
            case 1719: record.isInIntroOfferPeriod = try flag(bytes, v, "is in intro offer period (1719)")
            case 1721:
                let text = try string(bytes, v, "promotional offer id (1721)")
                record.promotionalOfferId = text.isEmpty ? nil : text
            default:
                record.otherAttributes.append(ReceiptAttribute(type: attribute.type, version: attribute.version, value: Array(bytes[v])))
            }
        }
        guard let productId, !productId.isEmpty else { throw DERError("in-app record without a product id (1702)") }
        guard let transactionId, !transactionId.isEmpty else { throw DERError("in-app record without a transaction id (1703)") }
        record.productId = productId
        record.transactionId = transactionId
        if record.originalTransactionId?.isEmpty == true { record.originalTransactionId = nil }
        return record
    }
}
