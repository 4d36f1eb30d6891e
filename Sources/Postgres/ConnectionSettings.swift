/// Where and how to connect: libpq keyword/value parameters, never a conninfo string built by
/// interpolation (values with spaces or quotes would change its meaning).
///
/// A `postgres://` URL is passed to libpq whole as `dbname` with `expand_dbname=1`, so every libpq
/// URL feature (`sslmode`, `sslrootcert`, several hosts, `options`) passes through unchanged.
public struct ConnectionSettings: Sendable, CustomStringConvertible {
    /// The libpq keyword/value pairs in order; when a keyword repeats, libpq uses the last value.
    public var parameters: [(String, String)]
    /// Whether the first `dbname` value is a URL or conninfo for libpq to expand.
    public var expandsDatabaseName: Bool
    /// Server-side `statement_timeout` applied to every session (nil keeps the server's setting).
    public var statementTimeout: Duration?
    /// libpq `connect_timeout` in whole seconds (minimum 2 per libpq); nil keeps libpq's default.
    public var connectTimeoutSeconds: Int?
    /// `application_name` reported in `pg_stat_activity`.
    public var applicationName: String = "bouncer"

    /// Settings from a `postgres://` or `postgresql://` URL (RFC 3986 form documented by libpq,
    /// e.g. `postgres://user:pw@host:5432/db?sslmode=require`).
    public init(url: String) throws(PGError) {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw PGError(code: .invalidSettings, message: "database URL must start with postgres:// or postgresql://")
        }
        self.parameters = [("dbname", url)]
        self.expandsDatabaseName = true
    }

    /// Settings from libpq keywords (`host`, `port`, `dbname`, `user`, `password`, `sslmode`, …).
    public init(parameters: [(String, String)]) {
        self.parameters = parameters
        self.expandsDatabaseName = false
    }

    /// The same server with another database name (later keywords override earlier ones, also
    /// over an expanded URL: libpq only expands the first `dbname`).
    public func database(_ name: String) -> ConnectionSettings {
        var copy = self
        copy.parameters.append(("dbname", name))
        return copy
    }

    /// The final keyword/value list handed to `PQconnectdbParams`.
    func resolvedParameters() -> [(String, String)] {
        var result = parameters
        if let connectTimeoutSeconds { result.append(("connect_timeout", String(max(2, connectTimeoutSeconds)))) }
        if !applicationName.isEmpty && !result.contains(where: { $0.0 == "application_name" }) {
            result.append(("application_name", applicationName))
        }
        return result
    }

    /// The settings with any password redacted, safe for logs.
    public var description: String {
        parameters.map { key, value in
            if key == "password" { return "password=***" }
            if key == "dbname" && expandsDatabaseName && value.contains("://") { return "url=" + Self.redactURL(value) }
            return "\(key)=\(value)"
        }.joined(separator: " ")
    }

    private static func redactURL(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://"),
              let at = url[schemeEnd.upperBound...].firstIndex(of: "@") else { return url }
        let userInfo = url[schemeEnd.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }
}
