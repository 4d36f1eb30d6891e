public import Crypto

/// Apple's rules for a signing chain's certificates beyond RFC 5280 path validation, with one author for the App
/// Store's JWS (`SignedDataVerifier`) and the StoreKit 1 receipt's PKCS#7 signer (AppReceipt's `ReceiptVerifier`):
/// the leaf carries Apple's receipt-signing marker and signs as an end entity, the intermediate is Apple's WWDR.
public enum AppleSigningChain {
    /// Apple's receipt-signing marker, on the leaf (DER content octets of 1.2.840.113635.100.6.11.1).
    static let leafMarkerOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x06, 0x0B, 0x01]
    /// Apple's WWDR intermediate marker (1.2.840.113635.100.6.2.1).
    static let intermediateMarkerOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x06, 0x02, 0x01]

    /// The first of Apple's rules that `leaf` and `intermediate` break, in words that call the leaf `leafName`
    /// (`leaf`, `signer`): the reason of the verifier's `oid` step. Nil when they are Apple's signing pair.
    public static func problem(leaf: Certificate, intermediate: Certificate, leafName: String) -> String? {
        if !leaf.hasNonCriticalExtension(oidContent: leafMarkerOID) {
            return "\(leafName) certificate lacks Apple's receipt-signing marker OID 1.2.840.113635.100.6.11.1"
        }
        if !intermediate.hasNonCriticalExtension(oidContent: intermediateMarkerOID) {
            return "intermediate certificate lacks Apple's WWDR marker OID 1.2.840.113635.100.6.2.1"
        }
        if leaf.isCA { return "\(leafName) certificate is a CA certificate" }
        if !leaf.allowsDigitalSignature { return "\(leafName) certificate keyUsage does not allow digitalSignature" }
        return nil
    }
}
