@testable import Domain
import Foundation
import XCTest

/// The pure refund defense rules (what is sent, when, and what a failure becomes) and the operator helpers' input
/// rules, as tables without sockets, databases or clocks.
final class ConsumptionRulesTests: XCTestCase {
    private let asked = Date(timeIntervalSince1970: 1_800_000_000)

    private func request(transactionId: String? = "2000000000000001", type: String? = ConsumptionRules.autoRenewableType,
                         purchase: TimeInterval? = -10 * 86_400, expires: TimeInterval? = 20 * 86_400,
                         attempts: Int = 1) -> ConsumptionRequest {
        ConsumptionRequest(
            projectId: UUID(), environment: .sandbox, notificationUUID: UUID(), transactionId: transactionId,
            originalTransactionId: transactionId, requestedAt: asked, deadline: asked.addingTimeInterval(ConsumptionRules.window),
            attempts: attempts, leaseToken: UUID(), productType: type,
            purchaseDate: purchase.map { asked.addingTimeInterval($0) }, expiresDate: expires.map { asked.addingTimeInterval($0) })
    }

    func testDecisionOrderOffThenConsentThenDeadlineThenTransaction() {
        let consented = ConsumptionSettings(response: .auto, customerConsented: true, sampleContentProvided: true,
                                            refundPreference: .grantProrated)
        let soon = asked.addingTimeInterval(60)
        let late = asked.addingTimeInterval(ConsumptionRules.window)
        func status(_ settings: ConsumptionSettings, _ request: ConsumptionRequest, _ now: Date) -> ConsumptionStatus? {
            if case .finish(let outcome) = ConsumptionRules.decide(settings, request, now: now) { return outcome.status }
            return nil
        }
        XCTAssertEqual(status(ConsumptionSettings(), request(), soon), .skippedOff)
        XCTAssertEqual(status(ConsumptionSettings(response: .off, customerConsented: true), request(), late), .skippedOff)
        XCTAssertEqual(status(ConsumptionSettings(response: .auto), request(), soon), .skippedNoConsent)
        XCTAssertEqual(status(ConsumptionSettings(response: .auto), request(transactionId: nil), late), .skippedNoConsent)
        XCTAssertEqual(status(consented, request(), late), .expired)
        XCTAssertEqual(status(consented, request(transactionId: nil), soon), .failed)
        XCTAssertEqual(status(consented, request(transactionId: ""), soon), .failed)
        XCTAssertEqual(ConsumptionRules.decide(consented, request(), now: soon), .send(
            transactionId: "2000000000000001",
            ConsumptionInformation(deliveryStatus: "DELIVERED", consumptionPercentage: 33_333, sampleContentProvided: true,
                                   refundPreference: "GRANT_PRORATED")))
    }

    func testConsumptionPercentageOnlyForAutoRenewableSubscriptions() {
        let day: TimeInterval = 86_400
        let cases: [(String?, TimeInterval?, TimeInterval?, Int?)] = [
            (ConsumptionRules.autoRenewableType, -10 * day, 20 * day, 33_333),
            (ConsumptionRules.autoRenewableType, 0, 30 * day, 0),
            (ConsumptionRules.autoRenewableType, -30 * day, 0, 100_000),
            (ConsumptionRules.autoRenewableType, -40 * day, -10 * day, 100_000),   // asked after expiry: clamped
            (ConsumptionRules.autoRenewableType, 1 * day, 31 * day, 0),            // asked before the period: clamped
            (ConsumptionRules.autoRenewableType, -15 * day, 15 * day, 50_000),
            (ConsumptionRules.autoRenewableType, nil, 20 * day, nil),
            (ConsumptionRules.autoRenewableType, -10 * day, nil, nil),
            (ConsumptionRules.autoRenewableType, 5 * day, 5 * day, nil),            // no period
            (ConsumptionRules.autoRenewableType, 5 * day, 1 * day, nil),
            ("Consumable", -10 * day, 20 * day, nil),
            ("Non-Consumable", -10 * day, nil, nil),
            ("Non-Renewing Subscription", -10 * day, 20 * day, nil),
            (nil, -10 * day, 20 * day, nil),
        ]
        for (type, purchase, expires, expected) in cases {
            XCTAssertEqual(ConsumptionRules.consumptionPercentage(
                productType: type, purchaseDate: purchase.map { asked.addingTimeInterval($0) },
                expiresDate: expires.map { asked.addingTimeInterval($0) }, at: asked), expected,
                "\(type ?? "nil") \(String(describing: purchase)) \(String(describing: expires))")
        }
    }

