// libFuzzer entry for the JSON module, compiled together with Sources/JSON/*.swift by
// bench/fuzz-json. Any trap here or under AddressSanitizer is a real bug:
// * the parser must never crash, whatever the bytes;
// * whatever it accepts, the writer must print in a form it accepts again, equal to the first
//   parse, and printing must be a fixed point (compact and pretty);
// * number conversions must agree with the standard library where both apply.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let limits = JSONParser.Limits(maxDepth: 48, maxBytes: 1 << 16, maxStringBytes: 1 << 14, maxNumberBytes: 64)
    let value: JSONValue
    do {
        value = try JSONParser.parse(input, limits: limits)
    } catch {
        // Offsets point into the input (or just past it, for a premature end).
        guard error.offset >= 0, error.offset <= size else { fatalError("offset out of range: \(error)") }
        return 0
    }
    let compact = value.serialized()
    let reparsed: JSONValue
    do {
        reparsed = try JSONParser.parse(compact, limits: JSONParser.Limits(maxDepth: 48, maxBytes: 1 << 20, maxStringBytes: 1 << 20))
    } catch {
        fatalError("writer output rejected: \(error)")
    }
    guard reparsed == value else { fatalError("round trip changed the value") }
    guard reparsed.serialized() == compact else { fatalError("compact output is not a fixed point") }
    let pretty = value.serialized(pretty: true)
    guard let prettyParsed = try? JSONParser.parse(pretty, limits: JSONParser.Limits(maxDepth: 48, maxBytes: 1 << 22, maxStringBytes: 1 << 20)),
          prettyParsed == value, prettyParsed.serialized(pretty: true) == pretty
    else { fatalError("pretty round trip failed") }
    checkNumbers(in: value)
    return 0
}

private func checkNumbers(in value: JSONValue) {
    switch value {
    case .number(let number):
        let literal = number.literal
        let exact = number.int64Value
        let truncated = number.millisecondsValue
        // A plain integer literal must convert exactly like the standard library does.
        if !literal.contains("."), !literal.contains("e"), !literal.contains("E") {
            guard exact == Int64(literal) else { fatalError("int64Value \(String(describing: exact)) for \(literal)") }
        }
        // Exact integers are their own truncation.
        if let exact { guard truncated == exact else { fatalError("milliseconds differ for \(literal)") } }
        if let truncated, let double = number.doubleValue {
            // Truncation toward zero differs from the double by less than 1 (plus rounding).
            let difference = (double - Double(truncated)).magnitude
            guard difference < 1 + double.magnitude.ulp * 2 else { fatalError("milliseconds \(truncated) vs double \(double) for \(literal)") }
        }
        guard JSONNumber(literal: literal) == number else { fatalError("literal not accepted back: \(literal)") }
    case .array(let elements):
        for element in elements { checkNumbers(in: element) }
    case .object(let object):
        var rebuilt = JSONObject()
        for (key, member) in object {
            guard object[key] == member else { fatalError("lookup of \(key) disagrees with iteration") }
            rebuilt[key] = member
            checkNumbers(in: member)
        }
        // Building the same members through the mutation API gives the same object, same order.
        guard rebuilt.orderedEquals(object), rebuilt == object else { fatalError("rebuilt object differs") }
        if let first = object.keys.first {
            rebuilt[first] = nil
            guard rebuilt.count == object.count - 1, rebuilt[first] == nil else { fatalError("removal failed") }
        }
    default:
        break
    }
}
