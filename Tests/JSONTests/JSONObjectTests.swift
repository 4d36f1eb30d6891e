import XCTest
@testable import JSON

final class JSONObjectTests: XCTestCase {
    func testLiteralKeepsOrderAndReplacesRepeats() {
        let object: JSONObject = ["b": 1, "a": 2, "b": 3]
        XCTAssertEqual(object.keys, ["b", "a"])
        XCTAssertEqual(object["b"], 3)
        XCTAssertEqual(object.count, 2)
        XCTAssertEqual(object.values, [3, 2])
    }

    func testSubscriptSetAppendsReplacesAndRemoves() {
        var object = JSONObject()
        XCTAssertTrue(object.isEmpty)
        object["x"] = 1
        object["y"] = nil
        object["z"] = .null
        object["x"] = "one"
        XCTAssertEqual(object.keys, ["x", "z"])
        XCTAssertEqual(object["x"], "one")
        XCTAssertTrue(object.contains(key: "z"))
        XCTAssertEqual(object["z"]?.isNull, true)
        object["x"] = nil
        XCTAssertEqual(object.keys, ["z"])
        XCTAssertFalse(object.contains(key: "x"))
    }

    func testLargeObjectsStayConsistentThroughIndex() {
        var object = JSONObject()
        for k in 0..<100 { object["k\(k)"] = JSONValue(k) }
        XCTAssertEqual(object.count, 100)
        XCTAssertEqual(object["k77"], 77)
        object["k10"] = nil
        XCTAssertNil(object["k10"])
        XCTAssertEqual(object["k11"], 11)
        XCTAssertEqual(object["k99"], 99)
        object["k50"] = "fifty"
        XCTAssertEqual(object.keys.count, 99)
        XCTAssertEqual(object.keys[49], "k50")
        XCTAssertEqual(object["k50"], "fifty")
        for k in 0..<90 { object["k\(k)"] = nil }
        XCTAssertEqual(object.keys, (90..<100).map { "k\($0)" })
        XCTAssertEqual(object["k95"], 95)
    }

    func testEqualityIgnoresOrderButOrderedEqualsDoesNot() {
        let ab: JSONObject = ["a": 1, "b": [true]]
        let ba: JSONObject = ["b": [true], "a": 1]
        XCTAssertEqual(ab, ba)
        XCTAssertFalse(ab.orderedEquals(ba))
        XCTAssertTrue(ab.orderedEquals(["a": 1, "b": [true]]))
        XCTAssertNotEqual(ab, ["a": 1, "b": [false]])
        XCTAssertNotEqual(ab, ["a": 1])
        XCTAssertNotEqual(ab, ["a": 1, "c": [true]])
    }

    func testIterationYieldsMembersInOrder() throws {
        let object = try XCTUnwrap(JSONParser.parse(#"{"z":1,"y":2,"x":3}"#).objectValue)
        XCTAssertEqual(object.map(\.key), ["z", "y", "x"])
        XCTAssertEqual(object.map(\.value), [1, 2, 3])
    }
}
