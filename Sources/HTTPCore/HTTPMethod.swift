/// An HTTP request method (RFC 9110 §9); the server accepts the seven below and answers others 501.
public struct HTTPMethod: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The method token as sent on the wire, e.g. `"GET"`.
    public let rawValue: String

    /// Wraps any method token; the parser only produces the supported ones.
    public init(rawValue: String) { self.rawValue = rawValue }

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

    /// The token, e.g. `GET`.
    public var description: String { rawValue }

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
        return nil
    }
}
