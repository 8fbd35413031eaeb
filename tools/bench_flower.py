"""Per-round cost of a Flower app under netemu against the same app in a plain
in-process loop (netemu.flower.run_inprocess), measured in the same process.

The app is examples/flower-digits (softmax regression on scikit-learn's digits,
Flower's FedAvg, training and federated evaluation every round), 100 Flower nodes.
Both sides run the unmodified ServerApp and ClientApp and serialize every message
with Flower's protobuf serde; the emulated run adds the worker-thread handoff, the
links (delay, loss), the virtual-time event loop and the message log written to a
file.  Reported per round: CPU time (time.process_time) and wall time, the minimum
over --reps repetitions, and their emulated/in-process ratios.  The final models
of the ideal-network emulated run and the in-process loop are compared too.

    python tools/bench_flower.py [--clients 100] [--rounds 5] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from flwr.supercore.logger import FLOWER_LOGGER

from netemu import Constant, Link, MessageLog, NodeBehaviour, World, star
from netemu.flower import add_flower, run_inprocess

ROOT = Path(__file__).resolve().parent.parent
APP_DIR = str(ROOT / "examples" / "flower-digits")
SERVER, CLIENT = "flower_digits.server_app:app", "flower_digits.client_app:app"


def emulated(clients: int, config: dict, log_path: Path, ideal: bool) -> tuple[World, float, float]:
    links = None if ideal else {
        **{("server", f"client-{k}"): Link(Constant(0.05), bandwidth=10e6, link_class="downlink") for k in range(clients)},
        **{(f"client-{k}", "server"): Link(Constant(0.05), bandwidth=1e6, link_class="uplink") for k in range(clients)},
    }
    behaviours = {f"client-{k}": NodeBehaviour(speed=200.0, slowdown_sigma=0.0 if ideal else 0.3) for k in range(clients)}
    with open(log_path, "wb") as f:
        world = World(star(clients), seed=1, links=links, behaviours=behaviours, log=MessageLog(f))
        add_flower(world, SERVER, CLIENT, run_config=config, app_dir=APP_DIR)
        c0, w0 = time.process_time(), time.perf_counter()
        world.run()
        return world, time.process_time() - c0, time.perf_counter() - w0


def inprocess(clients: int, config: dict) -> tuple[object, float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    ctx = run_inprocess(SERVER, CLIENT, [f"client-{k}" for k in range(clients)], run_config=config, seed=1, app_dir=APP_DIR)
    return ctx, time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    FLOWER_LOGGER.setLevel(logging.WARNING)  # Flower's console lines would be part of both timings
    config = {"num-server-rounds": args.rounds, "local-epochs": 2, "lr": 0.5, "round-timeout": 60.0,
              "fraction-evaluate": 1.0, "min-available-nodes": 2}
    inprocess(args.clients, config)  # warm up: imports, the digits data cache
    best = {k: float("inf") for k in ("emu_cpu", "emu_wall", "ref_cpu", "ref_wall")}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "messages.jsonl"
        for _ in range(args.reps):
            world, cpu, wall = emulated(args.clients, config, log, ideal=False)
            best["emu_cpu"], best["emu_wall"] = min(best["emu_cpu"], cpu), min(best["emu_wall"], wall)
            ctx, cpu, wall = inprocess(args.clients, config)
            best["ref_cpu"], best["ref_wall"] = min(best["ref_cpu"], cpu), min(best["ref_wall"], wall)
        ideal, _, _ = emulated(args.clients, config, log, ideal=True)
    got = ideal.actors["server"].context.state["final-model"].to_numpy_ndarrays()
    want = ctx.state["final-model"].to_numpy_ndarrays()
    per_round = {k: v / args.rounds for k, v in best.items()}
    print(json.dumps({
        "clients": args.clients, "rounds": args.rounds, "reps": args.reps,
        "messages": world.network.message_counts()["total"]["sent"],
        "emulated_cpu_s_per_round": round(per_round["emu_cpu"], 4), "emulated_wall_s_per_round": round(per_round["emu_wall"], 4),
        "inprocess_cpu_s_per_round": round(per_round["ref_cpu"], 4), "inprocess_wall_s_per_round": round(per_round["ref_wall"], 4),
        "ratio_cpu": round(best["emu_cpu"] / best["ref_cpu"], 2), "ratio_wall": round(best["emu_wall"] / best["ref_wall"], 2),
        "ideal_network_max_model_difference": max(float(np.max(np.abs(a - b))) for a, b in zip(got, want, strict=True)),
    }))


if __name__ == "__main__":
    sys.exit(main())
