"""`netemu log export` of a message log: wall time, peak memory (max RSS of a fresh process) and sizes per format.

    python tools/bench_export.py LOG_OR_RUN_DIR [--formats parquet arrow csv]

Measured (docs/inspecting.md) on the quick start at 200 clients and 1150 rounds, one run
(1,001,639 records, 181 MB): Parquet 14 MB in 9 s at 250 MB peak, CSV 126 MB peak.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--formats", nargs="+", default=["parquet", "arrow", "csv"])
    args = parser.parse_args()
    for fmt in args.formats:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            code = (f"import resource; from netemu.report.export import export_log; export_log({str(args.log)!r}, {out!r}, {fmt!r}); "
                    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")  # KiB on Linux
            peak_kib = int(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
            wall = time.perf_counter() - t0
            size = sum(p.stat().st_size for p in Path(out).iterdir())
            print(json.dumps({"format": fmt, "seconds": round(wall, 2), "peak_mib": round(peak_kib / 1024, 1),
                              "mb": round(size / 1e6, 2)}))


if __name__ == "__main__":
    main()
