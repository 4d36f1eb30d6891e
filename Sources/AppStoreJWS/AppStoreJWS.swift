// Placeholder until the AppStoreJWS module lands.
