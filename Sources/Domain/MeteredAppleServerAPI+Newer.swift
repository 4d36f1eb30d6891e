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
