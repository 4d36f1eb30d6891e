// libFuzzer entry for HTTPClient's response parser (built by bench/fuzz-http-client).
// Input: first byte = split point selector and HEAD flag, rest = bytes from a hostile server.
// Checks, beyond "no crash": the body never exceeds the limit, and feeding the bytes whole or split
// in two (and then ending the stream) gives the same verdict: incremental parsing must not change it.

private let limits = ResponseParser.Limits(maxHeadBytes: 512, maxHeaderCount: 8, maxBodyBytes: 1024)

private func verdict(_ chunks: [ArraySlice<UInt8>], method: String) -> String {
    var parser = ResponseParser(limits: limits, requestMethod: method)
    do {
        // Every chunk is fed even after completion: bytes beyond the response must make the connection
        // unreusable however they were split.
        var complete: HTTPClientResponse?
        for chunk in chunks {
            if let response = try parser.feed(chunk), complete == nil { complete = response }
        }
        if let response = complete {
            precondition(response.body.count <= limits.maxBodyBytes, "body over the limit")
            return "done \(response.status) \(response.headers.count) \(response.body) \(parser.connectionReusable)"
        }
        let response = try parser.finish()
        precondition(response.body.count <= limits.maxBodyBytes, "body over the limit")
        return "eof \(response.status) \(response.headers.count) \(response.body)"
    } catch {
        return "fail \(error.code)"
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPClientParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let method = selector & 0x80 != 0 ? "HEAD" : "GET"
    let split = bytes.isEmpty ? 0 : Int(selector & 0x7F) % (bytes.count + 1)
    let whole = verdict([bytes[...]], method: method)
    let halves = verdict([bytes[..<split], bytes[split...]], method: method)
    precondition(whole == halves, "split at \(split) changed the verdict: \(whole) vs \(halves)")
    return 0
}
