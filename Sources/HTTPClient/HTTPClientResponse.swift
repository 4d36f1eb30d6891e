/// A complete HTTP response.
public struct HTTPClientResponse: Sendable {
    /// Status code, 200…599 (interim 1xx responses are consumed by the parser).
    public var status: Int
    /// Header fields in order, names as received.
    public var headers: [(name: String, value: String)]
    /// The body, de-chunked.
    public var body: [UInt8]

    /// The first value of `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { ResponseParser.equalsIgnoringASCIICase($0.name, name) }?.value
    }
}
