"""`netemu devices import`: FedScale, FLGo or CSV device traces into a netemu devices file."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    dev = sub.add_parser("devices", help="import device availability and capacity traces")
    dev_sub = dev.add_subparsers(dest="devices_command", required=True, metavar="SUBCOMMAND")
    imp = dev_sub.add_parser(
        "import",
        help="convert FedScale or FLGo traces (or netemu's own CSV) into a netemu devices file",
        description="Convert device traces into a netemu devices JSON file, for [devices] file = ... in a scenario "
        "(docs/inspecting.md). fedscale: client_behave_trace and client_device_capacity (pickle or JSON; pickles are "
        "read without running code), paired by position as FedScale does, periodic, compute time 3 x batch x steps x "
        "ms / 1000. flgo: Kaggle's pings.csv (id,timestamp) and Benchmark-On-Device-Training time tables "
        "(batchsize,expr_train). netemu-csv: availability rows client,start,end and capacity rows client,speed,bandwidth.",
    )
    imp.add_argument("--format", choices=("fedscale", "flgo", "netemu-csv", "csv"), required=True,
                     help="csv is the old name of netemu-csv")
    imp.add_argument("--availability", type=Path, help="availability trace")
    imp.add_argument("--capacity", type=Path, nargs="+", help="capacity trace (flgo: one time table per device type)")
    imp.add_argument("--time-scale", type=float, default=1.0, help="multiply the traces' times by this (default 1)")
    imp.add_argument("--periodic", action=argparse.BooleanOptionalAction, default=None,
                     help="repeat the trace after its end (default: yes for fedscale and flgo, no for netemu-csv)")
    imp.add_argument("--pairing", choices=("position", "id"), default="position",
                     help="fedscale: client c takes record c %% n of each file (position, FedScale's) or the same id")
    imp.add_argument("--count", type=int, help="fedscale, flgo: how many devices to write (default: the larger file)")
    imp.add_argument("--order", choices=("HIGH", "LOW"), default="HIGH",
                     help="flgo: users with the most (HIGH) or fewest (LOW) pings first")
    imp.add_argument("--out", type=Path, required=True, help="devices JSON file to write")
    imp.set_defaults(func=cmd_devices_import)


def cmd_devices_import(args) -> int:
    from netemu.devices import DeviceError, from_fedscale, from_flgo, from_netemu_csv, write_devices

    if args.availability is None and not args.capacity:
        raise DeviceError("give --availability, --capacity or both")
    if args.format != "flgo" and args.capacity and len(args.capacity) > 1:
        raise DeviceError(f"--capacity: {args.format} takes one capacity file, got {len(args.capacity)}")
    capacity = args.capacity[0] if args.capacity and args.format != "flgo" else args.capacity
    if args.format == "fedscale":
        doc = from_fedscale(args.availability, capacity, args.time_scale, pairing=args.pairing,
                            periodic=args.periodic is not False, count=args.count)
    elif args.format == "flgo":
        doc = from_flgo(args.availability, capacity, args.time_scale, periodic=args.periodic is not False,
                        order=args.order, count=args.count)
    else:
        doc = from_netemu_csv(args.availability, capacity, args.time_scale, periodic=bool(args.periodic))
    write_devices(doc, args.out)
    periods = {d["period"] for d in doc["devices"] if "period" in d}
    repeat = f", repeating every {min(periods):g} s" if len(periods) == 1 else (", periodic" if periods else ", not periodic")
    print(f"{args.out}: {len(doc['devices'])} devices, horizon {doc['horizon']:g} s{repeat}")
    for note in doc.get("notes", []):
        print(f"  note: {note}")
    return 0

