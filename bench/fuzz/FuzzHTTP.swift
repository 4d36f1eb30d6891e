// libFuzzer entry for the HTTP request parser and router (built by bench/fuzz-http).
// Checks, beyond "no crash": consumed never exceeds the input, and feeding the same bytes whole
// or split in two gives the same outcome (incremental parsing must not change the verdict).

private let limits = ParserLimits(maxRequestLineBytes: 256, maxHeaderBytes: 512, maxHeaderCount: 8,
                                  maxBodyBytes: 1024, maxChunkLineBytes: 64,
                                  maxChunkedBodyWireBytes: 1536)

private let router: Router = {
    var r = Router()
    let ok: Handler = { _ in .json(200, Array("{}".utf8)) }
    r.add(.get, "/healthz", ok)
    r.add(.get, "/v1/receipts/:publicKey", ok)
    r.add(.post, "/v1/receipts/:publicKey", ok)
    r.add(.get, "/v1/subscriptions/:publicKey/:user", ok)
    r.add(.get, "/v1/subscriptions/:publicKey/current", ok)
    return r
}()

private func summary(_ outcome: ParseOutcome) -> String {
    switch outcome {
    case .needMore: return "more"
    case .failure(let e): return "fail \(e.status)"
    case .request(let r, let consumed):
        return "req \(r.method.rawValue) \(r.path) \(r.query ?? "-") \(r.headers.count) \(r.body) \(r.keepAlive) \(consumed)"
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // Whole input, then pipelined follow-ups from the leftover bytes.
    var parser = RequestParser(limits: limits)
    var start = 0
    var first: String? = nil
    for _ in 0..<8 {
        let outcome = bytes.withUnsafeBufferPointer { parser.parse(UnsafeBufferPointer(rebasing: $0[start...])) }
        if first == nil { first = summary(outcome) }
        guard case .request(let request, let consumed) = outcome else { break }
        precondition(consumed > 0 && start + consumed <= bytes.count, "consumed out of range")
        start += consumed
        if case .found(_, let params) = router.match(request.method, request.path) {
            for value in params.values { precondition(!value.utf8.contains(0), "NUL in a path parameter") }
        }
        let query = Request(method: request.method, path: request.path, query: request.query)
        _ = query.queryItems()
    }

    // Split at a point derived from the data: prefix first, then everything.
    if size > 1 {
        let cut = Int(bytes[0]) % size
        var split = RequestParser(limits: limits)
        let early = bytes.withUnsafeBufferPointer { split.parse(UnsafeBufferPointer(rebasing: $0[0..<cut])) }
        let late: ParseOutcome
        if case .needMore = early {
            late = bytes.withUnsafeBufferPointer { split.parse($0) }
        } else {
            late = early
        }
        precondition(summary(late) == first, "split parse differs: \(summary(late)) vs \(first ?? "nil")")
    }
    return 0
}
