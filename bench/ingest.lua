-- wrk script for bench/ingest.sh. By default: POST /v1/receipts with a 2 KiB base64 receipt (BENCH_RECEIPT) and a
-- unique submission_id per request, success = 202. With BENCH_NOTIFICATIONS_FILE (bench/ingest.sh --notifications):
-- POST /v1/apple/notifications with Apple's body {"signedPayload": "<JWS>"}, cycling through the signed notifications
-- in that file (one JWS per line, each for another subscription, so they spread over the partitions as Apple's
-- would), success = 200. Counts successes and other statuses per thread and prints them at the end.
local receipt = os.getenv("BENCH_RECEIPT")
local run = os.getenv("BENCH_RUN_ID") or "run"
local notifications_file = os.getenv("BENCH_NOTIFICATIONS_FILE")
local payloads = {}
if notifications_file then
    for line in io.lines(notifications_file) do
        if #line > 0 then table.insert(payloads, '{"signedPayload":"' .. line .. '"}') end
    end
end
local success_status = notifications_file and 200 or 202
local threads = {}
local next_thread = 1

function setup(thread)
    thread:set("tid", next_thread)
    next_thread = next_thread + 1
    table.insert(threads, thread)
end

function init(args)
    counter = 0
    accepted = 0
    other = 0
    prefix = "bench-" .. run .. "-" .. tid .. "-"
    headers = { ["Content-Type"] = "application/json" }
end

function request()
    counter = counter + 1
    if notifications_file then
        return wrk.format("POST", "/v1/apple/notifications", headers, payloads[(counter + tid) % #payloads + 1])
    end
    local body = '{"receipt_data":"' .. receipt .. '","submission_id":"' .. prefix .. counter
        .. '","user_id":"user-' .. (counter % 997) .. '"}'
    return wrk.format("POST", "/v1/receipts", headers, body)
end

function response(status, headers, body)
    if status == success_status then accepted = accepted + 1 else other = other + 1 end
end

function done(summary, latency, requests)
    local total_accepted, total_other = 0, 0
    for _, thread in ipairs(threads) do
        total_accepted = total_accepted + thread:get("accepted")
        total_other = total_other + thread:get("other")
    end
    io.write(string.format("status %d: %d\n", success_status, total_accepted))
    io.write(string.format("other statuses: %d\n", total_other))
    io.write(string.format("p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n",
        latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
        latency:percentile(99.9) / 1000, latency.max / 1000))
end
