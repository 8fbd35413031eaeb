"""`netemu sweep`: every combination of a parameter grid, each point in its own run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from netemu.cli.common import announce_script
from netemu.scenario import load_scenario


def register(sub: argparse._SubParsersAction) -> None:
    sw = sub.add_parser(
        "sweep",
        help="run every combination of a parameter grid, each in its own run folder",
        description="Run SCENARIO for every combination of the --grid values (resuming: complete folders run with the "
        "same scenario are skipped) and write OUT/sweep.csv with the status and final metrics per folder. "
        "Exit code: 0 every point complete, 1 some failed, 3 some ended early, 2 bad input, 130/143 interrupted.",
    )
    sw.add_argument("scenario", type=Path, help="scenario TOML file")
    sw.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2|A..B",
                    help="a swept key and its values, e.g. --grid algorithm.mu=0.1,0.2 --grid run.seed=1..20 (repeatable)")
    sw.add_argument("--out", type=Path, help="sweep folder (default: runs/NAME-sweep)")
    sw.add_argument("--executor", choices=("local", "dask"), default="local",
                    help="local: a process pool on this machine; dask: dask.distributed (a LocalCluster unless --address)")
    sw.add_argument("--address", help="dask scheduler address, e.g. tcp://host:8786")
    sw.add_argument("--workers", type=int, help="worker processes (default: the machine's cores; with dask a LocalCluster's, default 2)")
    sw.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                    help="how long to try to reach the dask scheduler at --address (default 10)")
    sw.add_argument("--tls-ca-file", type=Path, help="CA certificate (PEM) of a TLS-secured dask scheduler (tls://host:port)")
    sw.add_argument("--tls-cert", type=Path, help="client certificate (PEM) for the TLS-secured scheduler")
    sw.add_argument("--tls-key", type=Path, help="client private key (PEM), unless it is in --tls-cert")
    sw.add_argument("--rerun-stale", action="store_true",
                    help="run again finished points whose scenario changed since (default: refuse them)")
    sw.add_argument("--max-points", type=int, default=10_000, metavar="N",
                    help="refuse grids of more than N points (default 10000, at most 1000000)")
    sw.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="fixed overrides for every point")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    import signal

    from netemu.diagnostics import event
    from netemu.errors import EXIT_COMPLETE, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_TERMINATED
    from netemu.run.progress import progress as progress_display
    from netemu.run.sweep import TLS, SweepError, SweepInterrupted, parse_grid, sweep

    tls = None
    if args.tls_ca_file or args.tls_cert or args.tls_key:
        if not (args.tls_ca_file and args.tls_cert):
            raise SweepError("TLS needs --tls-ca-file and --tls-cert (and --tls-key unless the key is in the cert file)")
        tls = TLS(str(args.tls_ca_file), str(args.tls_cert), str(args.tls_key) if args.tls_key else None)
    if args.max_points < 1:
        raise SweepError(f"--max-points {args.max_points}: expected >= 1")
    terminated = []

    def on_term(signum, frame):  # SIGTERM stops a sweep like Ctrl-C (pending points cancelled, workers stopped)
        terminated.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        grid = parse_grid(args.grid, args.max_points)
        sc = load_scenario(args.scenario, args.overrides)
        announce_script(sc, args)
        out = args.out or Path("runs") / f"{sc.name}-sweep"
        with progress_display(None, quiet=args.quiet, label="sweep", unit="run") as bar:

            def progress(done: int, total: int) -> None:
                bar.total = total
                bar.n = done
                bar.refresh()

            result = sweep(args.scenario, grid, out, base_overrides=args.overrides, executor=args.executor,
                           workers=args.workers, address=args.address, tls=tls, connect_timeout=args.connect_timeout,
                           rerun_stale=args.rerun_stale, progress=progress)
    except KeyboardInterrupt:  # before any point ran
        what = "terminated (SIGTERM)" if terminated else "interrupted"
        raise SweepInterrupted(f"sweep {what} before any point ran", EXIT_TERMINATED if terminated else None) from None
    except SweepInterrupted as exc:
        if terminated:
            raise SweepInterrupted(str(exc).replace("sweep interrupted", "sweep terminated (SIGTERM)"), EXIT_TERMINATED) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    failed, incomplete, total = result.count("failed"), result.count("incomplete"), len(result.points)
    for name, p in result.points.items():
        if p.status != "complete" and not args.quiet:
            event("sweep.point", f"  {name}: {p.status}: {p.error}", level="warning", point=name, status=p.status, error=p.error)
    if not args.quiet:
        print(f"sweep folder: {out}\nsummary: {result.path}")
    line = f"{total} point{'s' if total != 1 else ''}: {total - failed - incomplete} complete, {incomplete} incomplete, {failed} failed"
    if failed or incomplete:
        event("sweep.ended", f"netemu: sweep: {line} (see {result.path})", level="warning", total=total, failed=failed,
              incomplete=incomplete, summary=str(result.path))
    elif not args.quiet:
        print(line)
    return EXIT_FAILED if failed else EXIT_INCOMPLETE if incomplete else EXIT_COMPLETE

