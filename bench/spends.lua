-- wrk script for bench/spends.sh: POST /v1/users/user-<u>/spends {"item":"gems","amount":A,"reference":...} with a
-- unique Idempotency-Key per spend, u drawn at random from BENCH_USERS users, A from 1 to 5. One request in
-- BENCH_REPLAY_EVERY (0: none) is a replay instead: the request made BENCH_REPLAY_DISTANCE requests earlier by the
-- same thread, sent again with its key (long answered by then), whose answer must be the first one's, marked
-- Idempotent-Replayed, and change nothing.
--
-- wrk stops at -d with requests still in flight, applied by the service but never answered to the script, which would
-- make the per-user accounting inexact: so each thread sends for BENCH_SEND_MS only (from its first request) and then
-- lets its connections idle (delay()) while the answers in flight come back; run wrk with -d a few seconds longer.
-- Times come from CLOCK_MONOTONIC (LuaJIT's FFI), comparable across threads.
--
-- Every answer is counted per thread and collected in done(), which writes to BENCH_ACCOUNT_FILE:
--   spent <TAB> user <TAB> units <TAB> spends     per user: the spends answered 200 (not replays), units and count
--   figure <TAB> name <TAB> value                 sent, answered, applied, refused, replayed, replay_mismatches,
--                                                 in_flight, other, errors, first_ms, last_ms, p50_ms, p99_ms, ...
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock_id, bench_timespec *tp);
]]
local timespec = ffi.new("bench_timespec")
local function now_ms()
    ffi.C.clock_gettime(1, timespec) -- CLOCK_MONOTONIC
    return tonumber(timespec.tv_sec) * 1000 + tonumber(timespec.tv_nsec) / 1e6
end

local run = os.getenv("BENCH_RUN_ID") or "run"
local users = tonumber(os.getenv("BENCH_USERS") or "1000")
local send_ms = tonumber(os.getenv("BENCH_SEND_MS") or "20000")
local replay_every = tonumber(os.getenv("BENCH_REPLAY_EVERY") or "0")
local replay_distance = tonumber(os.getenv("BENCH_REPLAY_DISTANCE") or "501")
local account_file = os.getenv("BENCH_ACCOUNT_FILE")
local threads = {}
local next_thread = 1

function setup(thread)
    thread:set("tid", next_thread)
    next_thread = next_thread + 1
    table.insert(threads, thread)
end

function init(args)
    math.randomseed(tid * 7919 + os.time())
    counter = 0
    sent, answered, applied, refused, replayed, replay_mismatches, in_flight, other = 0, 0, 0, 0, 0, 0, 0, 0
    spent_units, spent_count = {}, {}
    first_ms, last_ms, deadline = 0, 0, nil
    -- Requests to be replayed later (by number) and the first answer of each, by key.
    kept, first_answers = {}, {}
    prefix = "bench-" .. run .. "-t" .. tid .. "-"
    headers = { ["Content-Type"] = "application/json" }
end

function delay()
    local now = now_ms()
    if deadline == nil then
        first_ms = now
        deadline = now + send_ms
    end
    if now >= deadline then return 600000 end -- done sending: wait for the answers in flight
    return 0
end

local function is_replay_target(n)
    return replay_every > 0 and (n + replay_distance) % replay_every == 0
end

function request()
    if deadline == nil then
        -- wrk calls request() once before the run to check the script (delay() always comes first in the run): a
        -- request that is never sent, so neither counted nor numbered.
        return wrk.format("POST", "/v1/users/user-0/spends", headers, '{"item":"gems","amount":1}')
    end
    counter = counter + 1
    sent = sent + 1
    local n, user, amount = counter, nil, nil
    local earlier = kept[counter - replay_distance]
    if replay_every > 0 and counter % replay_every == 0 and earlier ~= nil then
        n = counter - replay_distance
        user, amount = earlier[1], earlier[2]
        kept[n] = nil
    else
        user = math.random(0, users - 1)
        amount = math.random(1, 5)
        if is_replay_target(n) then kept[n] = { user, amount } end
    end
    headers["Idempotency-Key"] = prefix .. n
    local body = '{"item":"gems","amount":' .. amount .. ',"reference":"bench-' .. n .. '"}'
    return wrk.format("POST", "/v1/users/user-" .. user .. "/spends", headers, body)
end

function response(status, response_headers, body)
    answered = answered + 1
    last_ms = now_ms()
    local replay = (response_headers["Idempotent-Replayed"] or response_headers["idempotent-replayed"]) == "true"
    if status == 200 then
        local user, key, amount = body:match('"user_id":"([^"]*)","idempotency_key":"([^"]*)".-"amount":(%d+)')
        if replay then
            replayed = replayed + 1
            if first_answers[key] ~= body then replay_mismatches = replay_mismatches + 1 end
            first_answers[key] = nil
        elseif user == nil then
            other = other + 1
        else
            applied = applied + 1
            spent_units[user] = (spent_units[user] or 0) + tonumber(amount)
            spent_count[user] = (spent_count[user] or 0) + 1
            local n = tonumber(key:match("(%d+)$"))
            if is_replay_target(n) then first_answers[key] = body end
        end
    elseif status == 409 and body:find('"insufficient_balance"', 1, true) then
        if replay then replayed = replayed + 1 else refused = refused + 1 end
    elseif status == 409 and body:find('"idempotency_key_in_flight"', 1, true) then
        in_flight = in_flight + 1
    else
        other = other + 1
    end
end

function done(summary, latency, requests)
    local totals = { sent = 0, answered = 0, applied = 0, refused = 0, replayed = 0, replay_mismatches = 0,
        in_flight = 0, other = 0 }
    local units, counts = {}, {}
    local first, last = nil, 0
    for _, thread in ipairs(threads) do
        for name, _ in pairs(totals) do totals[name] = totals[name] + thread:get(name) end
        local thread_first = thread:get("first_ms")
        if thread_first > 0 and (first == nil or thread_first < first) then first = thread_first end
        if thread:get("last_ms") > last then last = thread:get("last_ms") end
        for user, value in pairs(thread:get("spent_units")) do units[user] = (units[user] or 0) + value end
        for user, value in pairs(thread:get("spent_count")) do counts[user] = (counts[user] or 0) + value end
    end
    local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    local out = io.stdout
    if account_file then out = assert(io.open(account_file, "w")) end
    for user, value in pairs(units) do out:write(string.format("spent\t%s\t%d\t%d\n", user, value, counts[user])) end
    for name, value in pairs(totals) do out:write(string.format("figure\t%s\t%d\n", name, value)) end
    out:write(string.format("figure\terrors\t%d\n", errors))
    out:write(string.format("figure\tfirst_ms\t%.3f\nfigure\tlast_ms\t%.3f\n", first or 0, last))
    for _, p in ipairs({ 50, 90, 99, 99.9 }) do
        out:write(string.format("figure\tp%s_ms\t%.3f\n", p, latency:percentile(p) / 1000))
    end
    out:write(string.format("figure\tmax_ms\t%.3f\n", latency.max / 1000))
    if account_file then out:close() end
end
