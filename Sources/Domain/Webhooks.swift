public import Foundation
import Primitives

/// The webhook event types (the `type` field). Events are written by the database in the same transaction as the
/// change that causes them (schema/0012_webhooks.sql); `ping` by `POST …/webhook/test`.
public enum WebhookEventType {
    /// Every type a webhook can subscribe to, in documentation order.
    public static let all: [String] = [
        "entitlement.granted", "entitlement.revoked",
        "subscription.started", "subscription.renewed", "subscription.renewal_failed",
        "subscription.grace_period_started", "subscription.expired", "subscription.auto_renew_changed",
        "transaction.refunded", "purchase.transferred", "ping",
    ]
}

/// A project's webhook as front ends show it: never the secret.
public struct WebhookEndpoint: Sendable, Equatable {
    /// The project.
    public var projectId: UUID
    /// Where events are POSTed.
    public var url: String
    /// The types sent; `nil`: all.
    public var events: [String]?
    /// While a rotation's previous secret still signs (one more `v1=`), until when.
    public var previousSecretExpiresAt: Date?
    /// When the webhook was first configured.
    public var createdAt: Date
    /// When it was last changed (URL, events or secret).
    public var updatedAt: Date

    /// Creates a value.
    public init(projectId: UUID, url: String, events: [String]?, previousSecretExpiresAt: Date?, createdAt: Date,
                updatedAt: Date) {
        self.projectId = projectId
        self.url = url
        self.events = events
        self.previousSecretExpiresAt = previousSecretExpiresAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// The webhook as the store keeps it: the endpoint and its sealed secrets.
public struct StoredWebhookEndpoint: Sendable, Equatable {
    /// What front ends may show.
    public var endpoint: WebhookEndpoint
    /// The current `whsec_…` secret, sealed.
    public var secret: SealedSecret
    /// During a rotation: the previous secret, sealed (signs until `endpoint.previousSecretExpiresAt`).
    public var previousSecret: SealedSecret?

    /// Creates a value.
    public init(endpoint: WebhookEndpoint, secret: SealedSecret, previousSecret: SealedSecret?) {
        self.endpoint = endpoint
        self.secret = secret
        self.previousSecret = previousSecret
    }
}

/// The state of an event in the outbox; `rawValue` is the stored and wire text.
public enum WebhookDeliveryStatus: String, Sendable, CustomStringConvertible {
    /// To be sent (or being sent, or waiting for a retry or for an earlier event of the same user).
    case pending
    /// A 2xx answered it.
    case delivered
    /// No 2xx within the maximum age; `POST …/retry` sends it again.
    case failed

    /// See `rawValue`.
    public var description: String { rawValue }
}

/// One delivery attempt.
public struct WebhookAttempt: Sendable, Equatable {
    /// 1 for the first.
    public var attempt: Int
    /// When it started.
    public var at: Date
    /// The HTTP status answered, `nil` when there was no answer.
    public var statusCode: Int?
    /// Why there was no 2xx (a timeout, a refused address, the status), `nil` when delivered.
    public var error: String?
    /// How long it took.
    public var durationMs: Int

    /// Creates a value.
    public init(attempt: Int, at: Date, statusCode: Int?, error: String?, durationMs: Int) {
        self.attempt = attempt
        self.at = at
        self.statusCode = statusCode
        self.error = error
        self.durationMs = durationMs
    }
}

/// An event of the outbox with its delivery state and attempts.
public struct WebhookDelivery: Sendable, Equatable {
    /// `evt_…`.
    public var eventId: String
    /// The event type.
    public var type: String
    /// The user the event is about; `nil` for `ping`.
    public var userId: String?
    /// See `WebhookDeliveryStatus`.
    public var status: WebhookDeliveryStatus
    /// When the event was written (with its change).
    public var createdAt: Date
    /// When the next attempt is due (pending only).
    public var nextAttemptAt: Date?
    /// When it was delivered.
    public var deliveredAt: Date?
    /// Attempts so far, oldest first.
    public var attempts: [WebhookAttempt]

    /// Creates a value.
    public init(eventId: String, type: String, userId: String?, status: WebhookDeliveryStatus, createdAt: Date,
                nextAttemptAt: Date?, deliveredAt: Date?, attempts: [WebhookAttempt]) {
        self.eventId = eventId
        self.type = type
        self.userId = userId
        self.status = status
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
        self.attempts = attempts
    }
}

/// Webhook configuration and the outbox's admin view.
///
/// Every method throws `DomainError` with `.serviceUnavailable` when the store cannot be reached.
public protocol WebhookStore: Sendable {
    /// The project's webhook, if any.
    func endpoint(projectId: UUID) throws -> StoredWebhookEndpoint?
    /// Creates the webhook with `secret`, or (when one exists) changes only its URL and events, keeping its secret;
    /// `created` says which. `.projectNotFound` when the project does not exist.
    func upsertEndpoint(projectId: UUID, url: String, events: [String]?, secret: SealedSecret, now: Date) throws
        -> (endpoint: WebhookEndpoint, created: Bool)
    /// Deletes the webhook (pending events are dropped with it); false when there was none.
    func deleteEndpoint(projectId: UUID) throws -> Bool
    /// Makes `secret` current and the current one previous until `previousExpiresAt`; nil without a webhook.
    func rotateSecret(projectId: UUID, secret: SealedSecret, previousExpiresAt: Date, now: Date) throws
        -> WebhookEndpoint?
    /// Writes an event through `bouncer_emit_event`; its id, or nil when the project has no webhook.
    func emit(projectId: UUID, userId: String?, type: String, dataJSON: String) throws -> String?
    /// The newest events (optionally of one status), each with its attempts (at most `attemptLimit` newest).
    func deliveries(projectId: UUID, status: WebhookDeliveryStatus?, limit: Int) throws -> [WebhookDelivery]
    /// Makes the event pending and due now, with a fresh retry window; nil when no such event.
    func retry(projectId: UUID, eventId: String, now: Date) throws -> WebhookDelivery?
}

/// Resolves a webhook host to its addresses (raw 4- or 16-byte IPs).
public protocol WebhookHostResolving: Sendable {
    /// Every address of `host`. Throws `DomainError(.webhookURLNotAllowed)` when the name does not resolve.
    func addresses(host: String) throws -> [[UInt8]]
    /// Whether an address is public unicast (not loopback, private, link-local, unique-local, unspecified,
    /// multicast, …).
    func isPublic(_ address: [UInt8]) -> Bool
    /// The address as text, for messages.
    func text(_ address: [UInt8]) -> String
}

/// The rules of a webhook URL and the event list, shared by the admin API and the dispatcher.
public enum WebhookRules {
    /// Longest URL accepted.
    public static let maxURLBytes = 2048
    /// How long the previous secret keeps signing after a rotation.
    public static let previousSecretLifetime: TimeInterval = 24 * 3600
    /// Default maximum age of an undelivered event (`BOUNCER_WEBHOOK_MAX_AGE_SECONDS`).
    public static let defaultMaxAge: TimeInterval = 24 * 3600

    /// Scheme, host and port of an acceptable URL, or the problems (syntax only; addresses are vetted apart).
    public static func parse(url: String, allowPrivateNetworks: Bool) -> Result<(host: String, https: Bool), DomainError> {
        func refuse(_ message: String) -> Result<(host: String, https: Bool), DomainError> {
            .failure(DomainError(.webhookURLNotAllowed, message, details: [FieldProblem(path: ["url"], message: message)]))
        }
        guard url.utf8.count <= maxURLBytes else { return refuse("The URL is longer than \(maxURLBytes) bytes.") }
        guard !url.utf8.contains(where: { $0 <= 32 || $0 >= 127 }),
              let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty
        else { return refuse("Not an absolute URL (https://host/path).") }
        guard scheme == "https" || (scheme == "http" && allowPrivateNetworks) else {
            return refuse(scheme == "http" ? "The URL must use https." : "The URL must use https (not \(scheme)).")
        }
        guard components.user == nil, components.password == nil else {
            return refuse("The URL must not contain credentials (user:password@).")
        }
        guard components.fragment == nil else { return refuse("The URL must not contain a fragment (#).") }
        if let port = components.port, !(1...65535).contains(port) { return refuse("The port is out of range.") }
        return .success((host: host, https: scheme == "https"))
    }

    /// Every problem with an `events` list: empty, unknown types, duplicates; more than the known types.
    public static func problems(events: [String]) -> [FieldProblem] {
        var out: [FieldProblem] = []
        if events.isEmpty {
            out.append(FieldProblem(path: ["events"], message: "Array must contain at least 1 element(s)"))
        }
        if events.count > WebhookEventType.all.count {
            return [FieldProblem(path: ["events"],
                                 message: "Array must contain at most \(WebhookEventType.all.count) element(s)")]
        }
        var seen: Set<String> = []
        for (i, type) in events.enumerated() {
            if !WebhookEventType.all.contains(type) {
                out.append(FieldProblem(path: ["events", String(i)],
                                        message: "Unknown event type; expected one of: "
                                            + WebhookEventType.all.joined(separator: ", ")))
            } else if !seen.insert(type).inserted {
                out.append(FieldProblem(path: ["events", String(i)], message: "Duplicate event type"))
            }
        }
        return out
    }

    /// The delay after failed attempt number `attempt` (1 for the first): `base` (10 s by default) doubling up to
    /// 1 h, with ±25 % jitter from `jitter` in 0..<1 (so retries of many events spread out).
    public static func retryDelay(afterAttempt attempt: Int, base: TimeInterval = 10, jitter: Double) -> TimeInterval {
        let exponent = attempt <= 1 ? 0 : min(attempt - 1, 16)
        let base = min(max(base, 0) * Double(1 << exponent), 3600)
        return base * (0.75 + 0.5 * min(max(jitter, 0), 1))
    }

    /// Whether an answer counts as delivered: any 2xx.
    public static func isDelivered(status: Int) -> Bool { (200...299).contains(status) }

    /// A new signing secret: `whsec_` and 64 hex digits (256 random bits).
    public static func generateSecret(using generator: inout some RandomNumberGenerator) -> String {
        "whsec_" + Hex.random(count: 32, using: &generator)
    }
}
