-- wrk script for bench/api: POST /v1/receipts/<pk> cycling through distinct bodies, one per line of a file.
--   wrk ... -s post.lua URL -- BODIES_FILE PUBLIC_KEY THREADS [OFFSET]
-- Thread t (0-based) sends lines t, t+THREADS, t+2*THREADS, ... so no body is posted by two threads and every
-- request is a distinct transaction until a thread runs out (then it wraps: repeats are idempotent upserts,
-- and done() reports how many distinct bodies were sent). Requests are pre-formatted in init() so wrk spends
-- as little CPU as possible on the shared cores. OFFSET (default 0) skips the first OFFSET lines, already stored by
-- an earlier run into the same project: they come last (repeats) and do not count as distinct.
local threads = {}

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

function init(args)
    local file, pk, nthreads, offset = args[1], args[2], tonumber(args[3]), tonumber(args[4] or "0")
    local headers = { ["Content-Type"] = "application/json" }
    local path = "/v1/receipts/" .. pk
    requests = {}
    local old = {}
    local i = 0
    for line in io.lines(file) do
        if i % nthreads == id then
            local list = i >= offset and requests or old
            list[#list + 1] = wrk.format("POST", path, headers, line)
        end
        i = i + 1
    end
    available = #requests
    for _, r in ipairs(old) do requests[#requests + 1] = r end
    sent = 0
end

function request()
    sent = sent + 1
    return requests[(sent - 1) % #requests + 1]
end

function done(summary, latency, requests)
    local sent_total, distinct = 0, 0
    for _, t in ipairs(threads) do
        local s, a = t:get("sent"), t:get("available")
        sent_total = sent_total + s
        distinct = distinct + math.min(s, a)
    end
    local secs = summary.duration / 1e6
    io.write(string.format(
        "RESULT rps=%.0f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f completed=%d sent=%d distinct_sent=%d non2xx=%d socket_errors=%d\n",
        summary.requests / secs, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
        latency:percentile(99) / 1000, latency.max / 1000, summary.requests, sent_total, distinct,
        summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
