// swift-tools-version:6.0
import PackageDescription

// No Swift package dependencies, by design: only the toolchain plus libpq and OpenSSL,
// each wrapped by exactly one target (Postgres owns CPostgres, Crypto owns COpenSSL).
// Every target: existentials spelled `any`, and imports internal unless written `public import` (the module's API
// shows that module's types; docs/architecture.md, "Modules").
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Bouncer",
    products: [
        .executable(name: "bouncer", targets: ["Bouncer"]),
        // For apps and backends: Foundation only, no server module (BouncerClientTests checks the graph stays clean).
        .library(name: "BouncerClient", targets: ["BouncerClient"]),
    ],
    targets: [
        // C wrappers
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSystem"),

        // Leaf utilities, one author each (hex, base64, calendar arithmetic and RFC 3339, a lock): the toolchain only
        .target(name: "Primitives", swiftSettings: strict),

        // Pure rules
        .target(name: "Domain", dependencies: ["Primitives"], swiftSettings: strict),

        // Protocol / crypto / drivers
        .target(name: "JSON", swiftSettings: strict),
        .target(name: "Crypto", dependencies: ["COpenSSL", "Primitives"], swiftSettings: strict),
        .target(name: "AppStoreJWS", dependencies: ["Domain", "Crypto", "JSON", "Primitives"], swiftSettings: strict),
        .target(name: "AppReceipt", dependencies: ["Crypto", "AppStoreJWS", "Primitives"], swiftSettings: strict),
        .target(name: "HTTPClient", dependencies: ["Crypto", "Primitives"], swiftSettings: strict),
        .target(name: "AppStoreServerAPI", dependencies: ["Domain", "HTTPClient", "Crypto", "AppStoreJWS", "JSON", "Primitives"], swiftSettings: strict),
        .target(name: "Postgres", dependencies: ["CPostgres", "Primitives"], swiftSettings: strict),
        .target(name: "HTTPCore", dependencies: ["CSystem", "Primitives", "JSON", "Crypto"], swiftSettings: strict),
        .target(name: "Metrics", dependencies: ["Primitives"], swiftSettings: strict),

        // Adapters and the API. Storage's migrations are schema/*.sql, compiled in by the EmbedSchema plugin.
        .target(name: "Storage", dependencies: ["Domain", "Postgres", "JSON", "Primitives"], swiftSettings: strict, plugins: ["EmbedSchema"]),
        .target(name: "API", dependencies: ["Domain", "HTTPCore", "JSON", "Primitives"], swiftSettings: strict),
        // The admin console's static files, compiled into the binary (`.embedInCode`: no bundle beside it, no CDN).
        .target(name: "Console", dependencies: ["HTTPCore"],
                resources: ["index.html", "console.css", "console.js", "charts.js", "revenue.js", "favicon.svg"]
                    .map { .embedInCode("assets/" + $0) },
                swiftSettings: strict),

        // Verified payloads as Domain facts: the adapter of the Domain's SignedDataVerifying port, next to the verifiers.
        .target(name: "Verification", dependencies: ["Domain", "AppStoreJWS", "AppReceipt", "Crypto", "JSON"], swiftSettings: strict),
        // Long-running services (webhook deriver and dispatcher, reconcile scheduler, consumption responder, caches,
        // readiness) behind one `Service` protocol and one `ServiceGroup` lifecycle.
        .target(name: "Jobs", dependencies: ["Domain", "Storage", "Postgres", "HTTPClient", "Crypto", "JSON", "Primitives", "CSystem"],
                swiftSettings: strict),

        // The subcommands' behaviour, the settings and their variable tables, /metrics and rate-limit admission, the
        // serving loop (signals, drain, TLS reloader): everything of `bouncer` but the command table and the wiring.
        .target(name: "Commands",
                dependencies: ["API", "Jobs", "Verification", "Storage", "AppStoreJWS", "AppReceipt", "AppStoreServerAPI", "HTTPClient", "Crypto", "Postgres", "HTTPCore", "Domain", "JSON", "Metrics", "Primitives"],
                swiftSettings: strict),

        // Composition root: main.swift, the command table (CLI.swift) and `serve`'s wiring (ServeCommand.swift)
        .executableTarget(
            name: "Bouncer",
            dependencies: ["Commands", "API", "Console", "Jobs", "Verification", "Storage", "AppStoreJWS", "AppReceipt", "AppStoreServerAPI", "HTTPClient", "Crypto", "HTTPCore", "Domain"],
            swiftSettings: strict
        ),

        // Client library: depends on nothing (Foundation, and FoundationNetworking on Linux).
        .target(name: "BouncerClient", swiftSettings: strict),

        // Build time: schema/*.sql → Swift source of `Migration.embedded`, so schema/ is the one copy of the SQL
        // and the binary still carries it. The plugin's root is schema/ (its only source: schema/EmbedSchema/)
        // because SwiftPM re-plans when a target root's files change: a new or renamed migration is picked up
        // with no clean build. See schema/README.md.
        .executableTarget(name: "EmbedSchemaTool", path: "schema/EmbedSchemaTool", swiftSettings: strict),
        .plugin(name: "EmbedSchema", capability: .buildTool(), dependencies: ["EmbedSchemaTool"],
                path: "schema", sources: ["EmbedSchema"]),

        // Tests
        .target(name: "TestSupport", dependencies: ["Postgres", "HTTPCore", "JSON", "Crypto"], path: "Tests/TestSupport", swiftSettings: strict),
        // The Swift statement of rules whose live author is SQL (schema/functions/): the executable specification that
        // StorageTests' RuleTableTests runs beside the SQL on the same cases. Tests only: nothing in Sources runs it.
        .target(name: "Specification", dependencies: ["Domain"], path: "Tests/Specification", swiftSettings: strict),
        .testTarget(name: "PrimitivesTests", dependencies: ["Primitives"], swiftSettings: strict),
        .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: strict),
        .testTarget(name: "DomainTests", dependencies: ["Domain", "Specification"], swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "Crypto", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "AppStoreServerAPITests", dependencies: ["AppStoreServerAPI", "Domain", "HTTPClient", "Crypto", "JSON", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "AppStoreJWSTests", dependencies: ["AppStoreJWS", "Domain", "Crypto", "Primitives", "TestSupport"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "AppReceiptTests", dependencies: ["AppReceipt", "AppStoreJWS", "Crypto", "TestSupport"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "HTTPCoreTests", dependencies: ["HTTPCore", "JSON", "TestSupport", "Crypto"], swiftSettings: strict),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics"], swiftSettings: strict),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "TestSupport", "Crypto", "Specification"], swiftSettings: strict),
        .testTarget(name: "APITests", dependencies: ["API", "Domain", "HTTPCore", "JSON", "TestSupport", "Specification"], swiftSettings: strict),
        .testTarget(name: "BouncerClientTests", dependencies: ["BouncerClient", "TestSupport", "JSON"], swiftSettings: strict),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "Postgres", "JSON", "Crypto"], exclude: ["console"],
                    swiftSettings: strict),
        .testTarget(name: "JobsTests", dependencies: ["Jobs", "Crypto", "Primitives"], swiftSettings: strict),
        .testTarget(name: "CommandsTests", dependencies: ["Commands"], swiftSettings: strict),
        .testTarget(name: "ConsoleTests", dependencies: ["Console", "HTTPCore"], swiftSettings: strict),
    ]
)
