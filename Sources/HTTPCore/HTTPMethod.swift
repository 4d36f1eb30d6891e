public import Primitives

/// An HTTP request method (RFC 9110 §9); the router serves the seven below and answers other tokens 405/404.
public typealias HTTPMethod = OpenValue<HTTPMethodTag, String>
/// Tells `HTTPMethod` apart from the other open vocabularies.
public enum HTTPMethodTag {}

extension HTTPMethod {
    /// `GET`.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `HEAD`: routed to the `GET` handler with the body dropped (RFC 9110 §9.3.2).
    public static let head = HTTPMethod(rawValue: "HEAD")
    /// `POST`.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PUT`.
    public static let put = HTTPMethod(rawValue: "PUT")
    /// `PATCH`.
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`.
    public static let delete = HTTPMethod(rawValue: "DELETE")
    /// `OPTIONS`.
    public static let options = HTTPMethod(rawValue: "OPTIONS")


    /// Maps wire bytes to a supported method without allocating for the common ones.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPMethod? {
        switch bytes.count {
        case 3:
            if bytes[0] == 0x47, bytes[1] == 0x45, bytes[2] == 0x54 { return .get }
            if bytes[0] == 0x50, bytes[1] == 0x55, bytes[2] == 0x54 { return .put }
        case 4:
            if bytes[0] == 0x50, bytes[1] == 0x4F, bytes[2] == 0x53, bytes[3] == 0x54 { return .post }
            if bytes[0] == 0x48, bytes[1] == 0x45, bytes[2] == 0x41, bytes[3] == 0x44 { return .head }
        case 5:
            if String(decoding: bytes, as: UTF8.self) == "PATCH" { return .patch }
        case 6:
            if String(decoding: bytes, as: UTF8.self) == "DELETE" { return .delete }
        case 7:
            if String(decoding: bytes, as: UTF8.self) == "OPTIONS" { return .options }
        default:
            break
        }
        // Any other token (TRACE, PROPFIND, …) is a method we don't route: the router answers 405 with `Allow` on
        // a known path, 404 elsewhere (RFC 9110 §15.5.6). Only absurdly long tokens are refused with 501.
        guard bytes.count <= maxUnknownMethodLength else { return nil }
        return HTTPMethod(rawValue: String(decoding: bytes, as: UTF8.self))
    }

    /// The longest unregistered method token accepted (IANA's longest registered method is 17 bytes).
    static let maxUnknownMethodLength = 20
}
