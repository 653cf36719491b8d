-- wrk driver for scripts/bench.mjs.
--
-- wrk hands no arguments to setup(), so the harness configures this script
-- through the environment:
--   BENCH_MODE     static | write | work
--   BENCH_TOKENS   comma-separated bearer tokens (static uses the first one)
--   BENCH_RUN      unique per wrk run, so clientIds never repeat across runs
--   BENCH_TOPIC    topic id for write
--   BENCH_ITEMS    work: "id:revision:state:tokenIndex;..." (tokenIndex is 1-based)
--   BENCH_THREADS  work: the -t value, to split items between threads
--
-- static mode defines no request()/response(), so wrk keeps its pre-built
-- request and never buffers bodies: the cheapest path for GET scenarios.

local mode = os.getenv("BENCH_MODE") or "static"
local run = os.getenv("BENCH_RUN") or "run"

local tokens = {}
for t in string.gmatch(os.getenv("BENCH_TOKENS") or "", "[^,]+") do tokens[#tokens + 1] = t end

-- One pre-built header table per token: request() runs for every request.
local jsonHeaders = {}
for i, t in ipairs(tokens) do
  jsonHeaders[i] = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. t }
end

if mode == "static" and tokens[1] then
  wrk.headers["Authorization"] = "Bearer " .. tokens[1]
end

-- setup() runs in the main Lua state; each thread has its own state and gets its index.
local threadCount = 0
function setup(thread)
  thread:set("tid", threadCount)
  threadCount = threadCount + 1
end

local counter = 0
local function nextClientId()
  counter = counter + 1
  return run .. "-" .. tid .. "-" .. counter
end

if mode == "write" then
  local topic = os.getenv("BENCH_TOPIC")
  function request()
    local clientId = nextClientId()
    local body = '{"topicId":"' .. topic .. '","content":"bench message ' .. clientId .. '","clientId":"' .. clientId .. '"}'
    return wrk.format("POST", "/api/messages", jsonHeaders[(counter % #tokens) + 1], body)
  end
end

if mode == "work" then
  -- Claim/release cycles. Each thread owns a disjoint slice of the items (at
  -- least one per connection) and never has two requests in flight for one
  -- item; the new revision and state are read back from the WorkItem response.
  local items, byId, cursor = {}, {}, 0

  function init(args)
    local nthreads = tonumber(os.getenv("BENCH_THREADS") or "1")
    local i = 0
    for id, rev, state, tok in string.gmatch(os.getenv("BENCH_ITEMS") or "", "([^:;]+):(%d+):(%a+):(%d+)") do
      if i % nthreads == tid then
        local item = { id = id, rev = tonumber(rev), state = state, tok = tonumber(tok), busy = false, since = 0 }
        items[#items + 1] = item
        byId[id] = item
      end
      i = i + 1
    end
  end

  function request()
    local item
    for _ = 1, #items do
      cursor = cursor % #items + 1
      if not items[cursor].busy and not items[cursor].retired then item = items[cursor]; break end
    end
    -- Only reachable after errors retired items: reuse one; its errors stay visible.
    item = item or items[cursor % #items + 1]
    item.busy = true
    item.since = counter + 1
    local action = item.state == "open" and "claim" or "release"
    local body = '{"action":"' .. action .. '","workItemId":"' .. item.id .. '","expectedRevision":' .. item.rev
      .. ',"clientId":"' .. nextClientId() .. '"}'
    return wrk.format("POST", "/api/work/action", jsonHeaders[item.tok], body)
  end

  function response(status, headers, body)
    -- The first "id" key is the WorkItem's own (nested result/review objects have none).
    local id = status < 300 and body:match('"id"%s*:%s*"([^"]+)"')
    local item = id and byId[id]
    if item then
      item.rev = tonumber(body:match('"revision"%s*:%s*(%d+)'))
      item.state = body:match('"state"%s*:%s*"(%a+)"')
      item.busy = false
      return
    end
    -- An error body does not say which item failed: retire the longest-busy one,
    -- since its revision can no longer be trusted.
    local oldest
    for _, it in ipairs(items) do
      if it.busy and (not oldest or it.since < oldest.since) then oldest = it end
    end
    if oldest then oldest.busy = false; oldest.retired = true end
  end
end

-- Runs in the main state after the test: one machine-readable line for the harness.
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,' ..
    '"errConnect":%d,"errRead":%d,"errWrite":%d,"errStatus":%d,"errTimeout":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
