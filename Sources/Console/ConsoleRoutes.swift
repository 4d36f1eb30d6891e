public import HTTPCore

/// The admin console at `/admin/`: static files compiled into the binary, served with a strict
/// Content-Security-Policy. The pages call the JSON admin API (`/v1/admin/…`) with the session cookie.
public enum ConsoleRoutes {
    /// One embedded file with the headers it is served with.
    struct Asset: Sendable {
        let body: [UInt8]
        let contentType: String
        let etag: String
    }

    /// `default-src 'self'` for everything (no inline script or style, no CDN); the rest forbids framing, `<base>`
    /// and form posts elsewhere. SVG charts are built with DOM calls, which the policy allows.
    static let contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    /// The files, by URL name (`/admin/<name>`); `index.html` also answers `/admin/`.
    static let assets: [String: Asset] = {
        let files: [(String, [UInt8], String)] = [
            ("index.html", PackageResources.index_html, "text/html; charset=utf-8"),
            ("console.css", PackageResources.console_css, "text/css; charset=utf-8"),
            ("console.js", PackageResources.console_js, "text/javascript; charset=utf-8"),
            ("charts.js", PackageResources.charts_js, "text/javascript; charset=utf-8"),
            ("revenue.js", PackageResources.revenue_js, "text/javascript; charset=utf-8"),
            ("favicon.svg", PackageResources.favicon_svg, "image/svg+xml"),
        ]
        var assets: [String: Asset] = [:]
        for (name, body, type) in files {
            assets[name] = Asset(body: body, contentType: type, etag: "\"\(fnv1a64Hex(body))\"")
        }
        return assets
    }()

    /// The names of every embedded file.
    public static var assetNames: [String] { assets.keys.sorted() }

    /// Registers `GET /admin`, `/admin/` and `/admin/:file`. They never block (bytes in memory), so they run on
    /// the event loop, and declare no rate limit, like health checks: the data behind them is the admin API's.
    public static func register(on router: inout Router) {
        router.add(.get, "/admin", placement: .eventLoop) { _ in
            Response(status: 301, headers: ["Location": "/admin/"])
        }
        router.add(.get, "/admin/", placement: .eventLoop) { request in try serve("index.html", request) }
        router.add(.get, "/admin/:file", placement: .eventLoop) { request in
            try serve(request.pathParameters["file"] ?? "", request)
        }
    }

    /// The file's response: 200 with the body, or 304 when `If-None-Match` names its ETag.
    static func serve(_ name: String, _ request: Request) throws(HTTPError) -> Response {
        guard let asset = assets[name] else {
            throw HTTPError(status: 404, code: "NOT_FOUND", message: "No such console file.",
                            suggestion: "Open /admin/ for the console.")
        }
        var headers: HTTPHeaders = [
            "Content-Type": asset.contentType,
            "Content-Security-Policy": contentSecurityPolicy,
            "X-Frame-Options": "DENY",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            // Names are not content-hashed: revalidate every time (a 304 costs no body).
            "Cache-Control": "no-cache",
            "ETag": asset.etag,
        ]
        if let match = request.headers["If-None-Match"],
           match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: " ") == asset.etag || $0 == "*" }) {
            headers.remove("Content-Type")
            return Response(status: 304, headers: headers)
        }
        return Response(status: 200, headers: headers, body: asset.body)
    }

    /// FNV-1a over the bytes, as 16 hex digits: an ETag needs a change detector, not a cryptographic hash.
    static func fnv1a64Hex(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var s = Substring(self)
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return s
    }
}
