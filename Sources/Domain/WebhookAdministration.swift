public import Foundation

/// The webhook use cases (configure, show, delete, rotate the secret, ping, list deliveries, retry), shared by the
/// admin API and any CLI so both apply the same rules.
///
/// The `whsec_…` secret is returned only by `configure` (when the webhook is created) and `rotateSecret`; it is
/// stored sealed (it is needed in clear to sign). Throws `DomainError`: `.invalidInput`, `.webhookURLNotAllowed`,
/// `.projectNotFound`, `.webhookNotConfigured`, `.webhookEventNotFound`, `.encryptionKeyMissing`, the store's.
public struct WebhookAdministration: Sendable {
    private let projects: any ProjectStore
    private let store: any WebhookStore
    private let sealer: (any CredentialSealing)?
    private let resolver: any WebhookHostResolving
    private let allowPrivateNetworks: Bool
    private let now: @Sendable () -> Date

    /// Use cases over `store`. `allowPrivateNetworks` (`BOUNCER_WEBHOOK_ALLOW_PRIVATE_NETWORKS=1`) accepts `http`
    /// and private addresses (development, tests).
    public init(
        projects: any ProjectStore, store: any WebhookStore, sealer: (any CredentialSealing)?,
        resolver: any WebhookHostResolving, allowPrivateNetworks: Bool, now: @escaping @Sendable () -> Date
    ) {
        self.projects = projects
        self.store = store
        self.sealer = sealer
        self.resolver = resolver
        self.allowPrivateNetworks = allowPrivateNetworks
        self.now = now
    }

    /// What `configure` and `rotateSecret` answer: the endpoint and, when it was just made, the secret.
    public struct Configured: Sendable {
        /// The webhook.
        public var endpoint: WebhookEndpoint
        /// The `whsec_…` secret, only when created or rotated.
        public var secret: String?
    }

    /// Creates the webhook (with a new secret) or changes its URL and events (keeping the secret).
    ///
    /// Order: the encryption key must be configured, then the input's rules, then the URL's addresses, then the
    /// project must exist.
    public func configure(projectId: UUID, url: String, events: [String]?) throws -> Configured {
        let sealer = try requireSealer()
        if let events {
            let problems = WebhookRules.problems(events: events)
            guard problems.isEmpty else {
                throw DomainError(.invalidInput, "Invalid webhook events.", details: problems)
            }
        }
        try vet(url: url)
        _ = try projects.existingProject(id: projectId)
        var rng = SystemRandomNumberGenerator()
        let secret = WebhookRules.generateSecret(using: &rng)
        let sealed = try sealer.seal(Array(secret.utf8), associatedData: Self.associatedData(projectId))
        let normalized = events.map { types in WebhookEventType.all.filter { types.contains($0) } }
        let (endpoint, created) = try store.upsertEndpoint(
            projectId: projectId, url: url, events: normalized, secret: sealed, now: now())
        return Configured(endpoint: endpoint, secret: created ? secret : nil)
    }

    /// Refuses a URL that is malformed, not https, or whose host resolves to any non-public address (unless
    /// private networks are allowed). The dispatcher checks the address again on every connection.
    public func vet(url: String) throws {
        let parsed = try WebhookRules.parse(url: url, allowPrivateNetworks: allowPrivateNetworks).get()
        guard !allowPrivateNetworks else { return }
        let addresses = try resolver.addresses(host: parsed.host)
        guard !addresses.isEmpty else {
            throw Self.notAllowed("\(parsed.host) does not resolve to any address.")
        }
        if let refused = addresses.first(where: { !resolver.isPublic($0) }) {
            throw Self.notAllowed("\(parsed.host) resolves to \(resolver.text(refused)), a loopback, private, "
                + "link-local or otherwise non-public address.")
        }
    }

    /// The project's webhook (never the secret).
    public func endpoint(projectId: UUID) throws -> WebhookEndpoint {
        try stored(projectId: projectId).endpoint
    }

    /// Deletes the webhook and its undelivered events.
    public func delete(projectId: UUID) throws {
        try projects.delete(in: projectId, { try store.deleteEndpoint(projectId: projectId) },
                            else: Self.notConfigured(projectId))
    }

    /// A new secret; the current one keeps signing (a second `v1=`) for `WebhookRules.previousSecretLifetime`.
    public func rotateSecret(projectId: UUID) throws -> Configured {
        let sealer = try requireSealer()
        _ = try stored(projectId: projectId)
        var rng = SystemRandomNumberGenerator()
        let secret = WebhookRules.generateSecret(using: &rng)
        let sealed = try sealer.seal(Array(secret.utf8), associatedData: Self.associatedData(projectId))
        let at = now()
        guard let endpoint = try store.rotateSecret(
            projectId: projectId, secret: sealed, previousExpiresAt: at + WebhookRules.previousSecretLifetime, now: at)
        else { throw Self.notConfigured(projectId) }
        return Configured(endpoint: endpoint, secret: secret)
    }

    /// Queues a `ping` event (delivered like any other); its id.
    public func sendTest(projectId: UUID) throws -> String {
        _ = try stored(projectId: projectId)
        let data = #"{"message":"Webhook test from Bouncer"}"#
        guard let id = try store.emit(projectId: projectId, userId: nil, type: "ping", dataJSON: data) else {
            throw Self.notConfigured(projectId)
        }
        return id
    }

    /// The newest events with their attempts.
    public func deliveries(projectId: UUID, status: WebhookDeliveryStatus?, limit: Int) throws -> [WebhookDelivery] {
        _ = try stored(projectId: projectId)
        return try store.deliveries(projectId: projectId, status: status, limit: limit)
    }

    /// Sends the event again (pending now, a fresh retry window).
    public func retry(projectId: UUID, eventId: String) throws -> WebhookDelivery {
        _ = try stored(projectId: projectId)
        guard eventId.utf8.count <= 64, let delivery = try store.retry(projectId: projectId, eventId: eventId, now: now())
        else {
            throw DomainError(.webhookEventNotFound, "No webhook event \(eventId.prefix(64)) in this project.")
        }
        return delivery
    }

    /// The secrets that sign now: the current one, and the previous one until its expiry. For the dispatcher.
    public static func signingSecrets(_ stored: StoredWebhookEndpoint, sealer: any CredentialSealing, at now: Date)
        throws -> [String]
    {
        let associatedData = associatedData(stored.endpoint.projectId)
        var out = [String(decoding: try sealer.open(stored.secret, associatedData: associatedData), as: UTF8.self)]
        if let previous = stored.previousSecret, let until = stored.endpoint.previousSecretExpiresAt, until > now {
            out.append(String(decoding: try sealer.open(previous, associatedData: associatedData), as: UTF8.self))
        }
        return out
    }

    /// What a sealed secret is bound to: this project's webhook, format version 1.
    static func associatedData(_ projectId: UUID) -> [UInt8] {
        SealedSecret.associatedData("webhook-secret", projectId)
    }

    private func stored(projectId: UUID) throws -> StoredWebhookEndpoint {
        try projects.existing(in: projectId, { try store.endpoint(projectId: projectId) },
                              else: Self.notConfigured(projectId))
    }

    private func requireSealer() throws -> any CredentialSealing {
        try sealer.required(toEncrypt: "webhook secrets")
    }

    private static func notAllowed(_ message: String) -> DomainError {
        DomainError(.webhookURLNotAllowed, message, details: [FieldProblem(path: ["url"], message: message)])
    }

    private static func notConfigured(_ id: UUID) -> DomainError {
        DomainError(.webhookNotConfigured, "Project \(id.lowercasedText) has no webhook.")
    }
}
