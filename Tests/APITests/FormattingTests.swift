@testable import API
import Foundation
import XCTest

final class FormattingTests: XCTestCase {
    // The ISO 8601 table, the Double round trip and the 400-year check moved to PrimitivesTests.CalendarTests.

    func testJSONStringEscaping() {
        var body = JSONBody()
        body.string("a\"b\\c\n\t\r\u{01}\u{1f}é😀/")
        XCTAssertEqual(String(decoding: body.bytes, as: UTF8.self), #""a\"b\\c\n\t\r\u0001\u001fé😀/""#)
    }

    /// The typed writers place every comma (siblings, nested containers, array elements) and escape keys, the
    /// code's and the data's, like any string.
    func testTypedWritersPlaceCommasAndEscapeKeys() {
        var body = JSONBody()
        body.beginObject()
        body.field("a", "x")
        body.field("b", nil as String?)
        body.key("c")
        body.beginArray()
        body.beginObject()
        body.field("d", Int64(1))
        body.endObject()
        body.beginObject()
        body.field("e", true)
        body.field("f", [String]())
        body.endObject()
        body.string("g")
        body.null()
        body.endArray()
        body.key("h")
        body.beginObject()
        body.key(named: "q\"uote")
        body.int(7)
        body.endObject()
        body.field("tab\t", Date(timeIntervalSince1970: 0))
        body.null("i")
        body.endObject()
        XCTAssertEqual(String(decoding: body.bytes, as: UTF8.self),
                       #"{"a":"x","b":null,"c":[{"d":1},{"e":true,"f":[]},"g",null],"h":{"q\"uote":7},"#
                           + #""tab\t":"1970-01-01T00:00:00.000Z","i":null}"#)
    }

    func testContentTypeClassifier() {
        XCTAssertEqual(RequestBody.mediaType("application/json"), .json)
        XCTAssertEqual(RequestBody.mediaType("APPLICATION/JSON;charset=utf-8"), .json)
        XCTAssertEqual(RequestBody.mediaType("application/json ; charset=utf-8"), .json)
        XCTAssertEqual(RequestBody.mediaType(" application/merge-patch+json"), .json)
        XCTAssertEqual(RequestBody.mediaType("application/vnd.api+JSON; charset=utf-8"), .json)
        XCTAssertEqual(RequestBody.mediaType("application/+json"), .other, "a +json suffix needs a type name")
        XCTAssertEqual(RequestBody.mediaType("application/jsonp"), .other)
        XCTAssertEqual(RequestBody.mediaType("application/js"), .other)
        XCTAssertEqual(RequestBody.mediaType("text/json"), .other)
        XCTAssertEqual(RequestBody.mediaType("text/plain"), .other)
        XCTAssertEqual(RequestBody.mediaType("application/x-www-form-urlencoded"), .formURLEncoded)
        XCTAssertEqual(RequestBody.mediaType("Application/X-WWW-Form-Urlencoded; charset=UTF-8"), .formURLEncoded)
        XCTAssertEqual(RequestBody.mediaType(nil), .absent)
    }

    func testNULScan() {
        XCTAssertFalse(FieldValidator.containsNUL(""))
        XCTAssertFalse(FieldValidator.containsNUL(String(repeating: "eyJhbGciOi", count: 400)))
        XCTAssertTrue(FieldValidator.containsNUL("\u{0}"))
        XCTAssertTrue(FieldValidator.containsNUL(String(repeating: "a", count: 4000) + "\u{0}"))
        XCTAssertTrue(FieldValidator.containsNUL("é\u{0}🙂"))
        let bridged = NSString(string: "ab\u{0}c") as String   // not necessarily native UTF-8
        XCTAssertTrue(FieldValidator.containsNUL(bridged))
        XCTAssertFalse(FieldValidator.containsNUL(NSString(string: "abc") as String))
    }

    func testBearerParsing() {
        XCTAssertEqual(KeyAuth.bearerToken("Bearer abc"), "abc")
        XCTAssertEqual(KeyAuth.bearerToken("BEARER   abc  "), "abc")
        XCTAssertNil(KeyAuth.bearerToken("Bearer"))
        XCTAssertNil(KeyAuth.bearerToken("Bearer "))
        XCTAssertNil(KeyAuth.bearerToken("Bearerabc"))
        XCTAssertNil(KeyAuth.bearerToken("Bearer a b"))
        XCTAssertNil(KeyAuth.bearerToken("Basic abc"))
    }

    func testJWSShape() {
        XCTAssertTrue(ReceiptsController.hasThreeParts("a.b.c"))
        XCTAssertFalse(ReceiptsController.hasThreeParts(""))
        XCTAssertFalse(ReceiptsController.hasThreeParts(".."))
        for bad in ["abc", "a.b", "a.b.c.d", ".b.c", "a..c", "a.b.", "a.b.c.", "a.b..", "."] {
            XCTAssertFalse(ReceiptsController.hasThreeParts(bad), bad)
        }
        let long = String(repeating: "x", count: 3_000)
        XCTAssertTrue(ReceiptsController.hasThreeParts(long + "." + long + ".s"))
        XCTAssertTrue(ReceiptsController.hasThreeParts("é.🙂.c"))
    }
}
