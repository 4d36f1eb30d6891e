import Domain
import Foundation
import HTTPCore
import JSON

/// `/v1/admin/accounts/:id/usage` and `/v1/admin/accounts/:id/quotas`: what an account used in a month, and the
/// operator's limits on it (enforced on its public routes by `UsageGate`).
struct UsageController: APIController {
    /// nil when the executable wired no usage meter (503).
    let meter: UsageMeter?
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        let account = "/v1/admin/accounts/:id"
        return [
            APIRoute(.get, account + "/usage", .adminAPI, access: .admin(.usageRead), usage),
            APIRoute(.get, account + "/quotas", .adminAPI, access: .admin(.accountsManage), showQuotas),
            APIRoute(.put, account + "/quotas", .adminAPI, access: .admin(.accountsManage), setQuotas),
        ]
    }

    static let monthSuggestion = "Optional query parameter month: a UTC calendar month as YYYY-MM (e.g. 2026-05); "
        + "omit it for the current month."
    static let quotasSuggestion = "Request body requires receipts_per_month (integer 0 to 1000000000000, or null: "
        + "unlimited) and requests_per_second (integer 1 to 1000000000000, or null: unlimited), "
        + "e.g. {\"receipts_per_month\": 100000, \"requests_per_second\": 50}."

    private func use() throws -> UsageMeter {
        try unwired(meter, "Usage is not configured.", "usage")
    }

    /// `GET /v1/admin/accounts/:id/usage?month=YYYY-MM`. `tracked_revenue` only for a caller with `revenue.read`
    /// (a developer's or support's role counts usage, not money).
    func usage(_ request: Request, _ principal: Principal) throws -> Response {
        let id = try PathParameters.accountId(request)
        let now = now()
        var month = UsageMonth(containing: now)
        for item in request.queryItems() where item.name == "month" {
            guard let parsed = UsageMonth(text: item.value) else {
                throw HTTPError.validation(
                    [ErrorDetail(path: ["month"], message: "Invalid month (YYYY-MM, e.g. 2026-05)")],
                    suggestion: Self.monthSuggestion)
            }
            month = parsed
        }
        guard let usage = try use().usage(accountId: id, month: month, now: now) else {
            throw AccountAdministration.notFound(id)
        }
        var body = JSONBody(capacity: 320)
        body.beginObject()
        body.field("account_id", id.lowercasedText)
        body.field("month", usage.month.description)
        body.field("receipts_verified", usage.counts[.receipts] ?? 0)
        body.field("notifications_processed", usage.counts[.notifications] ?? 0)
        body.field("app_store_api_calls", usage.counts[.appStoreCalls] ?? 0)
        body.field("webhooks_delivered", usage.counts[.webhooksDelivered] ?? 0)
        if principal.may(.revenueRead) {
            body.key("tracked_revenue")
            body.beginObject()
            for currency in usage.revenue.keys.sorted() {
                body.key(named: currency)
                body.int(usage.revenue[currency] ?? 0)
            }
            body.endObject()
        }
        body.endObject()
        return Response.json(200, body.bytes)
    }

    /// `GET /v1/admin/accounts/:id/quotas`.
    func showQuotas(_ request: Request) throws -> Response {
        let id = try PathParameters.accountId(request)
        guard let quotas = try use().quotas(accountId: id) else { throw AccountAdministration.notFound(id) }
        return Response.json(200, Self.quotasBody(id, quotas))
    }

    /// `PUT /v1/admin/accounts/:id/quotas` `{receipts_per_month, requests_per_second}`: both required, null =
    /// unlimited; in force in this process at once, in others after their next flush.
    func setQuotas(_ request: Request) throws -> Response {
        let id = try PathParameters.accountId(request)
        let body = try RequestBody.object(request, suggestion: Self.quotasSuggestion)
        var details: [ErrorDetail] = []
        func limit(_ name: String, minimum: Int64) -> Int64? {
            guard let value = body[name] else {
                details.append(ErrorDetail(path: [name], message: "Required (an integer, or null for unlimited)"))
                return nil
            }
            if value.isNull { return nil }
            guard let number = value.int64Value, number >= minimum, number <= AccountQuotas.maximum else {
                details.append(ErrorDetail(
                    path: [name], message: "Expected an integer from \(minimum) to \(AccountQuotas.maximum), or null"))
                return nil
            }
            return number
        }
        let quotas = AccountQuotas(receiptsPerMonth: limit("receipts_per_month", minimum: 0),
                                   requestsPerSecond: limit("requests_per_second", minimum: 1))
        if !details.isEmpty { throw HTTPError.validation(details, suggestion: Self.quotasSuggestion) }
        let saved = try use().setQuotas(accountId: id, quotas, now: now())
        return Response.json(200, Self.quotasBody(id, saved))
    }

    /// `{"account_id","receipts_per_month","requests_per_second"}` (null: unlimited).
    static func quotasBody(_ id: UUID, _ quotas: AccountQuotas) -> [UInt8] {
        var body = JSONBody(capacity: 128)
        body.beginObject()
        body.field("account_id", id.lowercasedText)
        if let n = quotas.receiptsPerMonth { body.field("receipts_per_month", n) } else { body.null("receipts_per_month") }
        if let n = quotas.requestsPerSecond { body.field("requests_per_second", n) } else { body.null("requests_per_second") }
        body.endObject()
        return body.bytes
    }
}

