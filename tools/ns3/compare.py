"""Run the ns-3 grid's points through netemu and print the error of each network model.

For every point of `grid.py` (bulk transfers that start at t=0 through a star, a two-tier
access-point tree or a dumbbell) this builds the same topology in netemu, sends the same
transfers, and compares the completion time of the last one with ns-3's (from
`reference.json`, written by `grid.py`).  Four netemu models are printed side by side:

  none    sharing = "none", transport = "datagram": independent FIFO links (store and forward)
  lv08    sharing = "max-min", datagram, latency_factor 13.01: SimGrid's LV08 model as published
  netemu  sharing = "max-min", transport = "reliable": max-min sharing with the handshake and
          slow start of netemu.engine.net.model (ns-3's minimum RTO of 1 s)
  fifo    the same with qdisc = "fifo" and every link's queue_bytes the referee's device queue
          (`queue` packets of 1500 bytes): slow starts that overflow it (netemu.engine.net.queues)

A reference made with `grid.py --spread S` stores when each transfer started; they are sent
at the same instants here.

    python tools/ns3/compare.py                     # the whole grid, a table and the summary
    python tools/ns3/compare.py --only 'star-*'     # some points
    python tools/ns3/compare.py --markdown out.md   # the table as Markdown (docs/network.md)
    python tools/ns3/compare.py --reference tools/ns3/reference-spread.json   # starts spread over 50 ms
    python tools/ns3/compare.py --reference tools/linux/reference.json   # the Linux kernel as referee
    python tools/ns3/compare.py --ns3               # also ns-3 run through netemu (engine = "ns3", netemu.ns3)

With `--ns3` a fourth column is ns-3 itself run through netemu (`engine = "ns3"`, one connection per
transfer as transfers.cc's, each message exactly the point's bytes, envelope included): its error
against the standalone program is the referee's referee, and the summary adds the flow model
(`netemu`) against it.

A reference file is a list of {"point": {...}, "ns3": {...}} (tools/ns3/grid.py) or
{"point": {...}, "result": {...}} (tools/linux/grid.py; its "referee" names it); the points
compared are the ones stored in it.  The netemu model's `rto_min` and the stalled-start
threshold follow the referee's minimum RTO (`tcp.min_rto_s`: ns-3 1 s, Linux 0.2 s).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import statistics
import sys
from pathlib import Path

import msgpack
import networkx as nx

from netemu import Bernoulli, Constant, Link, World
from netemu.engine.net import topology as T
from netemu.engine.net.model import NetModel
from netemu.wire.codec import header_size

HERE = Path(__file__).resolve().parent
MODELS = {
    "none": lambda p: NetModel(),
    "lv08": lambda p: NetModel(sharing="max-min", latency_factor=13.01, window=p["window"]),
    "netemu": lambda p, rto_min=1.0: NetModel(sharing="max-min", transport="reliable", window=p["window"], rto_min=rto_min),
    "fifo": lambda p, rto_min=1.0: NetModel(sharing="max-min", transport="reliable", window=p["window"], rto_min=rto_min, qdisc="fifo"),
}
#: bytes of a full packet in the referee's device queues (1448 payload + 52 header bytes)
PACKET = 1500
#: ns-3 run through netemu (`--ns3`): transfers.cc's TCP settings (ns-3's 1 s minimum RTO, its queues in packets: DropTail,
#: or FqCoDel in front of them where the point says `"qdisc": "fqcodel"`, as transfers.cc's --qdisc), one
#: connection per transfer, closed once written (a BulkSendApplication), and no stall timeout of netemu's own: like
#: transfers.cc (3600 s horizon) it waits for ns-3's TCP, whose SYN retries alone can stall a transfer for 93 s
NS3 = lambda p: NetModel(engine="ns3", transport="reliable", window=p["window"], rto_min=1.0, queue_packets=p["queue"],  # noqa: E731
                         connection="per-message", connect_timeout=3600.0, congestion_control=p.get("tcp", "cubic"),
                         sack=p.get("sack", True), qdisc="fair" if p.get("qdisc") == "fqcodel" else "fifo")


def result(entry: dict) -> dict:
    """A reference entry's result: under "ns3" (tools/ns3/grid.py) or "result" (tools/linux/grid.py)."""
    return entry["result"] if "result" in entry else entry["ns3"]


def referee(entry: dict) -> str:
    return "ns-3" if "ns3" in entry else result(entry).get("referee", "reference")


def min_rto(entry: dict) -> float:
    return float(result(entry).get("tcp", {}).get("min_rto_s", 1.0))


