#!/usr/bin/env python3
"""Slowloris against gpushare-extender: opens SLOW connections that each send
the start of a request and then one header byte every INTERVAL seconds, and while they are open
times /healthz and a filter on fresh connections. Prints one machine-readable RESULT line.

  slow_clients.py PORT FILTER_BODY_FILE [--slow 2000] [--probes 50] [--source 127.0.0.2]

The slow connections come from --sources other loopback addresses (127.0.0.2, ...), so that each
stays under --max-connections-per-client, which does not apply to the probes from 127.0.0.1.
"""
import argparse
import socket
import statistics
import threading
import time


def probe(port, method, path, body):
    start = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    s.sendall(head.encode() + b"\r\n" + (body or b""))
    reply = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    s.close()
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else -1
    return status, (time.perf_counter() - start) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("body")
    parser.add_argument("--slow", type=int, default=2000)
    parser.add_argument("--probes", type=int, default=50)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--sources", type=int, default=4,
                        help="spread over 127.0.0.2.. (each under --max-connections-per-client)")
    # Paced, so that a server with a short listen backlog accepts them all rather than the
    # kernel resetting the overflow.
    parser.add_argument("--server-pid", type=int, default=0, help="report its threads and open files")
    parser.add_argument("--connect-pause", type=float, default=0.002)
    args = parser.parse_args()
    body = open(args.body, "rb").read()

    slow = []
    refused = 0
    for i in range(args.slow):
        s = socket.socket()
        s.bind(("127.0.0.%d" % (2 + i % args.sources), 0))
        try:
            s.connect(("127.0.0.1", args.port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(s)
            time.sleep(args.connect_pause)
        except OSError:
            refused += 1
            s.close()
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in slow:
                try:
                    s.send(b"a")
                except OSError:
                    pass
            stop.wait(args.interval)

    trickler = threading.Thread(target=trickle)
    trickler.start()
    time.sleep(1.0)  # let the server see them all
    server = ""
    if args.server_pid:
        import os
        server = " server_threads=%d server_fds=%d" % (len(os.listdir("/proc/%d/task" % args.server_pid)),
                                                      len(os.listdir("/proc/%d/fd" % args.server_pid)))

    results = {"healthz": [], "filter": []}
    failures = 0
    for _ in range(args.probes):
        for name, method, path, payload in (("healthz", "GET", "/healthz", None),
                                            ("filter", "POST", "/gpushare-scheduler/filter", body)):
            try:
                status, ms = probe(args.port, method, path, payload)
            except OSError:
                status, ms = -1, 0.0
            if status != 200:
                failures += 1
            else:
                results[name].append(ms)

    # How many slow connections are still open: nothing to read (a refusal, 408 or EOF means closed).
    still_open = 0
    for s in slow:
        s.setblocking(False)
        try:
            s.recv(1)
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
    stop.set()
    trickler.join()
    for s in slow:
        s.close()

    def pct(values, p):
        if not values:
            return float("nan")
        values = sorted(values)
        return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

    print("RESULT slow_opened=%d slow_refused=%d slow_open_at_end=%d failures=%d "
          "healthz_p50_ms=%.2f healthz_p99_ms=%.2f healthz_max_ms=%.2f "
          "filter_p50_ms=%.2f filter_p99_ms=%.2f filter_max_ms=%.2f%s" % (
              len(slow), refused, still_open, failures,
              pct(results["healthz"], 50), pct(results["healthz"], 99), max(results["healthz"] or [float("nan")]),
              pct(results["filter"], 50), pct(results["filter"], 99), max(results["filter"] or [float("nan")]), server))


if __name__ == "__main__":
    main()
