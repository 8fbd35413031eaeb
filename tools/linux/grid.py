"""Run the Linux-kernel reference grid: real TCP bulk transfers through network namespaces.

A star: namespaces ne-srv (server), ne-rtr (router, ip_forward=1) and ne-c0 .. ne-c{N-1}
(clients), joined by veth pairs shaped with `tc tbf` on both ends (client links at `access`
bits/s, the router-server link at `server` bits/s; queue limit `queue` full frames).  For
every point of ``points()`` the N transfers of `bytes` bytes start together (a common
CLOCK_MONOTONIC instant) and tools/linux/transfer.py, run with `ip netns exec`, records when
each receiver got its first and last byte.  Each point is run `--repeats` times; the stored
result is the repetition with the median last completion, plus every repetition's figures.

The output has the format of tools/ns3/reference.json, with the result under "result"
instead of "ns3":  [{"point": {...}, "result": {"last", "completion", "first_rx", "complete",
...}}, ...];  tools/ns3/compare.py --reference tools/linux/reference.json reads it.

Needs root, `ip` and `tc` (iproute2), and the tbf qdisc.  No netem in this kernel: every
point has accessDelay = serverDelay = 0.  Only 10.200.0.0/16 addresses inside the
namespaces are used; everything named ne-* is created, and deleted on exit (and by
--cleanup).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import random
import select
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

GRID_NAME = "linux-ref-v1"
HERE = Path(__file__).resolve().parent
TRANSFER = HERE / "transfer.py"
PREFIX = "ne-"
SERVER_NS, ROUTER_NS = f"{PREFIX}srv", f"{PREFIX}rtr"
SERVER_ADDR, ROUTER_SERVER_ADDR = "10.200.0.2", "10.200.0.1"
MBIT = 1_000_000
FRAME = 1514  # bytes of a full-sized frame as tbf counts it (1500 B IP + 14 B Ethernet header)
HZ = 250  # tbf's burst must cover rate / HZ bytes (see README)
MAX_CLIENTS = 32
MAX_EST = 60.0  # seconds: points whose ideal transfer time is longer are left out

BASE = {
    "topology": "star",
    "clients": 8,
    "bytes": 1_000_000,
    "direction": "up",
    "access": 10 * MBIT,
    "accessDelay": 0.0,
    "server": 20 * MBIT,
    "serverDelay": 0.0,
    "apRate": 100 * MBIT,
    "apDelay": 0.0,
    "clientsPerAp": 4,
    "queue": 100,
    "window": 4_194_304,
    "seed": 1,
}
FACTORS = {
    "clients": [1, 2, 4, 8, 16, 32],
    "bytes": [100_000, 1_000_000, 10_000_000],
    "access": [10 * MBIT, 100 * MBIT],
    "server": [20 * MBIT, 100 * MBIT],
    "queue": [10, 100],
}
DIRECTIONS = ["up", "down"]
SAMPLE_SIZE = 24
SAMPLE_SEED = 20240601
SAMPLE_MAX_EST = 6.0  # seconds: keeps the random points' share of the wall time small


def _fmt(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def estimate(p: dict) -> float:
    """The ideal (fluid, no TCP) time of a point: the slowest of the slowest access link, the shared server
    link and a full access point's link (a round: twice that)."""
    slowest, b = min(access_rate(p, k) for k in range(p["clients"])), p["bytes"] * p.get("messages", 1)
    one = max(b * 8 / slowest, p["clients"] * b * 8 / p["server"], min(per_ap(p), p["clients"]) * b * 8 / p["apRate"])
    return 2 * one if p["direction"] == "round" else one


