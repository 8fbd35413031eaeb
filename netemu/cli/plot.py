"""`netemu plot`: learning curves of run folders, or a final metric against a swept parameter."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    plot = sub.add_parser("plot", help="learning curves of run folders, or a final metric against a swept parameter")
    plot.add_argument("runs", type=Path, nargs="+", help="run folders (or one sweep folder with --x)")
    plot.add_argument("--metric", required=True, help="metric name, e.g. mse_db")
    plot.add_argument("--x", help="x axis: round (default) or time (virtual seconds) for run folders; "
                      "with a sweep folder: the swept key, e.g. algorithm.tau")
    plot.add_argument("--out", type=Path, help="image file (default: METRIC.png in the current folder)")
    plot.add_argument("--svg", action="store_true", help="write SVG instead of PNG")
    plot.add_argument("--band", choices=("auto", "ci", "minmax", "none"), default="auto",
                      help="the band around each mean: ci (95 %% t-interval of the mean over runs), minmax, none; "
                      "auto (default): ci when every series has 3 runs or more, else minmax")
    plot.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    from netemu.report import plot_runs, plot_sweep

    fmt = "svg" if args.svg else "png"
    if args.x and args.x not in ("round", "time"):
        out = plot_sweep(args.runs[0], args.metric, args.x, args.out, fmt=fmt, band=args.band)
    else:
        out = plot_runs(args.runs, args.metric, args.out, fmt=fmt, x=args.x or "round", band=args.band)
    print(out)
    return 0

