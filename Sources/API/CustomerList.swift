import Domain
import Foundation
import HTTPCore
import Primitives

/// `GET /v1/admin/projects/:id/customers`: the project's customers as a list (issue 26; README "Customers as a
/// list"), filtered, sorted and paged by an opaque cursor.
struct CustomerListController: APIController {
    let projects: any ProjectStore
    /// `nil` answers 503.
    let store: (any CustomerListStore)?
    let now: @Sendable () -> Date

    var routes: [APIRoute] {
        [APIRoute(.get, "/v1/admin/projects/:id/customers", .adminAPI, access: .admin(.customersRead), list)]
    }

    static let sorts = CustomerListQuery.SortKey.allCases.flatMap { [$0.rawValue, "-" + $0.rawValue] }
    static let suggestion = "Optional query parameters: status (" + CustomerListQuery.Status.allCases.map(\.rawValue)
        .joined(separator: ", ") + "), product_id, country (the storefront, ISO 3166-1 alpha-3 such as USA), "
        + "environment (Production, Sandbox, Xcode, LocalTesting), first_seen_from and first_seen_to (YYYY-MM-DD, UTC "
        + "days, inclusive), min_net (an integer of milli-units of the reporting currency), sort (one of "
        + sorts.joined(separator: ", ") + "; - is descending; default -first_seen), cursor (next_cursor of the "
        + "previous page, with the same sort), limit (integer 1 to \(CustomerListQuery.maximumLimit), default "
        + "\(CustomerListQuery.defaultLimit))."

    /// `GET /v1/admin/projects/:id/customers?status=&product_id=&country=&environment=&first_seen_from=&first_seen_to=&min_net=&sort=&cursor=&limit=`.
    func list(_ request: Request) throws -> Response {
        let id = try PathParameters.projectId(request)
        let query = try Self.query(request, projectId: id)
        let store = try unwired(store, "The customer list is not configured.", "customerList")
        guard try projects.project(id: id) != nil else { throw HTTPError.projectNotFound }
        let page = try store.customers(query, now: now())
        var body = JSONBody(capacity: 256 + 320 * page.customers.count)
        body.object {
            $0.field("project_id", id.lowercasedText)
            $0.field("currency", page.settings.reportingCurrency)
            $0.field("proceeds_basis", page.settings.proceedsBasis)
            $0.objects("customers", page.customers) { customer, body in
                body.field("user_id", customer.userId)
                body.field("status", customer.status.rawValue)
                body.field("entitlements", customer.entitlements)
                body.field("first_seen", customer.firstSeen)
                body.field("last_purchase", customer.lastPurchase)
                body.field("net_milli", customer.netMilli)
                body.key("unconverted")
                body.object { body in
                    for currency in customer.unconverted.keys.sorted() {
                        body.key(named: currency)
                        body.int(customer.unconverted[currency] ?? 0)
                    }
                }
            }
            $0.field("next_cursor", page.next.map { Self.cursor($0, query) })
        }
        return Response.json(200, body.bytes)
    }

    /// The validated query: unknown parameters are ignored, a repeated one is the last.
    static func query(_ request: Request, projectId: UUID) throws(HTTPError) -> CustomerListQuery {
        var query = CustomerListQuery(projectId: projectId)
        var details: [ErrorDetail] = []
        var seenFrom: Int64?
        var seenTo: Int64?
        var cursor: String?
        for item in request.queryItems() {
            switch item.name {
            case "status":
                if let status = CustomerListQuery.Status(rawValue: item.value) {
                    query.status = status
                } else {
                    details.append(ErrorDetail(path: ["status"], message: "Invalid enum value. Expected "
                        + CustomerListQuery.Status.allCases.map { "'\($0.rawValue)'" }.joined(separator: " | ")))
                }
            case "product_id":
                query.productId = ChartsController.productIdParameter(item.value, &details) ?? query.productId
            case "country":
                query.country = ChartsController.countryParameter(item.value, &details) ?? query.country
            case "environment":
                query.environment = MetricsController.environment(item.value, &details) ?? query.environment
            case "first_seen_from", "first_seen_to":
                guard let day = MetricsController.parseDay(item.value) else {
                    details.append(ErrorDetail(path: [item.name], message: "Expected a date as YYYY-MM-DD"))
                    continue
                }
                if item.name == "first_seen_from" { seenFrom = day } else { seenTo = day }
            case "min_net":
                guard item.value.utf8.count <= 19, let value = Int64(item.value) else {
                    details.append(ErrorDetail(path: ["min_net"], message: "Expected an integer (milli-units)"))
                    continue
                }
                query.minNetMilli = value
            case "sort":
                guard sorts.contains(item.value),
                      let key = CustomerListQuery.SortKey(rawValue: String(item.value.drop { $0 == "-" })) else {
                    details.append(ErrorDetail(path: ["sort"], message: "Invalid enum value. Expected "
                        + sorts.map { "'\($0)'" }.joined(separator: " | ")))
                    continue
                }
                query.sort = key
                query.descending = item.value.hasPrefix("-")
            case "cursor":
                cursor = item.value
            case "limit":
                guard item.value.utf8.count <= 4, let value = Int(item.value), value >= 1,
                      value <= CustomerListQuery.maximumLimit else {
                    details.append(ErrorDetail(path: ["limit"],
                                               message: "Expected integer 1 to \(CustomerListQuery.maximumLimit)"))
                    continue
                }
                query.limit = value
            default:
                continue
            }
        }
        if let seenFrom, let seenTo, seenFrom > seenTo {
            details.append(ErrorDetail(path: ["first_seen_from"], message: "first_seen_from must not be after first_seen_to"))
        }
        query.firstSeenFrom = seenFrom.map { Date(timeIntervalSince1970: Double($0) * 86_400) }
        query.firstSeenTo = seenTo.map { Date(timeIntervalSince1970: Double($0 + 1) * 86_400) }
        // After the loop: a cursor belongs to one sort, wherever `sort` stands in the query.
        if let cursor {
            if let after = decodeCursor(cursor, query) {
                query.after = after
            } else {
                details.append(ErrorDetail(path: ["cursor"], message: "Invalid cursor (next_cursor of a page with the same sort)"))
            }
        }
        if !details.isEmpty { throw HTTPError.validation(details, suggestion: suggestion) }
        return query
    }

    /// The opaque cursor after `position`: base64url of `<sort>.<value>.<user id>` (`sort` as the query names it).
    static func cursor(_ position: CustomerListQuery.Position, _ query: CustomerListQuery) -> String {
        Base64.encodeURL(Array("\(sortName(query)).\(position.value).\(position.userId)".utf8))
    }

    static func decodeCursor(_ text: String, _ query: CustomerListQuery) -> CustomerListQuery.Position? {
        guard text.utf8.count <= 512,
              let bytes = Array(text.utf8).withUnsafeBufferPointer({ Base64.decodeURL($0) }),
              let plain = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = plain.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == sortName(query), parts[1].utf8.count <= 20, let value = Int64(parts[1]),
              GrantRules.problems(userId: String(parts[2])).isEmpty else { return nil }
        return CustomerListQuery.Position(value: value, userId: String(parts[2]))
    }

    private static func sortName(_ query: CustomerListQuery) -> String {
        (query.descending ? "-" : "") + query.sort.rawValue
    }
}