/// The quotas on an account's public routes, checked by the gate once the public key named the project (its
/// account rides along on the cached `Project`): no statement, a shard lock, and a token bucket when a rate is set.
struct UsageGate: Sendable {
    let meter: UsageMeter
    let limiter = RateLimiter(maxKeys: 100_000)
    let now: @Sendable () -> Date

    /// 429 `QUOTA_EXCEEDED` when the account's monthly receipts or its rate are used up.
    func admit(_ project: Project) throws {
        let now = now()
        switch meter.admission(account: project.accountId, at: now) {
        case .open(requestsPerSecond: nil):
            return
        case .open(requestsPerSecond: let rate?):
            let rate = RateLimit(rate: Double(rate), burst: Int(clamping: rate))
            let decision = limiter.acquire("account:" + project.accountId.uuidString, limit: rate)
            if !decision.allowed {
                throw HTTPError.quotaExceeded(retryAfter: decision.retryAfterSeconds, monthly: false)
            }
        case .monthlyQuotaReached:
            throw HTTPError.quotaExceeded(retryAfter: UsageMonth.secondsToNextMonth(from: now), monthly: true)
        }
    }

    /// Whether `admit` lets the project's account through with nothing spent: no quota stops it and none is per
    /// second (whose token `admit` takes).
    func admitsFreely(_ project: Project) -> Bool {
        if case .open(requestsPerSecond: nil) = meter.admission(account: project.accountId, at: now()) { return true }
        return false
    }

    /// Counts a public request's success for its account.
    func count(_ kind: UsageKind, _ project: Project) {
        meter.count(kind, account: project.accountId, at: now())
    }
}

extension HTTPError {
    /// An account's quota is used up (`PUT /v1/admin/accounts/{id}/quotas`).
    static func quotaExceeded(retryAfter: Int, monthly: Bool) -> HTTPError {
        var headers = HTTPHeaders()
        headers.set("Retry-After", String(retryAfter))
        return HTTPError(
            status: 429, code: "QUOTA_EXCEEDED",
            message: monthly ? "This account has used its receipts for this month."
                : "This account is sending more requests per second than its quota allows.",
            suggestion: monthly
                ? "Retry after the number of seconds in Retry-After (the next month, UTC), or ask the operator to "
                    + "raise the account's receipts_per_month quota."
                : "Retry after the number of seconds in Retry-After and spread requests out, or ask the operator to "
                    + "raise the account's requests_per_second quota.",
            headers: headers)
    }
}
