import XCTest
@testable import JSON

final class JSONWriterTests: XCTestCase {
    func testCompactOutputExactBytes() {
        let value: JSONValue = ["b": [1, "two", nil, true, false], "a": ["x": 1.5], "e": [:], "f": []]
        XCTAssertEqual(value.serializedString(), #"{"b":[1,"two",null,true,false],"a":{"x":1.5},"e":{},"f":[]}"#)
    }

    func testPrettyOutputExactBytes() {
        let value: JSONValue = ["b": [1, [:]], "a": ["x": "y"], "e": []]
        XCTAssertEqual(value.serializedString(pretty: true), """
        {
          "b": [
            1,
            {}
          ],
          "a": {
            "x": "y"
          },
          "e": []
        }
        """)
        XCTAssertEqual(JSONValue(7).serializedString(pretty: true), "7")
    }

    func testStringEscaping() {
        let value: JSONValue = .string("q\"b\\s/ é😀 \u{0}\u{1}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1F}\u{7F}")
        XCTAssertEqual(value.serializedString(), "\"q\\\"b\\\\s/ é😀 \\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\u{7F}\"")
        XCTAssertEqual(Array(JSONValue.string("é").serialized()), [0x22, 0xC3, 0xA9, 0x22])
        XCTAssertEqual(JSONValue.string("").serializedString(), #""""#)
    }

    /// Escapes at every position relative to the 8-byte scanning window, against a plain reference.
    func testEscapingAtEveryAlignmentMatchesReference() {
        func reference(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\u{1}": out += "\\u0001"
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        for k in 0..<17 {
            for special in ["\"", "\\", "\n", "\u{1}", "é", "😀"] {
                let text = String(repeating: "a", count: k) + special + "é" + String(repeating: "b", count: 17 - k) + special
                XCTAssertEqual(JSONValue.string(text).serializedString(), reference(text), "\(k) \(special.debugDescription)")
                XCTAssertEqual(try JSONParser.parse(JSONValue.string(text).serialized()).stringValue, text)
            }
        }
    }

    func testKeysAreEscapedToo() {
        let value: JSONValue = ["a\"\n": 1]
        XCTAssertEqual(value.serializedString(), #"{"a\"\n":1}"#)
    }

    func testWriterAppendsSeveralValues() {
        var writer = JSONWriter(reservingCapacity: 16)
        writer.write([1, 2])
        writer.writeString("x")
        XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), #"[1,2]"x""#)
    }

    func testRoundTripsAreLosslessAndFixedPoints() throws {
        let documents = [
            #"{"transactionId":"2000001024998954","price":1990,"expiresDate":1759302732000,"x":[1.50,-0,1E+3]}"#,
            #"[null,true,false,"\u00e9\ud83d\ude00\n\"\\/",{"":{"":[]}}]"#,
            #""plain""#,
            "-12.5e-7",
        ]
        for text in documents {
            let value = try JSONParser.parse(text)
            let compact = value.serialized()
            XCTAssertEqual(try JSONParser.parse(compact), value, text)
            XCTAssertEqual(try JSONParser.parse(compact).serialized(), compact, text)
            let pretty = value.serialized(pretty: true)
            XCTAssertEqual(try JSONParser.parse(pretty), value, text)
        }
        // Escapes that need none are normalized; order and numbers are preserved.
        XCTAssertEqual(try JSONParser.parse(#"{"z":"\/\u0041","a":1.50}"#).serializedString(), #"{"z":"/A","a":1.50}"#)
    }

    func testDescriptionIsCompactJSON() {
        let value: JSONValue = ["k": [1, "v"]]
        XCTAssertEqual(value.description, #"{"k":[1,"v"]}"#)
        XCTAssertEqual(value.objectValue?.description, #"{"k":[1,"v"]}"#)
    }
}
