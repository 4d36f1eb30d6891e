import XCTest
@testable import JSON
import Synchronization

final class JSONParserTests: XCTestCase {
    func testScalarsParseToExactValues() throws {
        XCTAssertEqual(try JSONParser.parse("null"), .null)
        XCTAssertEqual(try JSONParser.parse("true"), .bool(true))
        XCTAssertEqual(try JSONParser.parse("false"), .bool(false))
        XCTAssertEqual(try JSONParser.parse("\"hi\""), .string("hi"))
        XCTAssertEqual(try JSONParser.parse("-12.5e+3").numberValue?.literal, "-12.5e+3")
        XCTAssertEqual(try JSONParser.parse(" \t\r\n0 \n").int64Value, 0)
    }

    func testContainersKeepOrderAndValues() throws {
        let value = try JSONParser.parse(#"{"b":[1,"x",null,true,{}],"a":{"c":[]},"z":-0.5}"#)
        let object = try XCTUnwrap(value.objectValue)
        XCTAssertEqual(object.keys, ["b", "a", "z"])
        XCTAssertEqual(value["b"], [1, "x", nil, true, .object(JSONObject())])
        XCTAssertEqual(value["b"]?[1]?.stringValue, "x")
        XCTAssertNil(value["b"]?[5])
        XCTAssertNil(value["b"]?[-1])
        XCTAssertEqual(value["a"]?["c"], .array([]))
        XCTAssertEqual(value["z"]?.doubleValue, -0.5)
        XCTAssertNil(value["missing"])
        XCTAssertNil(value["b"]?["key-on-array"])
        XCTAssertEqual(value["b"]?[2]?.isNull, true)
    }

    func testAccessorsReturnNilForOtherTypes() throws {
        let value: JSONValue = "text"
        XCTAssertNil(value.boolValue)
        XCTAssertNil(value.int64Value)
        XCTAssertNil(value.doubleValue)
        XCTAssertNil(value.arrayValue)
        XCTAssertNil(value.objectValue)
        XCTAssertFalse(value.isNull)
        XCTAssertEqual(value.stringValue, "text")
        XCTAssertNil(JSONValue.bool(true).stringValue)
    }

    func testStringEscapesDecode() throws {
        let value = try JSONParser.parse(#""a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20AC\ud83d\ude00\u0000z""#)
        XCTAssertEqual(value.stringValue, "a\"b\\c/d\u{08}\u{0C}\n\r\tAé€😀\u{0}z")
    }

    func testRawUTF8StringsPassThrough() throws {
        let text = "\"Zürich – 東京 – 😀 – \u{7F}\""
        XCTAssertEqual(try JSONParser.parse(text).stringValue, "Zürich – 東京 – 😀 – \u{7F}")
        // Long strings exercise the 8-byte scanning path, with a hit at every alignment.
        for k in 0..<17 {
            let body = String(repeating: "a", count: k) + "\\n" + String(repeating: "b", count: 20)
            XCTAssertEqual(try JSONParser.parse("\"\(body)\"").stringValue,
                           String(repeating: "a", count: k) + "\n" + String(repeating: "b", count: 20))
        }
    }

    func testInputFormsAgree() throws {
        let text = #"{"k":[1,2,"é"]}"#
        let expected: JSONValue = ["k": [1, 2, "é"]]
        XCTAssertEqual(try JSONParser.parse(text), expected)
        XCTAssertEqual(try JSONParser.parse(Array(text.utf8)), expected)
        XCTAssertEqual(try JSONParser.parse(Array(text.utf8)[...]), expected)
        XCTAssertEqual(try JSONParser.parse(Substring(text).utf8), expected)
        XCTAssertEqual(try JSONParser.parse(Data(text.utf8)), expected)
        XCTAssertEqual(try Array(text.utf8).withUnsafeBytes { try JSONParser.parse($0) }, expected)
        // A non-contiguous collection is copied.
        XCTAssertEqual(try JSONParser.parse(text.utf8.lazy.map { $0 }), expected)
    }

    func testDuplicateKeysRejectedSmallAndLarge() {
        assertRejects(#"{"a":1,"b":2,"a":3}"#, .duplicateKey, at: 13)
        // Same key spelled with an escape is still the same key.
        assertRejects(#"{"a":1,"\u0061":2}"#, .duplicateKey, at: 7)
        // Past the index threshold the check switches to hashing; still caught.
        let many = (0..<100).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        XCTAssertEqual(try JSONParser.parse("{\(many)}")["k99"]?.int64Value, 99)
        let duplicate = "{\(many),\"k7\":0}"
        assertRejects(duplicate, .duplicateKey, at: duplicate.utf8.count - 7)
        // Duplicate keys in *different* objects are fine.
        XCTAssertNoThrow(try JSONParser.parse(#"[{"a":1},{"a":2},{"x":{"a":3}}]"#))
    }

    func testDepthLimitExactlyAtAndPast() throws {
        func nested(_ n: Int) -> String { String(repeating: "[", count: n) + String(repeating: "]", count: n) }
        XCTAssertNoThrow(try JSONParser.parse(nested(64)))
        assertRejects(nested(65), .tooDeep, at: 64)
        let objects = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        assertRejects(objects, .tooDeep, at: 64 * 5)
        let limits = JSONParser.Limits(maxDepth: 3)
        XCTAssertNoThrow(try JSONParser.parse(nested(3), limits: limits))
        assertRejects(nested(4), .tooDeep, at: 3, limits: limits)
        XCTAssertEqual(try JSONParser.parse("1", limits: JSONParser.Limits(maxDepth: 0)).int64Value, 1)
        assertRejects("[]", .tooDeep, at: 0, limits: JSONParser.Limits(maxDepth: 0))
        // A huge maxDepth is capped so recursion cannot exhaust the stack.
        let unbounded = JSONParser.Limits(maxDepth: .max)
        XCTAssertNoThrow(try JSONParser.parse(nested(512), limits: unbounded))
        assertRejects(nested(100_000), .tooDeep, at: 512, limits: unbounded)
    }

    func testSizeLimits() {
        let limits = JSONParser.Limits(maxBytes: 10, maxStringBytes: 4, maxNumberBytes: 3)
        assertRejects("[1,2,3,4,5,6]", .tooLarge, at: 10, limits: limits)
        XCTAssertEqual(try JSONParser.parse("\"abcd\"", limits: limits).stringValue, "abcd")
        assertRejects("[\"abcde\"]", .tooLarge, at: 1, limits: limits)
        assertRejects("[\"ab\\nde\"]", .tooLarge, at: 1, limits: limits)
        assertRejects("{\"abcde\":}", .tooLarge, at: 1, limits: limits)
        XCTAssertEqual(try JSONParser.parse("-12", limits: limits).int64Value, -12)
        assertRejects("[1234]", .tooLarge, at: 1, limits: limits)
        XCTAssertNoThrow(try JSONParser.parse(Array("[1]".utf8)[...], limits: JSONParser.Limits(maxBytes: 3)))
        assertRejects(Array("[1] ".utf8).lazy.map { $0 }, .tooLarge, at: 3, limits: JSONParser.Limits(maxBytes: 3))
    }

    /// Every rejection rule with its code and offset.
    func testRejectionTable() {
        let cases: [(String, JSONError.Code, Int, UInt)] = [
            ("", .unexpectedEnd, 0, #line),
            ("   ", .unexpectedEnd, 3, #line),
            ("[", .unexpectedEnd, 1, #line),
            ("[1", .unexpectedEnd, 2, #line),
            ("[1,", .unexpectedEnd, 3, #line),
            (#"{"a""#, .unexpectedEnd, 4, #line),
            (#"{"a":"#, .unexpectedEnd, 5, #line),
            (#"{"a":1"#, .unexpectedEnd, 6, #line),
            (#"{"#, .unexpectedEnd, 1, #line),
            (#""abc"#, .unexpectedEnd, 4, #line),
            (#""abcdefghijklmnop"#, .unexpectedEnd, 17, #line),
            ("tru", .unexpectedEnd, 3, #line),
            ("-", .unexpectedEnd, 1, #line),
            ("1.", .unexpectedEnd, 2, #line),
            ("1e", .unexpectedEnd, 2, #line),
            ("1e+", .unexpectedEnd, 3, #line),
            (#""\"#, .unexpectedEnd, 2, #line),
            (#""\u12"#, .unexpectedEnd, 5, #line),
            ("[1,]", .unexpectedCharacter, 3, #line),
            (#"{"a":1,}"#, .unexpectedCharacter, 7, #line),
            ("[1 2]", .unexpectedCharacter, 3, #line),
            (#"{"a" 1}"#, .unexpectedCharacter, 5, #line),
            (#"{"a":1 "b":2}"#, .unexpectedCharacter, 7, #line),
            ("{a:1}", .unexpectedCharacter, 1, #line),
            ("{'a':1}", .unexpectedCharacter, 1, #line),
            ("[,1]", .unexpectedCharacter, 1, #line),
            ("trUe", .unexpectedCharacter, 2, #line),
            ("nul1", .unexpectedCharacter, 3, #line),
            ("NaN", .unexpectedCharacter, 0, #line),
            ("Infinity", .unexpectedCharacter, 0, #line),
            ("[1]//c", .trailingData, 3, #line),
            ("/*c*/1", .unexpectedCharacter, 0, #line),
            ("+1", .unexpectedCharacter, 0, #line),
            (".5", .unexpectedCharacter, 0, #line),
            ("\u{0C}1", .unexpectedCharacter, 0, #line),       // form feed is not JSON whitespace
            ("\u{A0}1", .unexpectedCharacter, 0, #line),       // nor is NBSP (C2 A0)
            ("-Infinity", .invalidNumber, 1, #line),
            ("-a", .invalidNumber, 1, #line),
            ("01", .invalidNumber, 1, #line),
            ("-012", .invalidNumber, 2, #line),
            ("00", .invalidNumber, 1, #line),
            ("1.e3", .invalidNumber, 2, #line),
            ("1.5e+x", .invalidNumber, 5, #line),
            ("[1.]", .invalidNumber, 3, #line),
            ("1 2", .trailingData, 2, #line),
            ("{}{}", .trailingData, 2, #line),
            ("1x", .trailingData, 1, #line),
            ("0x10", .trailingData, 1, #line),
            ("\"a\" \"b\"", .trailingData, 4, #line),
            ("\u{FEFF}{}", .byteOrderMark, 0, #line),
            (#""\x41""#, .invalidEscape, 1, #line),
            (#""ab\'""#, .invalidEscape, 3, #line),
            (#""\u12G4""#, .invalidEscape, 1, #line),
            (#""\U0041""#, .invalidEscape, 1, #line),
            (#""\ud800""#, .loneSurrogate, 1, #line),
            (#""\udc00\ud800""#, .loneSurrogate, 1, #line),
            (#""\ud800\n""#, .loneSurrogate, 1, #line),
            (#""x\ud83d\u0041""#, .loneSurrogate, 2, #line),
            (#""\ud83d\ud83d""#, .loneSurrogate, 1, #line),
            (#""\ud83d\uZZZZ""#, .invalidEscape, 7, #line),
            ("\"a\tb\"", .controlCharacter, 2, #line),
            ("\"a\nb\"", .controlCharacter, 2, #line),
            ("\"\u{0}\"", .controlCharacter, 1, #line),
            ("\"0123456789\u{1F}\"", .controlCharacter, 11, #line),
        ]
        for (input, code, offset, line) in cases {
            assertRejects(input, code, at: offset, line: line)
        }
    }

    func testInvalidUTF8Rejected() {
        let cases: [([UInt8], Int, UInt)] = [
            ([0x22, 0x80, 0x22], 1, #line),                     // lone continuation
            ([0x22, 0x61, 0xC0, 0xAF, 0x22], 2, #line),         // overlong '/'
            ([0x22, 0xC1, 0xBF, 0x22], 1, #line),               // overlong
            ([0x22, 0xE0, 0x80, 0xAF, 0x22], 1, #line),         // overlong 3-byte
            ([0x22, 0xED, 0xA0, 0x80, 0x22], 1, #line),         // encoded surrogate U+D800
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1, #line),   // > U+10FFFF
            ([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], 1, #line),   // invalid lead
            ([0x22, 0xFF, 0x22], 1, #line),
            ([0x22, 0xC3, 0x22], 1, #line),                     // truncated by the quote
            ([0x22, 0xE2, 0x82], 1, #line),                     // truncated by the end
            ([0x22, 0xF0, 0x9F, 0x98, 0x41, 0x22], 1, #line),   // bad 4th byte
            (Array("\"aaaaaaaaaaaa".utf8) + [0xE9, 0x22], 13, #line),
        ]
        for (bytes, offset, line) in cases {
            assertRejects(bytes, .invalidUTF8, at: offset, line: line)
        }
        // Outside strings any non-ASCII byte is just an unexpected character.
        assertRejects([0x5B, 0xC3, 0xA9, 0x5D], .unexpectedCharacter, at: 1)
    }

    func testErrorDescriptionNamesRuleAndOffset() {
        XCTAssertEqual(JSONError(.duplicateKey, at: 12).description, "invalid JSON at byte 12: duplicate object key")
        do {
            _ = try JSONParser.parse("[1,]")
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error.description, "invalid JSON at byte 3: unexpected character")
        }
    }
}

func assertRejects(
    _ input: String, _ code: JSONError.Code, at offset: Int, limits: JSONParser.Limits = .init(),
    file: StaticString = #filePath, line: UInt = #line
) {
    assertRejects(Array(input.utf8), code, at: offset, limits: limits, file: file, line: line)
}

func assertRejects(
    _ input: some Collection<UInt8>, _ code: JSONError.Code, at offset: Int, limits: JSONParser.Limits = .init(),
    file: StaticString = #filePath, line: UInt = #line
) {
    do {
        let value = try JSONParser.parse(input, limits: limits)
        XCTFail("accepted \(String(decoding: Array(input), as: UTF8.self).debugDescription) as \(value)", file: file, line: line)
    } catch {
        XCTAssertEqual(error.code, code, "\(String(decoding: Array(input), as: UTF8.self).debugDescription)", file: file, line: line)
        XCTAssertEqual(error.offset, offset, "\(String(decoding: Array(input), as: UTF8.self).debugDescription)", file: file, line: line)
    }
}

final class JSONStackDepthTests: XCTestCase {
    /// Parses (and re-serializes) the deepest documents `limits` allows on a thread with
    /// `stackKiB` of stack; returns [arrays parsed, objects parsed, objects written back].
    private func parseDeepest(limits: JSONParser.Limits, stackKiB: Int) -> [Bool] {
        let depth = min(limits.maxDepth, JSONParser.Limits.depthCeiling)
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let objects = String(repeating: #"{"k":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        let results = Mutex<[Bool]>([])
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let ok = [arrays, objects].map { (try? JSONParser.parse($0, limits: limits)) != nil }
            let written = (try? JSONParser.parse(objects, limits: limits))?.serialized().count == objects.utf8.count
            results.withLock { $0 = ok + [written] }
            done.signal()
        }
        thread.stackSize = stackKiB * 1024
        thread.start()
        done.wait()
        return results.withLock { $0 }
    }

    /// Default limits on a small worker stack, even in a debug build (~2 KiB per level there).
    func testDefaultDepthFitsIn256KiBStack() {
        XCTAssertEqual(parseDeepest(limits: JSONParser.Limits(), stackKiB: 256), [true, true, true])
    }

    /// The ceiling (512 levels) on a 4 MiB stack: release builds need ~0.5 KiB per level
    /// (measured: fine at 256 KiB), debug builds ~2 KiB (fine at 2 MiB).
    func testDepthCeilingFitsIn4MiBStack() {
        let limits = JSONParser.Limits(maxDepth: JSONParser.Limits.depthCeiling)
        XCTAssertEqual(parseDeepest(limits: limits, stackKiB: 4096), [true, true, true])
    }
}