def points() -> list[dict]:
    """The grid: for each direction a base point and one-factor-at-a-time variations, then a seeded sample."""
    out: list[dict] = []
    seen: set[tuple] = set()

    def add(name: str, point: dict) -> bool:
        key = tuple(sorted(point.items()))
        if key in seen or estimate(point) > MAX_EST:
            return False
        seen.add(key)
        out.append({"name": name, **point})
        return True

    for direction in DIRECTIONS:
        base = {**BASE, "direction": direction}
        add(f"star-{direction}-base", base)
        for factor, values in FACTORS.items():
            for value in values:
                add(f"star-{direction}-{factor}={_fmt(value)}", {**base, factor: value})
    rng = random.Random(SAMPLE_SEED)
    axes = {"direction": DIRECTIONS, **FACTORS}
    added = 0
    while added < SAMPLE_SIZE:
        point = {**BASE, **{axis: rng.choice(values) for axis, values in axes.items()}}
        if estimate(point) <= SAMPLE_MAX_EST:
            added += add(f"sample-{added:03d}", point)
    return out


# ---------------------------------------------------------------- shell helpers


def sh(cmd: list[str], stdin: str | None = None, timeout: float = 30.0) -> str:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def client_ns(k: int) -> str:
    return f"{PREFIX}c{k}"


def client_addr(k: int) -> str:
    return f"10.200.{k + 1}.2"


def ap_ns(j: int) -> str:
    return f"{PREFIX}ap{j}"


def per_ap(p: dict) -> int:
    """Clients per access point: 0 for a star."""
    return p["clientsPerAp"] if p["topology"] == "tree" else 0


def our_namespaces() -> list[str]:
    names = [line.split()[0] for line in sh(["ip", "netns", "list"]).splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX)]


def cleanup(log=lambda s: None) -> int:
    """Delete every namespace named ne-* (their veths go with them)."""
    names = our_namespaces()
    for name in names:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)
    if names:
        log(f"deleted {len(names)} namespaces: {' '.join(names)}")
    return len(names)


def ns_sysctl(ns: str, settings: dict[str, str]) -> None:
    sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", *(f"{k}={v}" for k, v in settings.items())])


# A namespace other than the initial one may not set tcp_congestion_control to an algorithm
# outside tcp_allowed_congestion_control (EPERM), so the senders choose cubic per socket
# (TCP_CONGESTION, allowed with CAP_NET_ADMIN) and the result records what each socket used.
TCP_SYSCTLS = {
    "net.ipv4.tcp_no_metrics_save": "1",  # no cached ssthresh/RTT from one repetition to the next
}


