public import Foundation

/// The newer endpoints (issue 25), each counted like the others.
extension MeteredAppleServerAPI {
    public func appTransactionInfo(transactionId: String, environment: StoreEnvironment,
                                   credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> String {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.appTransactionInfo(transactionId: transactionId, environment: environment, credentials: credentials)
        }
    }

    public func setAppAccountToken(originalTransactionId: String, token: UUID, environment: StoreEnvironment,
                                   credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.setAppAccountToken(originalTransactionId: originalTransactionId, token: token,
                                         environment: environment, credentials: credentials)
        }
    }

    public func refundHistory(transactionId: String, revision: String?, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> TransactionHistoryPage {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.refundHistory(transactionId: transactionId, revision: revision, environment: environment,
                                    credentials: credentials)
        }
    }

    public func extendRenewalDatesForAll(_ request: MassRenewalExtensionRequest, environment: StoreEnvironment,
                                         credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> UUID {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.extendRenewalDatesForAll(request, environment: environment, credentials: credentials)
        }
    }

    public func massRenewalExtensionStatus(productId: String, requestIdentifier: UUID, environment: StoreEnvironment,
                                           credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> MassRenewalExtensionStatus
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.massRenewalExtensionStatus(productId: productId, requestIdentifier: requestIdentifier,
                                                 environment: environment, credentials: credentials)
        }
    }

    public func finishTransaction(transactionId: String, environment: StoreEnvironment,
                                  credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.finishTransaction(transactionId: transactionId, environment: environment, credentials: credentials)
        }
    }
}

/// Apple's Retention Messaging API, counted like the App Store Server API when the wrapped client speaks it (the
/// App Store client does); otherwise every call is "unavailable", never a verdict.
extension MeteredAppleServerAPI: RetentionMessagingAPI {
    private func retention() throws(AppStoreAPIError) -> any RetentionMessagingAPI {
        guard let retention = inner as? any RetentionMessagingAPI else {
            throw AppStoreAPIError(.unavailable, reason: "the App Store client does not speak Retention Messaging",
                                   retryAfterSeconds: 60)
        }
        return retention
    }

    public func uploadMessage(_ message: RetentionMessageUpload, environment: StoreEnvironment,
                              credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let api = try retention()
        try counted(credentials) { () throws(AppStoreAPIError) in
            try api.uploadMessage(message, environment: environment, credentials: credentials)
        }
    }

    public func assets(_ kind: RetentionAssetKind, environment: StoreEnvironment,
                       credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> [RetentionAssetState] {
        let api = try retention()
        return try counted(credentials) { () throws(AppStoreAPIError) in
            try api.assets(kind, environment: environment, credentials: credentials)
        }
    }

    public func deleteAsset(_ kind: RetentionAssetKind, _ id: UUID, environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let api = try retention()
        try counted(credentials) { () throws(AppStoreAPIError) in
            try api.deleteAsset(kind, id, environment: environment, credentials: credentials)
        }
    }

    public func uploadImage(_ imageId: UUID, png: [UInt8], environment: StoreEnvironment,
                            credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let api = try retention()
        try counted(credentials) { () throws(AppStoreAPIError) in
            try api.uploadImage(imageId, png: png, environment: environment, credentials: credentials)
        }
    }

    public func configureDefaultMessage(productId: String, locale: String, messageId: UUID,
                                        environment: StoreEnvironment,
                                        credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let api = try retention()
        try counted(credentials) { () throws(AppStoreAPIError) in
            try api.configureDefaultMessage(productId: productId, locale: locale, messageId: messageId,
                                            environment: environment, credentials: credentials)
        }
    }

    public func deleteDefaultMessage(productId: String, locale: String, environment: StoreEnvironment,
                                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let api = try retention()
        try counted(credentials) { () throws(AppStoreAPIError) in
            try api.deleteDefaultMessage(productId: productId, locale: locale, environment: environment,
                                         credentials: credentials)
        }
    }

    public func configureRealtimeURL(_ url: String, environment: StoreEnvironment,
                                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError) {
        let api = try retention()
        try counted(credentials) { () throws(AppStoreAPIError) in
            try api.configureRealtimeURL(url, environment: environment, credentials: credentials)
        }
    }

    public func initiatePerformanceTest(originalTransactionId: String, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> PerformanceTestStarted
    {
        let api = try retention()
        return try counted(credentials) { () throws(AppStoreAPIError) in
            try api.initiatePerformanceTest(originalTransactionId: originalTransactionId, credentials: credentials)
        }
    }
}
