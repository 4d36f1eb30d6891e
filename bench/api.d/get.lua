-- wrk script for bench/api: GET /v1/subscriptions/<pk>/<user> cycling through the users, one per line.
--   wrk ... -s get.lua URL -- USERS_FILE PUBLIC_KEY THREADS
-- Each thread starts at a different offset so the threads do not read the same user at the same moment.
-- BENCH_GET_DELAY_MS (environment, default 0) paces each connection: it waits that long before each request (wrk's
-- delay() hook), so N connections send at most N * 1000 / (latency + delay) requests per second (bench/api's
-- mixed phase uses it to hold GETs near 80 % of the requests).
local pause = tonumber(os.getenv("BENCH_GET_DELAY_MS") or "0")
if pause > 0 then
    function delay() return pause end
end
local threads = {}

function setup(thread)
    thread:set("id", #threads)
    table.insert(threads, thread)
end

function init(args)
    local file, pk, nthreads = args[1], args[2], tonumber(args[3])
    requests = {}
    for line in io.lines(file) do
        requests[#requests + 1] = wrk.format("GET", "/v1/subscriptions/" .. pk .. "/" .. line)
    end
    available = #requests
    sent = math.floor(available * id / nthreads)
end

function request()
    sent = sent + 1
    return requests[(sent - 1) % available + 1]
end

function done(summary, latency, requests)
    local secs = summary.duration / 1e6
    io.write(string.format(
        "RESULT rps=%.0f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f completed=%d non2xx=%d socket_errors=%d\n",
        summary.requests / secs, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
        latency:percentile(99) / 1000, latency.max / 1000, summary.requests,
        summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