def build(n: int, clients_per_ap: int = 0) -> None:
    """The star with n clients, or with `clients_per_ap` a two-level tree: client k behind access point
    ne-ap{k // clients_per_ap} (10.201.j.2, router side 10.201.j.1), each behind the router (no shaping yet)."""
    aps = -(-n // clients_per_ap) if clients_per_ap else 0
    names = [SERVER_NS, ROUTER_NS] + [ap_ns(j) for j in range(aps)] + [client_ns(k) for k in range(n)]
    sh(["ip", "-batch", "-"], stdin="".join(f"netns add {name}\n" for name in names))
    for name in names:
        sh(["ip", "-n", name, "link", "set", "lo", "up"])
        ns_sysctl(name, TCP_SYSCTLS)
    for name in [ROUTER_NS] + [ap_ns(j) for j in range(aps)]:
        ns_sysctl(name, {"net.ipv4.ip_forward": "1"})
    # veth pairs created inside the namespaces; GSO off (one skb per segment, as on a wire)
    gso = "gso_max_segs 1 gso_max_size 1500"
    rtr = [f"link add srv type veth peer name eth0 netns {SERVER_NS}",
           f"addr add {ROUTER_SERVER_ADDR}/24 dev srv", f"link set srv {gso} up"]
    below: dict[str, list[str]] = {}  # an access point's namespace -> its commands
    for j in range(aps):
        rtr += [f"link add ap{j} type veth peer name rtr netns {ap_ns(j)}",
                f"addr add 10.201.{j}.1/24 dev ap{j}", f"link set ap{j} {gso} up"]
        below[ap_ns(j)] = [f"addr add 10.201.{j}.2/24 dev rtr", f"link set rtr {gso} up", f"route add default via 10.201.{j}.1"]
    for k in range(n):
        cmds = [f"link add c{k} type veth peer name eth0 netns {client_ns(k)}",
                f"addr add 10.200.{k + 1}.1/24 dev c{k}", f"link set c{k} {gso} up"]
        if aps:
            below[ap_ns(k // clients_per_ap)] += cmds
        else:
            rtr += cmds
    sh(["ip", "-n", ROUTER_NS, "-batch", "-"], stdin="\n".join(rtr) + "\n")
    for ns, cmds in below.items():
        sh(["ip", "-n", ns, "-batch", "-"], stdin="\n".join(cmds) + "\n")
    if aps:
        routes = [f"route add 10.200.{k + 1}.0/24 via 10.201.{k // clients_per_ap}.2" for k in range(n)]
        sh(["ip", "-n", ROUTER_NS, "-batch", "-"], stdin="\n".join(routes) + "\n")
    ends = [(SERVER_NS, SERVER_ADDR, ROUTER_SERVER_ADDR)] + [
        (client_ns(k), client_addr(k), f"10.200.{k + 1}.1") for k in range(n)]
    for ns, addr, gw in ends:
        cmds = [f"addr add {addr}/24 dev eth0", f"link set eth0 {gso} up", f"route add default via {gw}"]
        sh(["ip", "-n", ns, "-batch", "-"], stdin="\n".join(cmds) + "\n")


def tbf(rate: int, queue: int) -> dict:
    """tbf parameters for a link of `rate` bits/s and a queue of `queue` full frames."""
    return {"rate_bit": rate, "burst_bytes": max(1600, rate // 8 // HZ), "limit_bytes": queue * FRAME}


def tbf_cmd(dev: str, t: dict) -> str:
    return (f"qdisc replace dev {dev} root tbf rate {t['rate_bit']}bit "
            f"burst {t['burst_bytes']} limit {t['limit_bytes']}")


def access_rate(p: dict, k: int) -> int:
    """Client k's access rate: `access`, or with `accessSpread` K, access x K^(-k/(n-1)) as tools/ns3/transfers.cc."""
    n, spread = p["clients"], p.get("accessSpread", 1.0)
    return p["access"] if spread == 1.0 or n < 2 else round(p["access"] * spread ** (-k / (n - 1)))


def shape(p: dict) -> dict:
    """Shape the point's links (both ends of each used veth pair); returns the tbf parameters."""
    accs = [tbf(access_rate(p, k), p["queue"]) for k in range(p["clients"])]
    srv, ap = tbf(p["server"], p["queue"]), tbf(p["apRate"], p["queue"])
    cpa = per_ap(p)
    cmds: dict[str, list[str]] = {ROUTER_NS: [tbf_cmd("srv", srv)], SERVER_NS: [tbf_cmd("eth0", srv)]}
    for k, acc in enumerate(accs):  # the client's end, and the router's or its access point's
        cmds[client_ns(k)] = [tbf_cmd("eth0", acc)]
        cmds.setdefault(ap_ns(k // cpa) if cpa else ROUTER_NS, []).append(tbf_cmd(f"c{k}", acc))
    for j in range(-(-p["clients"] // cpa) if cpa else 0):  # access point j's link to the router, both ends
        cmds[ap_ns(j)].append(tbf_cmd("rtr", ap))
        cmds[ROUTER_NS].append(tbf_cmd(f"ap{j}", ap))
    for ns, lines in cmds.items():
        sh(["tc", "-n", ns, "-batch", "-"], stdin="\n".join(lines) + "\n")
    out = {"access": accs[0] if len({a["rate_bit"] for a in accs}) == 1 else accs, "server": srv, "hz": HZ}
    return {**out, "ap": ap} if cpa else out


def drops(n: int) -> int:
    """Packets dropped so far by the tbf qdiscs of the first n clients, the access points, router and server."""
    total = 0
    aps = [ns for ns in our_namespaces() if ns.startswith(ap_ns(0)[:-1])]
    for ns in [ROUTER_NS, SERVER_NS] + aps + [client_ns(k) for k in range(n)]:
        for q in json.loads(sh(["tc", "-n", ns, "-s", "-j", "qdisc", "show"]) or "[]"):
            if q.get("kind") == "tbf":
                total += q.get("drops", 0)
    return total


# ---------------------------------------------------------------- one repetition


def spawn(ns: str, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, str(TRANSFER), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_ready(procs: list[subprocess.Popen], timeout: float) -> None:
    end = time.monotonic() + timeout
    for proc in procs:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, end - time.monotonic()))
        line = proc.stdout.readline() if ready else ""
        if line.strip() != "ready":
            state = f"exited {proc.returncode}: {proc.stderr.read().strip()}" if proc.poll() is not None else \
                f"still starting after {timeout:.0f} s"
            raise RuntimeError(f"{' '.join(map(str, proc.args[3:]))}: not ready ({line.strip()!r}); {state}")


def finish(procs: list[subprocess.Popen], until: float) -> list[dict]:
    out = []
    for proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=max(0.1, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate(timeout=5)
        if proc.returncode != 0 or not stdout.strip():
            raise RuntimeError(f"transfer.py exited {proc.returncode}: {stderr.strip()[-500:]}")
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def starts(p: dict) -> list[float]:
    """When each transfer starts, in seconds after the common start: 0, or with `startSpread` S a uniform
    draw in [0, S) per transfer (Python's Mersenne Twister seeded with the point's seed; stored in the result)."""
    spread = p.get("startSpread", 0.0)
    rng = random.Random(p["seed"])
    return [rng.uniform(0.0, spread) if spread > 0 else 0.0 for _ in range(p["clients"])]


def run_once(p: dict, port: int, procs: list[subprocess.Popen]) -> dict:
    """One repetition of point p; `procs` collects the processes so that the caller can kill them.
    `direction = "round"`: the server sends every client `bytes`, and each client sends as many back
    the moment they are in (transfer.py echo); a transfer's completion is its upload's."""
    n, b = p["clients"], str(p["bytes"] * p.get("messages", 1))  # a stream: its messages back to back on one connection
    horizon = max(15.0, 3 * estimate(p) + 10)
    far = str(time.monotonic() + horizon + 30)  # receivers' deadline until the start is known
    at = starts(p)
    delays = lambda ks: sum((["--delay", repr(at[k])] for k in ks), []) if any(at) else []  # noqa: E731
    before = drops(n)
    wall = time.monotonic()
    echoes: list[subprocess.Popen] = []
    if p["direction"] in ("up", "round"):  # the server receives (a round: the uploads, on ports port + k)
        stream = ["--message", str(p["bytes"])] if p.get("messages", 1) > 1 else []
        receivers = [spawn(SERVER_NS, ["recv", "--bind", SERVER_ADDR, "--bytes", b, *stream, "--deadline", far,
                                       *sum((["--port", str(port + k)] for k in range(n)), [])])]
    else:
        receivers = [spawn(client_ns(k), ["recv", "--bind", client_addr(k), "--port", str(port),
                                          "--bytes", b, "--deadline", far]) for k in range(n)]
    if p["direction"] == "round":
        echoes = [spawn(client_ns(k), ["echo", "--bind", client_addr(k), "--port", str(port + 500),
                                       "--to", f"{SERVER_ADDR}:{port + k}", "--bytes", b, "--deadline", far])
                  for k in range(n)]
    n_senders = n if p["direction"] == "up" else 1
    if p["direction"] == "up":
        senders = [spawn(client_ns(k), ["send", "--to", f"{SERVER_ADDR}:{port + k}", *delays([k]), "--bytes", b,
                                        "--deadline", far]) for k in range(n)]
    else:
        target = port + 500 if p["direction"] == "round" else port
        senders = [spawn(SERVER_NS, ["send", *sum((["--to", f"{client_addr(k)}:{target}"] for k in range(n)), []),
                                     *delays(range(n)), "--bytes", b, "--deadline", far])]
    procs += receivers + echoes + senders
    wait_ready(receivers + echoes + senders, 30.0 + 2.0 * len(receivers + echoes + senders))  # a busy machine starts them slowly
    # every process is set up and waiting on stdin: the start is a few ms ahead
    start = time.monotonic() + 0.05 + 0.002 * (n + n_senders)
    deadline = start + horizon
    for proc in receivers + echoes + senders:
        proc.stdin.write(f"{start!r} {deadline!r}\n")
        proc.stdin.flush()
    sent = [s for out in finish(senders, deadline + 10) for s in out["senders"]]
    downs = finish(echoes, deadline + 10)
    sent += [s for out in downs for s in out["senders"]]
    got = finish(receivers, deadline + 10)
    completion = [c for g in got for c in g["completion"]]
    first_rx = [f for g in got for f in g["first_rx"]]
    extra = {}
    if downs:  # a round's first byte: the longer wait of its download's and its upload's, each from its own start
        down_done = [d["completion"][0] for d in downs]
        extra["downloads"] = down_done
        first_rx = [None if f is None or d["first_rx"][0] is None or c is None else max(d["first_rx"][0], f - c)
                    for f, d, c in zip(first_rx, downs, down_done)]
    if any(at):
        extra["starts"] = at
    if any("arrivals" in g for g in got):  # a stream: when each message of each connection was whole
        extra["arrivals"] = [a for g in got for a in g["arrivals"]]
    complete = sum(c is not None for c in completion)
    errors = [s["error"] for s in sent if "error" in s]
    return {
        **extra,
        "completion": completion,
        "first_rx": first_rx,
        "last": max(completion) if complete == n else None,
        "complete": complete,
        "queue_drops": drops(n) - before,
        "late_max": max(s.get("late", 0.0) for s in sent),
        "mss": sorted({s["mss"] for s in sent if "mss" in s}),
        "cc": sorted({s["cc"] for s in sent if "cc" in s}),
        "errors": errors,
        "wall_s": time.monotonic() - wall,
    }


def run_point(p: dict, repeats: int, port_base: int, log) -> dict:
    tbf_params = shape(p)
    runs = []
    for rep in range(repeats):
        procs: list[subprocess.Popen] = []
        try:
            runs.append(run_once(p, port_base + 100 * rep, procs))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=5)
        time.sleep(0.2)  # let the last ACKs and FINs drain
    order = sorted(range(repeats), key=lambda i: (runs[i]["last"] is None, runs[i]["last"] or 0.0))
    median = dict(runs[order[len(order) // 2]])
    lasts = [r["last"] for r in runs]
    done = [x for x in lasts if x is not None]
    spread = (max(done) - min(done)) / statistics.median(done) if len(done) == len(lasts) else None
    median.update({
        "params": {k: v for k, v in p.items() if k != "name"},
        "tbf": tbf_params,
        "last_runs": lasts,
        "last_spread": spread,
        "repeats": repeats,
        "runs": [{k: r[k] for k in ("last", "complete", "queue_drops", "late_max", "wall_s")} for r in runs],
    })
    return median


def system_info() -> dict:
    def get(key: str) -> str:
        return sh(["ip", "netns", "exec", SERVER_NS, "sysctl", "-n", key]).strip()

    keys = ["tcp_congestion_control", "tcp_wmem", "tcp_rmem", "tcp_sack", "tcp_timestamps",
            "tcp_window_scaling", "tcp_ecn", "tcp_slow_start_after_idle", "tcp_no_metrics_save"]
    return {
        "kernel": platform.release(),
        "host_tcp_congestion_control": sh(["sysctl", "-n", "net.ipv4.tcp_congestion_control"]).strip(),
        "netns_sysctl": {f"net.ipv4.{k}": get(f"net.ipv4.{k}") for k in keys},
        "python": platform.python_version(),
    }


# ---------------------------------------------------------------- main


def select_points(all_points: list[dict], only: list[str] | None, limit: int | None) -> list[dict]:
    chosen = all_points
    if only:
        chosen = [p for p in chosen if any(fnmatch.fnmatchcase(p["name"], pat) for pat in only)]
    return chosen[:limit] if limit is not None else chosen


def write(out: Path, results: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in results) + "\n]\n")
    tmp.replace(out)


def main(argv: list[str] | None = None, family_points=points) -> int:
    """The command line; `family_points` gives the points (tools/linux/families.py passes its own)."""
    parser = argparse.ArgumentParser(
        description=(f"Run the Linux reference grid ({GRID_NAME}): real TCP bulk transfers through "
                     "network namespaces, veth pairs and tc tbf, and write a JSON list of "
                     '{"point": {...}, "result": {...}} (the format of tools/ns3/reference.json). '
                     "Needs root."),
        epilog="Leftover namespaces (ne-*) after a crash: grid.py --cleanup",
    )
    parser.add_argument("--out", type=Path, help="where to write the JSON results (rewritten after each point)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only points whose name matches NAME (a shell-style pattern; repeatable)")
    parser.add_argument("--limit", type=int, help="run only the first N selected points")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions per point (default 3; the median is kept)")
    parser.add_argument("--list", action="store_true", help="print the selected points with their ideal times and exit")
    parser.add_argument("--cleanup", action="store_true", help="delete leftover namespaces named ne-* and exit")
    args = parser.parse_args(argv)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    chosen = select_points(family_points(), args.only, args.limit)
    if args.list:
        for p in chosen:
            print(f"{p['name']:<28} {p['direction']:<4} n={p['clients']:<3} {p['bytes']:>9} B "
                  f"access={p['access'] // MBIT}M server={p['server'] // MBIT}M q={p['queue']:<3} "
                  f"ideal {estimate(p):6.2f} s")
        print(f"{len(chosen)} points, ideal time {sum(map(estimate, chosen)):.0f} s per repetition")
        return 0
    if os.geteuid() != 0:
        parser.error("needs root (ip netns, tc)")
    if args.cleanup:
        cleanup(log)
        return 0
    if args.out is None:
        parser.error("--out is required (unless --list or --cleanup)")
    if not chosen:
        parser.error("no point matches --only")

    def on_term(signum, frame):
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    if cleanup(log):
        log("(those were leftovers of an earlier run)")
    wall = time.monotonic()
    results: list[dict] = []
    try:
        built: int | None = None  # clients per access point of the topology built (0: a star)
        info: dict = {}
        for i, p in enumerate(chosen):
            if per_ap(p) != built:  # the star, or a tree, for the largest client count of its points
                cleanup()
                built = per_ap(p)
                build(max(q["clients"] for q in chosen if per_ap(q) == built), built)
                if not info:
                    info = system_info()
                    log(f"kernel {info['kernel']}, in the namespaces: {info['netns_sysctl']['net.ipv4.tcp_congestion_control']}"
                        f" (host default {info['host_tcp_congestion_control']})")
            result = run_point(p, args.repeats, 20000 + 1000 * (i % 40), log)
            result["referee"] = "linux"  # tools/ns3/compare.py's label for these figures
            result["system"] = info
            result["tcp"] = {"congestion_control": "cubic", "segment_size": result["mss"],
                             "initial_cwnd": 10, "min_rto_s": 0.2, "no_delay": True,
                             "buffers": "autotuned (tcp_wmem / tcp_rmem)", "gso": "off (gso_max_segs 1)"}
            results.append({"point": p, "result": result})
            write(args.out, results)
            spread = result["last_spread"]
            log(f"[{i + 1}/{len(chosen)}] {p['name']}: last={result['last_runs']} "
                f"spread={'-' if spread is None else f'{spread:.1%}'} drops={[r['queue_drops'] for r in result['runs']]} "
                f"ideal={estimate(p):.2f} ({time.monotonic() - wall:.0f} s)")
    finally:
        cleanup()
    incomplete = sum(1 for r in results if r["result"]["last"] is None)
    log(f"{len(results)} points -> {args.out}; {time.monotonic() - wall:.1f} s wall; "
        f"{incomplete} with incomplete transfers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
