"""Trace size and speed, format 2 (before) vs 3 (now), on the same fates.

Each scenario runs once (log and plots off) while every fate call the runner makes is
captured: (algorithm, run, key, value) in call order, the repeats the writer skips
included.  Those calls are then written again by `TraceWriter` in each format version
(the whole writer: de-duplication, encoding, hashing, the file write to memory) and the
file read back by `Trace.read` (decoding, checks, checksum).  Reported: trace bytes per
message sent (the file size over the messages of every algorithm and run), and writing
and reading time, CPU (process_time) beside wall, min of --reps.  Both versions must read
back the same fates, bit for bit, or the tool fails.

    python tools/bench_trace.py [--reps 3] [--paofed-runs 1]

PAO-Fed (thesis Fig. 4.2a) runs --paofed-runs of its 10 Monte Carlo runs (bytes per
message hardly depend on it: both the trace and the message count grow per run).
"""

from __future__ import annotations

import argparse
import io
import json
import struct
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from benchtime import timed  # noqa: E402

import netemu.run.runner  # noqa: E402
from netemu.scenario import load_scenario  # noqa: E402
from netemu.trace import Trace, TraceWriter  # noqa: E402


def capture(scenario: Path, sets: list[str], out: Path) -> tuple[dict, list, int]:
    """Run `scenario`; (trace header, every fate call in order, messages sent)."""
    calls: list[tuple[str, int, tuple, object]] = []
    headers: list[dict] = []

    class Capturing(TraceWriter):
        def __init__(self, file, header, version=3):
            headers.append(header)
            super().__init__(file, header, version)

        def fates(self, algorithm, run, inner=None):
            record = super().fates(algorithm, run, inner)

            def capturing(key, draw):
                value = record(key, draw)
                calls.append((algorithm, run, key, value))
                return value

            return capturing

    sc = load_scenario(scenario, ["output.log=false", "output.plots=false", *sets])
    original = netemu.run.runner.TraceWriter
    netemu.run.runner.TraceWriter = Capturing
    try:
        summary = netemu.run.runner.execute(sc, out, quiet=True)
    finally:
        netemu.run.runner.TraceWriter = original
    return headers[0], calls, sum(c["sent"] for c in summary["messages"].values())


def write(header: dict, calls: list, version: int) -> bytes:
    buf = io.BytesIO()
    writer = TraceWriter(buf, header, version=version)
    current, record = None, None
    for algorithm, run, key, value in calls:
        if (algorithm, run) != current:
            current, record = (algorithm, run), writer.fates(algorithm, run)
        record(key, lambda v=value: v)
    writer.close(True)
    return buf.getvalue()


def exact(x: object) -> object:
    if isinstance(x, float):
        return struct.pack(">d", x)
    if isinstance(x, (list, tuple)):
        return tuple(exact(v) for v in x)
    if isinstance(x, dict):
        return {k: exact(v) for k, v in x.items()}
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--paofed-runs", type=int, default=1)
    args = parser.parse_args()
    cases = {"quickstart": [], "paofed_fig4_2a": [f"run.runs={args.paofed_runs}"]}
    with tempfile.TemporaryDirectory() as tmp:
        for name, sets in cases.items():
            header, calls, sent = capture(ROOT / "scenarios" / f"{name}.toml", sets, Path(tmp) / name)
            row: dict = {"scenario": name, "settings": sets, "messages_sent": sent, "fate_calls": len(calls), "reps": args.reps}
            read_back = {}
            for version in (2, 3):
                cpu_w, wall_w, data = timed(lambda v=version, h=header, c=calls: write(h, c, v), args.reps)
                path = Path(tmp) / f"{name}.v{version}.msgpack"
                path.write_bytes(data)
                cpu_r, wall_r, trace = timed(lambda p=path: Trace.read(p), args.reps)
                read_back[version] = trace
                row[f"v{version}"] = {
                    "bytes": len(data), "bytes_per_message": round(len(data) / sent, 1), "entries": sum(map(len, trace.fates_by_run.values())),
                    "write_cpu_s": round(cpu_w, 3), "write_wall_s": round(wall_w, 3), "read_cpu_s": round(cpu_r, 3), "read_wall_s": round(wall_r, 3),
                }
            if exact(read_back[2].fates_by_run) != exact(read_back[3].fates_by_run):
                raise SystemExit(f"{name}: versions 2 and 3 read back different fates")
            row["v3_over_v2"] = {k: round(row["v3"][k] / row["v2"][k], 2) for k in ("bytes", "write_cpu_s", "read_cpu_s")}
            print(json.dumps(row))


if __name__ == "__main__":
    main()
