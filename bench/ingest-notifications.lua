-- wrk script for bench/ingest.sh --notifications: POST /v1/apple/notifications with Apple's body
-- {"signedPayload": "<JWS>"}, cycling through the signed notifications in BENCH_NOTIFICATIONS_FILE (one JWS per line,
-- each for another subscription, so they spread over the partitions as Apple's would); counts 200s and other statuses
-- per thread and prints them at the end.
local payloads = {}
for line in io.lines(os.getenv("BENCH_NOTIFICATIONS_FILE")) do
    if #line > 0 then table.insert(payloads, '{"signedPayload":"' .. line .. '"}') end
end
local threads = {}
local next_thread = 1

function setup(thread)
    thread:set("tid", next_thread)
    next_thread = next_thread + 1
    table.insert(threads, thread)
end

function init(args)
    counter = tid
    accepted = 0
    other = 0
    headers = { ["Content-Type"] = "application/json" }
end

function request()
    counter = counter + 1
    return wrk.format("POST", "/v1/apple/notifications", headers, payloads[counter % #payloads + 1])
end

function response(status, headers, body)
    if status == 200 then accepted = accepted + 1 else other = other + 1 end
end

function done(summary, latency, requests)
    local total_accepted, total_other = 0, 0
    for _, thread in ipairs(threads) do
        total_accepted = total_accepted + thread:get("accepted")
        total_other = total_other + thread:get("other")
    end
    io.write(string.format("status 200: %d\n", total_accepted))
    io.write(string.format("other statuses: %d\n", total_other))
    io.write(string.format("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
        latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
        latency:percentile(99.9) / 1000, latency.max / 1000))
end
