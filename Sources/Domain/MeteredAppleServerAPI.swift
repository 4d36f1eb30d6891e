public import Foundation

/// An `AppleServerAPI` that counts each call it passes on as one `appStoreCalls` of the credentials' project's
/// account (`UsageMeter`: in memory, no statement). Every call Apple was asked counts, answered or failed; a call that
/// could not be made (`.invalidRequest`: no server for the environment, a key that does not load) does not.
public struct MeteredAppleServerAPI: AppleServerAPI {
    let inner: any AppleServerAPI
    private let meter: UsageMeter
    private let now: @Sendable () -> Date

    /// Counts `inner`'s calls in `meter` at `now()`.
    public init(_ inner: any AppleServerAPI, meter: UsageMeter, now: @escaping @Sendable () -> Date) {
        self.inner = inner
        self.meter = meter
        self.now = now
    }

    func counted<T>(_ credentials: AppStoreAPICredentials,
                            _ call: () throws(AppStoreAPIError) -> T) throws(AppStoreAPIError) -> T {
        do {
            let result = try call()
            meter.count(.appStoreCalls, project: credentials.projectId, at: now())
            return result
        } catch {
            if error.kind != .invalidRequest { meter.count(.appStoreCalls, project: credentials.projectId, at: now()) }
            throw error
        }
    }

    public func transactionInfo(transactionId: String, environment: StoreEnvironment,
                                credentials: AppStoreAPICredentials) throws(AppStoreAPIError) -> String {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.transactionInfo(transactionId: transactionId, environment: environment, credentials: credentials)
        }
    }

    public func subscriptionStatuses(transactionId: String, environment: StoreEnvironment,
                                     credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> [SignedSubscriptionStatus]
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.subscriptionStatuses(transactionId: transactionId, environment: environment,
                                           credentials: credentials)
        }
    }

    public func transactionHistory(transactionId: String, revision: String?, environment: StoreEnvironment,
                                   credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> TransactionHistoryPage
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.transactionHistory(transactionId: transactionId, revision: revision, environment: environment,
                                         credentials: credentials)
        }
    }

    public func notificationHistory(from start: Date, to end: Date, paginationToken: String?,
                                    environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> NotificationHistoryPage
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.notificationHistory(from: start, to: end, paginationToken: paginationToken,
                                          environment: environment, credentials: credentials)
        }
    }

    public func sendConsumptionInformation(transactionId: String, _ information: ConsumptionInformation,
                                           environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError)
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.sendConsumptionInformation(transactionId: transactionId, information, environment: environment,
                                                 credentials: credentials)
        }
    }

    public func requestTestNotification(environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> String
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.requestTestNotification(environment: environment, credentials: credentials)
        }
    }

    public func testNotificationStatus(token: String, environment: StoreEnvironment,
                                       credentials: AppStoreAPICredentials) throws(AppStoreAPIError)
        -> TestNotificationStatus
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.testNotificationStatus(token: token, environment: environment, credentials: credentials)
        }
    }

    public func extendRenewalDate(originalTransactionId: String, _ request: RenewalExtensionRequest,
                                  environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> RenewalExtensionResult
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.extendRenewalDate(originalTransactionId: originalTransactionId, request,
                                        environment: environment, credentials: credentials)
        }
    }

    public func lookUpOrder(orderId: String, environment: StoreEnvironment, credentials: AppStoreAPICredentials)
        throws(AppStoreAPIError) -> SignedOrderLookup
    {
        try counted(credentials) { () throws(AppStoreAPIError) in
            try inner.lookUpOrder(orderId: orderId, environment: environment, credentials: credentials)
        }
    }
}
