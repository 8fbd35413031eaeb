"""One side of netemu's Linux reference transfers; run inside a network namespace by grid.py.

    transfer.py recv --bind ADDR --port P [--port P ...] --bytes B [--message M] --deadline T
    transfer.py send --to ADDR:PORT [--to ...] [--delay D ...] --bytes B --deadline T
    transfer.py echo --bind ADDR --port P --to ADDR:PORT --bytes B --deadline T

Both print "ready" once set up (`recv`: every port listening; `send`: every socket made)
and then read one line "START DEADLINE" from stdin (CLOCK_MONOTONIC seconds, which every
network namespace of one machine shares), unless `--start` is given.  `recv` accepts one
connection per port and records, per port, the time relative to START at which the first
and the last of `--bytes` bytes arrived.  `send` sleeps until START, then opens one
connection per `--to` (a thread each) and sends exactly `--bytes` bytes on it.  Both stop
at DEADLINE and print one JSON object.  `--delay` (one per `--to`, in order) starts a
connection that many seconds after START.  `echo` is a client of a whole FL round: it
receives `--bytes` on its port (first and last byte timed as `recv` does) and, the moment
they are all in, connects to `--to` and sends as many back.  `recv --message M` also records,
per connection, when each M bytes (a message of a stream sent back to back) were complete.  Standard library only (Python 3.11).
"""

from __future__ import annotations

import argparse
import json
import selectors
import socket
import sys
import threading
import time

CHUNK = 1 << 20


def tcp_setup(sock: socket.socket, cc: str | None) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if cc:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())


def barrier(args: argparse.Namespace) -> float:
    """Say "ready", then learn the common start (and the deadline) unless given; returns the start."""
    print("ready", flush=True)
    if args.start is None:
        start, deadline = (float(x) for x in sys.stdin.readline().split())
        args.start, args.deadline = start, deadline
    return args.start


def recv(args: argparse.Namespace) -> dict:
    sel = selectors.DefaultSelector()
    listeners = []
    for i, port in enumerate(args.port):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((args.bind, port))
        ls.listen(4)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, ("listen", i))
        listeners.append(ls)
    start = barrier(args)
    n = len(args.port)
    got = [0] * n
    first: list[float | None] = [None] * n
    last: list[float | None] = [None] * n
    arrivals: list[list[float]] = [[] for _ in range(n)]  # --message: when each message was whole
    open_conns = 0
    accepted = 0
    buf = bytearray(CHUNK)
    while (accepted < n or open_conns) and time.monotonic() < args.deadline:
        for key, _ in sel.select(timeout=min(0.5, max(0.0, args.deadline - time.monotonic()))):
            kind, i = key.data
            if kind == "listen":
                conn, _ = key.fileobj.accept()
                conn.setblocking(False)
                sel.unregister(key.fileobj)
                key.fileobj.close()
                sel.register(conn, selectors.EVENT_READ, ("conn", i))
                open_conns += 1
                accepted += 1
                continue
            try:
                k = key.fileobj.recv_into(buf)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                k = 0
            now = time.monotonic()
            if k:
                if first[i] is None:
                    first[i] = now - start
                got[i] += k
                while args.message and len(arrivals[i]) < got[i] // args.message:
                    arrivals[i].append(now - start)
                if got[i] >= args.bytes and last[i] is None:
                    last[i] = now - start
            else:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                open_conns -= 1
    out = {"first_rx": first, "completion": last, "received": got, "start": start, "timed_out": time.monotonic() >= args.deadline}
    return {**out, "arrivals": arrivals} if args.message else out


def send_one(sock: socket.socket, target: str, args: argparse.Namespace, at: float, out: dict) -> None:
    """At CLOCK_MONOTONIC `at`, connect `sock` to `target` and send `--bytes` on it; what happened goes into `out`."""
    host, port = target.rsplit(":", 1)
    payload = memoryview(bytes(min(args.bytes, CHUNK)))
    try:
        sock.settimeout(max(0.1, args.deadline - time.monotonic()))
        while (wait := at - time.monotonic()) > 0:
            time.sleep(wait)
        out["late"] = time.monotonic() - at
        sock.connect((host, int(port)))
        out["mss"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
        out["cc"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
        left = args.bytes
        while left > 0:
            sock.settimeout(max(0.1, args.deadline - time.monotonic()))
            left -= sock.send(payload[: min(left, len(payload))])
        sock.shutdown(socket.SHUT_WR)
        out["sent"] = args.bytes
        out["sent_at"] = time.monotonic() - args.start
    except OSError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        sock.close()


def new_socket(args: argparse.Namespace) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp_setup(sock, args.cc)
    return sock


def send(args: argparse.Namespace) -> dict:
    n = len(args.to)
    delays = args.delay or [0.0] * n
    if len(delays) != n:
        raise SystemExit(f"transfer.py: {len(delays)} --delay for {n} --to")
    out: list[dict] = [{} for _ in range(n)]
    socks = [new_socket(args) for _ in range(n)]
    barrier(args)

    def one(i: int, target: str) -> None:
        send_one(socks[i], target, args, args.start + delays[i], out[i])

    threads = [threading.Thread(target=one, args=(i, t), daemon=True) for i, t in enumerate(args.to)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, args.deadline - time.monotonic()) + 1.0)
    return {"senders": out}


def echo(args: argparse.Namespace) -> dict:
    """Receive `--bytes` on `--port`, then send as many to `--to` at once (a client's FL round)."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.bind, args.port[0]))
    ls.listen(1)
    back = new_socket(args)
    start = barrier(args)
    first = last = None
    got = 0
    out: dict = {}
    buf = bytearray(CHUNK)
    try:
        ls.settimeout(max(0.1, args.deadline - time.monotonic()))
        conn, _ = ls.accept()
        with conn:
            while got < args.bytes:
                conn.settimeout(max(0.1, args.deadline - time.monotonic()))
                k = conn.recv_into(buf)
                if not k:
                    break
                if first is None:
                    first = time.monotonic() - start
                got += k
            if got >= args.bytes:
                last = time.monotonic() - start
                send_one(back, args.to[0], args, time.monotonic(), out)  # at once
    except OSError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        ls.close()
    return {"first_rx": [first], "completion": [last], "received": [got], "start": start, "senders": [out]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recv", help="listen and time the arriving bytes")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, action="append", required=True)
    r.add_argument("--message", type=int, default=0, help="also time each MESSAGE bytes of a connection (a stream)")
    s = sub.add_parser("send", help="connect at the start and send")
    s.add_argument("--to", action="append", required=True, metavar="ADDR:PORT")
    s.add_argument("--delay", type=float, action="append", help="seconds after the start to connect, one per --to")
    e = sub.add_parser("echo", help="receive on --port, then send as many bytes to --to")
    e.add_argument("--bind", required=True)
    e.add_argument("--port", type=int, action="append", required=True)
    e.add_argument("--to", action="append", required=True, metavar="ADDR:PORT")
    for p in (s, e):
        p.add_argument("--cc", default="cubic", help="TCP congestion control per socket (default cubic; '' = the sysctl's)")
    for p in (r, s, e):
        p.add_argument("--bytes", type=int, required=True)
        p.add_argument("--deadline", type=float, required=True,
                       help="CLOCK_MONOTONIC time to give up (until the stdin line replaces it)")
        p.add_argument("--start", type=float,
                       help="CLOCK_MONOTONIC start (default: 'START DEADLINE' read from stdin after 'ready')")
    args = ap.parse_args(argv)
    result = {"recv": recv, "send": send, "echo": echo}[args.mode](args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
