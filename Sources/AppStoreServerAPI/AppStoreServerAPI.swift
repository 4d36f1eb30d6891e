// The App Store Server API client (Domain's `AppleServerAPI` port) and what else signs with a project's
// In-App Purchase key. Depends on HTTPClient (HTTPS), Crypto (ES256), AppStoreJWS (compact JWS) and JSON.