    func testRetryDelayDoublesWithJitterUpToTheMaximumAndHonoursRetryAfter() {
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 1, base: 60, maximum: 3600, random: 0), 30)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 1, base: 60, maximum: 3600, random: 1), 60)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 3, base: 60, maximum: 3600, random: 1), 240)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 10, base: 60, maximum: 3600, random: 1), 3600)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 1000, base: 60, maximum: 3600, random: 0.5), 2700)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 0, base: 60, maximum: 3600, random: 0), 30)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 1, base: 60, maximum: 3600, random: 0, retryAfter: 120), 120)
        XCTAssertEqual(ConsumptionRules.retryDelay(attempt: 1, base: 60, maximum: 3600, random: 7), 60)   // clamped
    }

    func testAppleFailuresBecomeFinalOrRetriedWithinTheWindow() {
        let now = asked.addingTimeInterval(60)
        let r = request()
        func outcome(_ kind: AppStoreAPIError.Kind, code: Int? = nil, delay: TimeInterval = 30) -> ConsumptionOutcome {
            ConsumptionRules.outcome(of: AppStoreAPIError(kind, reason: "x", httpStatus: 400, appleErrorCode: code), r,
                                     now: now, delay: delay)
        }
        XCTAssertEqual(outcome(.rejected, code: 4000183).status, .rejected)
        if case .rejected(_, let code) = outcome(.rejected, code: 4000183) { XCTAssertEqual(code, 4000183) } else { XCTFail() }
        XCTAssertEqual(outcome(.notFound).status, .rejected)
        XCTAssertEqual(outcome(.unauthorized).status, .rejected)
        XCTAssertEqual(outcome(.invalidRequest).status, .failed)
        XCTAssertEqual(outcome(.unavailable), .retry(at: now.addingTimeInterval(30), reason: "unavailable: x (HTTP 400)"))
        XCTAssertEqual(outcome(.invalidResponse).status, .pending)
        XCTAssertEqual(outcome(.unavailable, delay: ConsumptionRules.window).status, .expired)
    }

    func testSettingsChangesApplyOnlyWhatIsGiven() {
        let start = ConsumptionSettings(response: .auto, customerConsented: true, sampleContentProvided: true,
                                        refundPreference: .decline)
        XCTAssertEqual(ConsumptionSettings.Changes().applied(to: start), start)
        var clear = ConsumptionSettings.Changes()
        clear.refundPreference = .some(nil)
        XCTAssertNil(clear.applied(to: start).refundPreference)
        XCTAssertEqual(clear.applied(to: start).response, .auto)
        var off = ConsumptionSettings.Changes()
        off.response = .off
        off.customerConsented = false
        XCTAssertEqual(off.applied(to: start), ConsumptionSettings(response: .off, customerConsented: false,
                                                                    sampleContentProvided: true, refundPreference: .decline))
    }

    func testExtensionInputRulesAndTestEnvironmentDefault() throws {
        XCTAssertEqual(AppStoreActions.problems(extendByDays: 1, reasonCode: 0), [])
        XCTAssertEqual(AppStoreActions.problems(extendByDays: 90, reasonCode: 3), [])
        XCTAssertEqual(AppStoreActions.problems(extendByDays: 0, reasonCode: -1), [
            FieldProblem(path: ["extend_by_days"], message: "Number must be greater than or equal to 1"),
            FieldProblem(path: ["reason_code"], message: "Number must be greater than or equal to 0"),
        ])
        XCTAssertEqual(AppStoreActions.problems(extendByDays: 91, reasonCode: 4).map(\.path), [["extend_by_days"], ["reason_code"]])

        func project(_ environments: [StoreEnvironment]) -> Project {
            Project(id: UUID(), name: "p", bundleId: "com.example", environments: environments, publicKey: "pk_x",
                    createdAt: Date(), updatedAt: Date())
        }
        XCTAssertEqual(try AppStoreActions.testEnvironment(nil, project: project([.sandbox, .production])), .production)
        XCTAssertEqual(try AppStoreActions.testEnvironment(nil, project: project([.sandbox])), .sandbox)
        XCTAssertEqual(try AppStoreActions.testEnvironment(.sandbox, project: project([.production, .sandbox])), .sandbox)
        XCTAssertThrowsError(try AppStoreActions.testEnvironment(.production, project: project([.sandbox])))
        XCTAssertThrowsError(try AppStoreActions.testEnvironment(.xcode, project: project([.sandbox])))
        XCTAssertThrowsError(try AppStoreActions.testEnvironment(nil, project: project([])))
    }
}
