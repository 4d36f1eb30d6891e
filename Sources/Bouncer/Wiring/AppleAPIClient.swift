import AppStoreServerAPI
import Crypto
import Domain
import HTTPClient

/// Where the App Store Server API is and whom to trust for it (`BOUNCER_APPLE_API_*`).
struct AppleAPISettings: Sendable, Equatable {
    /// `BOUNCER_APPLE_API_PRODUCTION_URL` (default: Apple's production host).
    var productionURL = AppStoreServerClient.Configuration.defaultProductionURL
    /// `BOUNCER_APPLE_API_SANDBOX_URL` (default: Apple's sandbox host).
    var sandboxURL = AppStoreServerClient.Configuration.defaultSandboxURL
    /// `BOUNCER_APPLE_API_CA_FILE`: extra trusted CA certificates (PEM) for those connections (tests: a fake Apple).
    var caFile: String?

    /// The client these settings describe.
    func client() throws -> AppStoreServerClient {
        let http = try HTTPClient(configuration: HTTPClient.Configuration(
            tls: TLSClientConfiguration(trustsSystemRoots: true, additionalCAFile: caFile)))
        return AppStoreServerClient(http: http, configuration: AppStoreServerClient.Configuration(
            productionURL: productionURL, sandboxURL: sandboxURL))
    }
}

extension ServeSettings {
    /// The variables of `AppleAPISettings`, appended to `ServeSettings.variables`.
    static let appleAPIVariables: [Variable] = [
        Variable(name: "BOUNCER_APPLE_API_PRODUCTION_URL",
                 help: "App Store Server API base URL for Production (default \(AppStoreServerClient.Configuration.defaultProductionURL))") {
            s, v in
            guard v.hasPrefix("https://"), v.utf8.count > 8 else { return "must be an https:// URL" }
            s.appleAPI.productionURL = v
            return nil
        },
        Variable(name: "BOUNCER_APPLE_API_SANDBOX_URL",
                 help: "App Store Server API base URL for Sandbox (default \(AppStoreServerClient.Configuration.defaultSandboxURL))") {
            s, v in
            guard v.hasPrefix("https://"), v.utf8.count > 8 else { return "must be an https:// URL" }
            s.appleAPI.sandboxURL = v
            return nil
        },
        Variable(name: "BOUNCER_APPLE_API_CA_FILE",
                 help: "extra trusted CA certificates (PEM) for the App Store Server API connections (default none)") { s, v in
            guard !v.isEmpty, !v.utf8.contains(0) else { return "must be a file path" }
            s.appleAPI.caFile = v
            return nil
        },
    ]
}
