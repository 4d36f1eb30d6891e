import Domain
import Foundation
@testable import Storage
import XCTest

/// The run's problems column: written by the JSON module's escaper, read back through Foundation (no database).
final class ReconcileErrorsJSONTests: XCTestCase {
    func testProblemsSurviveTheRoundTripWithEveryEscape() {
        let problems = [
            ReconcileProblem(stage: "lookup", environment: .sandbox, originalTransactionId: "2000000123",
                             message: "quote \" backslash \\ newline \n tab \t cr \r bell \u{07} nul \u{0} é 😀 </"),
            ReconcileProblem(stage: "", environment: nil, originalTransactionId: nil, message: ""),
        ]
        let text = PostgresReconciliationStore.errorsJSON(problems)
        XCTAssertEqual(PostgresReconciliationStore.errors(fromJSON: text), problems)
        XCTAssertTrue(text.contains(#"quote \" backslash \\ newline \n tab \t cr \r bell \u0007 nul \u0000 é 😀 </"#), text)
        XCTAssertEqual(PostgresReconciliationStore.errorsJSON([]), "[]")
    }
}