def topology(p: dict, queue_bytes: float | None = None) -> tuple[nx.DiGraph, dict, list[tuple[str, str]]]:
    """The point's graph, its links (each holding `queue_bytes`, None: unbounded) and the (src, dst) of every transfer."""
    n = p["clients"]
    if p["topology"] == "dumbbell":
        g = nx.DiGraph()
        g.add_node("left", role="router")
        g.add_node("right", role="router")
        g.add_edge("left", "right", link_class="server_uplink")
        g.add_edge("right", "left", link_class="server_downlink")
        for k in range(n):
            for side, router in ((f"sender-{k}", "left"), (f"receiver-{k}", "right")):
                g.add_node(side, role="peer")
                g.add_edge(side, router, link_class="uplink")
                g.add_edge(router, side, link_class="downlink")
        pairs = [(f"sender-{k}", f"receiver-{k}") for k in range(n)]
    else:
        g = T.behind_routers(T.star(n), server_link=True, clients_per_ap=p["clientsPerAp"] if p["topology"] == "tree" else 0)
        pairs = [(f"client-{k}", "server") for k in range(n)]
    if p["direction"] in ("down", "round"):  # a round's transfers start with the downloads (see `run`)
        pairs = [(b, a) for a, b in pairs]
    rates = {"server": (p["server"], p["serverDelay"]), "ap": (p["apRate"], p["apDelay"]), "": (p["access"], p["accessDelay"])}
    spread = p.get("accessSpread", 1.0)
    # random packet loss (tools/ns3/loss.py) on each client's access link in the data's direction
    lossy = ("uplink" if p["direction"] == "up" else "downlink") if p.get("loss") else None
    links = {}
    for u, v, cls in g.edges(data="link_class"):
        bw, delay = next(rates[k] for k in ("server", "ap", "") if cls.startswith(k))
        if spread != 1.0 and cls in ("uplink", "downlink") and n > 1:  # uneven access rates, as transfers.cc rounds them
            k = int((u if cls == "uplink" else v).rsplit("-", 1)[1])
            bw = float(round(p["access"] * spread ** (-k / (n - 1))))
        links[(u, v)] = Link(Constant(delay), bandwidth=bw, link_class=cls, loss=Bernoulli(p["loss"]) if cls == lossy else None,
                             queue_bytes=queue_bytes)
    return g, links, pairs


def exact_payload(nbytes: int, msg_id: int, src: str, dst: str, t: float, kind: str = "transfer", round: int = 0) -> bytes:
    """A payload whose message (netemu's envelope header and the payload) is exactly `nbytes` long."""
    n = nbytes - header_size(msg_id, src, dst, kind, round, t)
    for size in range(max(0, n - 5), n + 1):
        payload = msgpack.packb(bytes(size))
        if len(payload) == n:
            return payload
    raise ValueError(f"no payload makes a {nbytes}-byte message")


def run(p: dict, model: NetModel, starts: list[float] | None = None, exact: bool = False) -> float | None:
    """The virtual time at which netemu delivers the last of the point's transfers (None: one never
    arrives); transfer k is sent at `starts[k]` (default: all at t=0).  Under qdisc = "fifo" every link
    holds the point's `queue` packets.  `exact`: each message is p["bytes"] long, envelope included (what
    transfers.cc sends), not p["bytes"] of payload.  A round (`direction = "round"`) is a download to every
    client, each answered by an upload sent the instant it is delivered; the last upload's arrival counts."""
    g, links, pairs = topology(p, p["queue"] * PACKET if model.fifo else None)
    world = World(g, seed=p.get("seed", 1), links=links, model=model)
    net = world.network
    done: list[float] = []
    ids = iter(range(2 * len(pairs)))

    def message(src: str, dst: str, at: float) -> bytes:
        return exact_payload(p["bytes"], next(ids), src, dst, at) if exact else payload

    def answer(m) -> None:  # a round's client uploads what it was sent, at once
        net.send(m.dst, m.src, "transfer", 0, message(m.dst, m.src, m.delivered_at))

    rounds = p["direction"] == "round"
    for src, dst in pairs:
        net.connect(dst, answer if rounds else lambda m: done.append(m.delivered_at) and None)
        if rounds:
            net.connect(src, lambda m: done.append(m.delivered_at) and None)
    payload = msgpack.packb(bytes(p["bytes"]))
    order = sorted(range(len(pairs)), key=lambda k: (starts or [0.0] * len(pairs))[k])
    for k in order:
        src, dst = pairs[k]
        at = starts[k] if starts else 0.0
        data = message(src, dst, at)
        world.at(at, lambda s=src, d=dst, b=data: net.send(s, d, "transfer", 0, b))
    world.env.run()
    return max(done) if len(done) == len(pairs) else None


