-- wrk script: POSTs one kube-scheduler-shaped ExtenderArgs body (the file named by $BODY_FILE)
-- to the URL given on the command line, and prints one machine-readable RESULT line at the end.
local path = os.getenv("BODY_FILE")
local file = assert(io.open(path, "rb"), "cannot open BODY_FILE " .. tostring(path))
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"
-- kube-scheduler's HTTP client is Go's net/http, which asks for gzip on its own unless compression
-- is disabled; ACCEPT_ENCODING=gzip measures what the extender then does (compresses the reply).
local accept = os.getenv("ACCEPT_ENCODING")
if accept and accept ~= "" then wrk.headers["Accept-Encoding"] = accept end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.2f rps=%.1f mean_us=%.0f p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d " ..
    "bytes_read=%d non2xx=%d socket_errors=%d timeouts=%d\n",
    summary.requests, seconds, summary.requests / seconds, latency.mean,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    latency.max, summary.bytes, e.status, e.connect + e.read + e.write, e.timeout))
end
