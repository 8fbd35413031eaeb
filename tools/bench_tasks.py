"""Issue 37, item 7: the speed of learning, reported (not asserted).

(a) `--models`: images per second of one local SGD step (a batch of 32 MNIST digits: forward,
    backward, update) for each built-in NumPy model (softmax, mlp with 64 hidden units, cnn with
    8 channels), against the same step in PyTorch (float32 and float64) where torch is installed.
    One BLAS thread (threadpoolctl), one torch thread; CPU time (time.process_time) beside wall,
    the min of --reps repetitions of --steps steps each.  Goal: NumPy within 3x of torch.
(b) `--study mlp|cnn`: scenarios/study_mnist_<model>.toml with run.runs=1 (all 5 arms, 50 rounds)
    as a child `netemu run ... --quiet`, its CPU time from getrusage(RUSAGE_CHILDREN).
    Goals: mlp <= 3 CPU-minutes, cnn <= 20 CPU-minutes.

    python tools/bench_tasks.py                          # models, then both studies
    python tools/bench_tasks.py --models                 # only (a)
    python tools/bench_tasks.py --study mlp              # only (b), the MLP study
    python tools/bench_tasks.py --json                   # one JSON object instead of the tables

The torch side of the CNN is the example plug-in's module (examples/netemu-torch-task), the
same architecture as netemu.kernels.cnn.CNN; softmax and mlp are written here in torch.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from benchtime import timed
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
MNIST = ROOT.parent / "shared" / "data" / "mnist10k"  # the studies' data.source (scenarios/../../shared/data/mnist10k)
BATCH, HIDDEN, CHANNELS = 32, 64, 8
STUDY_GOALS = {"mlp": 3.0, "cnn": 20.0}  # CPU-minutes, issue 37 item 7


def mnist_batches(count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first count × BATCH training digits (pixels in [0, 1]) and labels, as netemu reads them."""
    from netemu.data.files import read_idx_folder

    (X, y), _ = read_idx_folder(MNIST)
    X = X[: count * BATCH] / max(float(X.max()), 1.0)
    return X.astype(np.float64), y[: count * BATCH].astype(np.int64)


def numpy_step(name: str, X: np.ndarray, y: np.ndarray, steps: int) -> Callable[[], object]:
    """`steps` SGD steps of the built-in model, each on the next batch of 32 (netemu's own kernel)."""
    from netemu.kernels.classifiers import MLP, Softmax
    from netemu.kernels.cnn import CNN

    model: Any = {"softmax": Softmax(784, 10), "mlp": MLP(784, HIDDEN, 10), "cnn": CNN(28, 10, CHANNELS)}[name]
    theta0 = model.init(np.random.default_rng(0))

    def run() -> object:
        theta = theta0.copy()
        for k in range(steps):
            rows = slice(k * BATCH, (k + 1) * BATCH)
            _, g = model.loss_grad(theta, X[rows], y[rows])
            theta -= 0.05 * g
        return theta

    return run


def torch_step(name: str, X: np.ndarray, y: np.ndarray, steps: int, dtype: str) -> Callable[[], object]:
    """The same steps in PyTorch: autograd, then p -= lr · grad under no_grad."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(0)  # the benchmark's own weights: only the time is reported
    tdtype = getattr(torch, dtype)
    if name == "cnn":
        from netemu_torch_task import SmallCNN

        module: nn.Module = SmallCNN(28, 10, CHANNELS)
    elif name == "mlp":
        module = nn.Sequential(nn.Flatten(), nn.Linear(784, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))
    else:
        module = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    module = module.to(tdtype)
    shape = (-1, 1, 28, 28) if name == "cnn" else (-1, 784)
    Xt, yt = torch.from_numpy(X).to(tdtype).reshape(shape), torch.from_numpy(y)
    params = list(module.parameters())

    def run() -> object:
        for k in range(steps):
            rows = slice(k * BATCH, (k + 1) * BATCH)
            loss = F.cross_entropy(module(Xt[rows]), yt[rows])
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g in zip(params, grads):
                    p.sub_(g, alpha=0.05)
        return None

    return run


def bench_models(reps: int, steps: int) -> list[dict]:
    """Images per second of each model's step, NumPy and (where installed) torch."""
    X, y = mnist_batches(steps)
    try:
        import torch

        torch.set_num_threads(1)
        sys.path.insert(0, str(ROOT / "examples" / "netemu-torch-task"))
    except ImportError:
        torch = None  # type: ignore[assignment]
    rows = []
    with threadpool_limits(limits=1):
        for name in ("softmax", "mlp", "cnn"):
            row: dict[str, Any] = {"model": name}
            fns = {"numpy": numpy_step(name, X, y, steps)}
            if torch is not None:
                fns["torch_f32"] = torch_step(name, X, y, steps, "float32")
                fns["torch_f64"] = torch_step(name, X, y, steps, "float64")
            for label, fn in fns.items():
                fn()  # warm-up: first-call allocations and torch's lazy initialization
                cpu, wall, _ = timed(fn, reps)
                row[f"{label}_img_s_cpu"] = round(steps * BATCH / cpu)
                row[f"{label}_img_s_wall"] = round(steps * BATCH / wall)
            if torch is not None:
                row["torch_f32_over_numpy"] = round(row["torch_f32_img_s_cpu"] / row["numpy_img_s_cpu"], 2)
                row["torch_f64_over_numpy"] = round(row["torch_f64_img_s_cpu"] / row["numpy_img_s_cpu"], 2)
            rows.append(row)
    return rows


def netemu_command() -> str:
    """The `netemu` script beside this Python (not a shell shim: its CPU would be counted too)."""
    beside = Path(sys.executable).parent / "netemu"
    return str(beside) if beside.exists() else "netemu"


def bench_study(model: str) -> dict:
    """One seed of the study (all arms, 50 rounds) in a child netemu; its CPU time."""
    scenario = ROOT / "scenarios" / f"study_mnist_{model}.toml"
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        subprocess.run([netemu_command(), "run", str(scenario), "--set", "run.runs=1", "--set", "output.plots=false",
                        "--quiet", "--out", str(Path(tmp) / "run")], check=True, cwd=ROOT)
        wall = time.perf_counter() - w0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"study": model, "cpu_min": round(cpu / 60, 2), "wall_min": round(wall / 60, 2), "goal_cpu_min": STUDY_GOALS[model],
            "met": cpu / 60 <= STUDY_GOALS[model]}


def table(rows: list[dict]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    lines = [" | ".join(keys), " | ".join("---" for _ in keys)]
    lines += [" | ".join(str(r.get(k, "")) for k in keys) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", action="store_true", help="only the images-per-second part")
    ap.add_argument("--study", choices=["mlp", "cnn"], action="append", help="only this study (repeatable)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions; the minimum is reported (>= 3)")
    ap.add_argument("--steps", type=int, default=50, help="SGD steps per repetition (distinct batches of 32)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    everything = not args.models and not args.study
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "machine": f"{platform.machine()} {platform.processor()}".strip(),
                           "python": platform.python_version(), "numpy": np.__version__}
    if args.models or everything:
        out["models"] = bench_models(max(3, args.reps), args.steps)
        if not args.json:
            print(f"# one SGD step, batch {BATCH}, MNIST 28x28; images/s by CPU time (and wall); 1 thread\n")
            print(table(out["models"]) + "\n")
    studies = args.study or (["mlp", "cnn"] if everything else [])
    if studies:
        out["studies"] = []
        for model in studies:
            out["studies"].append(bench_study(model))
            if not args.json:
                print(table(out["studies"][-1:]) + "\n", flush=True)
    if args.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