def error(got: float | None, ref: float) -> float | None:
    return None if got is None else (got - ref) / ref


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", type=Path, default=HERE / "reference.json",
                    help="ns-3 (grid.py --out) or Linux (tools/linux/grid.py --out) results")
    ap.add_argument("--only", action="append", default=[], help="point names or shell patterns (repeatable)")
    ap.add_argument("--markdown", type=Path, help="also write the table and summary as Markdown here")
    ap.add_argument("--ns3", action="store_true", help='also run every point through netemu with engine = "ns3"')
    args = ap.parse_args()
    if args.ns3:
        MODELS["ns3"] = NS3
    try:
        reference = json.loads(args.reference.read_text())
    except OSError as exc:
        sys.exit(f"{args.reference}: {exc.strerror}; run `python tools/ns3/grid.py --out {args.reference}` first")
    label = referee(reference[0]) if reference else "ns-3"
    rows, skipped = [], []
    for entry in reference:
        p, res = entry["point"], result(entry)
        if args.only and not any(fnmatch.fnmatch(p["name"], pat) for pat in args.only):
            continue
        if res["last"] is None or res["complete"] != p["clients"]:
            skipped.append(p["name"])
            continue
        ns3 = res["last"]
        starts = res.get("starts")
        got = {name: run(p, make(p), starts, exact=name == "ns3") for name, make in MODELS.items()  # type: ignore[operator]
               if name not in ("netemu", "fifo")}
        got["netemu"] = run(p, MODELS["netemu"](p, min_rto(entry)), starts)
        got["fifo"] = run(p, MODELS["fifo"](p, min_rto(entry)), starts)
        rows.append((p, ns3, got, stalled(res, min(STALL, min_rto(entry)))))
        errs = "  ".join(f"{got[m]:9.3f} {error(got[m], ns3):+7.1%}" if got[m] is not None else f"{'lost':>17}" for m in MODELS)
        print(f"{p['name']:<34} {label} {ns3:9.3f}{'*' if rows[-1][3] else ' '} {errs}", flush=True)
    lines = summary(rows, label)
    print("\n".join(lines))
    if skipped:
        print(f"skipped ({label} did not complete every transfer): {', '.join(skipped)}")
    if args.markdown:
        args.markdown.write_text(markdown(rows, lines, skipped, label))


STALL = 0.5  # seconds: a transfer of ns-3's whose first byte comes later waited out a retransmission timeout


def stalled(ref: dict, after: float = STALL) -> bool:
    """Whether the referee lost a handshake or a whole first window of some transfer (its first byte after `after` s;
    Linux: its minimum RTO, 0.2 s, well above a first byte's queueing in tools/linux's grid, at most 0.13 s)."""
    return any(t is None or t > after for t in ref["first_rx"])


def summary(rows: list, label: str = "ns-3") -> list[str]:
    out = []
    for title, subset in (("all points", rows), (f"{label} without a stalled start", [r for r in rows if not r[3]]),
                          (f"{label} with a stalled start", [r for r in rows if r[3]])):
        out += [f"{title}: {len(subset)} points; |error| of the last completion time against {label}",
                f"  {'model':<8} {'median':>8} {'p90':>8} {'max':>8}"]
        for m in MODELS:
            errs = sorted(abs(e) for p, ns3, got, _ in subset if (e := error(got[m], ns3)) is not None)
            if errs:
                p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
                out.append(f"  {m:<8} {statistics.median(errs):8.1%} {p90:8.1%} {errs[-1]:8.1%}")
    if "ns3" in MODELS:  # the flow model against ns-3 run through netemu, on the same points
        errs = sorted(abs(e) for p, ns3, got, _ in rows if got["ns3"] is not None and (e := error(got["netemu"], got["ns3"])) is not None)
        if errs:
            p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
            out += [f"netemu (flow model) against ns-3 run through netemu: {len(errs)} points",
                    f"  {'netemu':<8} {statistics.median(errs):8.1%} {p90:8.1%} {errs[-1]:8.1%}"]
    return out


def markdown(rows: list, lines: list[str], skipped: list[str], label: str = "ns-3") -> str:
    head = f"| point | clients | bytes | dir | {label} (s; * stalled start) | " + " | ".join(f"{m} (s) | {m} err" for m in MODELS) + " |"
    out = [head, "|" + "---|" * (5 + 2 * len(MODELS))]
    for p, ns3, got, stall in rows:
        cells = " | ".join(f"{got[m]:.3f} | {error(got[m], ns3):+.1%}" if got[m] is not None else "lost | -" for m in MODELS)
        out.append(f"| {p['name']} | {p['clients']} | {p['bytes']:,} | {p['direction']} | {ns3:.3f}{' *' if stall else ''} | {cells} |")
    text = "```\n" + "\n".join(lines) + "\n```\n\n" + "\n".join(out) + "\n"
    if skipped:
        text += f"\nSkipped ({label} did not complete every transfer): {', '.join(skipped)}\n"
    return text


if __name__ == "__main__":
    main()
