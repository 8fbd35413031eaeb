"""Small actors and tools shared by the tests."""

import contextlib
import io
import signal

import orjson

from netemu import Actor, MessageLog, World


class Sender(Actor):
    """Sends `plan` = [(time, dst, kind, payload, round), ...] in time order, then
    waits `linger` seconds (the run ends when the last non-daemon actor returns)."""

    def __init__(self, name, plan, linger=100.0):
        super().__init__(name)
        self.plan, self.linger = plan, linger

    async def run(self):
        for t, dst, kind, payload, rnd in self.plan:
            await self.sleep(max(0.0, t - self.now))
            self.send(dst, kind, payload, round=rnd)
        await self.sleep(self.linger)


class Sink(Actor):
    """Receives forever and remembers (time, message)."""

    daemon = True

    def __init__(self, name):
        super().__init__(name)
        self.got = []

    async def run(self):
        while True:
            msg = await self.recv()
            self.got.append((self.now, msg))


def logged_world(graph, **kw):
    buf = io.BytesIO()
    world = World(graph, log=MessageLog(buf), **kw)
    return world, buf


def records(buf):
    return [orjson.loads(line) for line in buf.getvalue().splitlines()]


def run_curves(scenario, out, labels=None, overrides=()):
    """Run a shipped scenario without log, trace or plots into `out`; per metric and
    algorithm, the metric per round averaged over Monte Carlo runs (for the slow
    ordering tests).  `labels` keeps only those algorithms; `overrides` are `--set`
    values (e.g. "run.seed=7": another root seed gives independent data and noise)."""
    import csv
    import tomllib
    from collections import defaultdict
    from pathlib import Path

    import numpy as np

    from netemu.run.runner import execute
    from netemu.scenario.load import parse_scenario

    raw = tomllib.loads(Path(scenario).read_text())
    if labels is not None:
        raw["algorithm"] = [a for a in raw["algorithm"] if a.get("label", a["name"]) in labels]
    quiet = ["output.log=false", "output.trace=false", "output.plots=false"]
    execute(parse_scenario(raw, Path(scenario), quiet + list(overrides)), out, quiet=True)
    by = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    with open(out / "metrics.csv") as f:
        for r in csv.DictReader(f):
            by[r["metric"]][r["algorithm"]][int(r["round"])].append(float(r["value"]))
    return {m: {alg: np.array([np.mean(v[n]) for n in sorted(v)]) for alg, v in algs.items()} for m, algs in by.items()}


class Hang(Exception):
    """A command that did not answer within `time_limit` (e.g. blocked in open() on a FIFO)."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raise `Hang` in the block after `seconds` of wall time: a hang fails the test instead of the suite."""
    def alarm(_signum, _frame):
        raise Hang(f"no answer within {seconds} s (blocked, e.g. in open() on a FIFO?)")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def load_tool(name: str):
    """A script of tools/ as a module (`tools/<name>.py`), registered in sys.modules so that
    its dataclasses can look their module up."""
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent.parent / "tools" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def linear_task(world, clients, *, dim=5, lr=0.05, steps=5, **data):
    """The `linear` task (least squares, `steps` full-batch gradient steps of size `lr`) over
    synthetic linear data for `clients`, drawn from the world's streams: what a scenario's
    `[data] kind = "linear"` and `[task] name = "linear"` build."""
    from netemu.data import LinearData, make_linear
    from netemu.plugins import task
    from netemu.tasks.supervised import LinearParams

    made = make_linear(LinearData(dim=dim, **data), clients, world.streams)
    return task("linear").make(LinearParams(lr=lr, steps=steps), made, world.streams)


#: the keys a graph-filter test may give that are the task's ([task]); "model" takes the family's
#: former names ("mlp_bn", "cnn_bn": the task with batchnorm = true)
GRAPHFL_TASK_KEYS = ("model", "hidden", "channels", "channels2", "lr", "lr_decay", "epochs", "batch", "work_per_sample", "metrics", "batchnorm",
                     "evaluate_every", "evaluate_on")


def graphfl_split(variant, **overrides):
    """(GraphFLParams of `variant` with the algorithm's overrides, the task's keys among `overrides`)."""
    from netemu.algorithms.graphfl import VARIANTS, GraphFLParams

    task = {k: v for k, v in overrides.items() if k in GRAPHFL_TASK_KEYS}
    own = {k: v for k, v in overrides.items() if k not in GRAPHFL_TASK_KEYS}
    return GraphFLParams(**{**{**VARIANTS, **FILTER_LIMITS}[variant], **own}), task


#: the family's server with the filters of its limits, to test its mechanics (deadline, late updates,
#: sparsity, β → ∞ and β = 0): the ζ-weighted mean (FedAvg's rule, with FedProx's mu) and the identity
#: (no sharing).  Scenarios run FedAvg, FedProx and local training as the general algorithms.
FILTER_LIMITS = {"mean-filter": {"filter": "mean", "mu": 0.01}, "identity-filter": {"filter": "identity"}}


def digits_task(world, data, model="softmax", **keys):
    """The task a graph-filter scenario's [task] table makes over `data` (digits_fl's record), with
    the family's former defaults (5 epochs, work 0.002 per sample, accuracy only, 32 hidden units,
    evaluated on the global test set and on each client's own)."""
    from netemu.plugins import task

    name, batchnorm = model.removesuffix("_bn"), model.endswith("_bn")
    defaults = {"epochs": 5, "work_per_sample": 0.002, "metrics": ("accuracy",), "evaluate_on": "both", **({"hidden": 32} if name == "mlp" else {})}
    if batchnorm:
        defaults["batchnorm"] = True
    spec = task(name)
    return spec.make(spec.params(**{**defaults, **keys}), data, world.streams)


class WithTask:
    """A graph-filter algorithm's params with its task's local-training keys beside them (lr,
    lr_decay, epochs, batch, ...), as the vectorized references read them."""

    def __init__(self, params, training):
        self._p, self._t = params, training

    def __getattr__(self, name):
        return getattr(self._p if hasattr(self._p, name) else self._t, name)


class Trained:
    """An algorithm's params with the task's local training (`lr`, `local_steps`) beside them,
    for the references written before local training moved to the task."""

    def __init__(self, params, lr, local_steps):
        self._p, self.lr, self.local_steps = params, lr, local_steps

    def __getattr__(self, name):
        return getattr(self._p, name)


@contextlib.contextmanager
def small_disk(path, size="64k", fill=False):
    """A tmpfs of `size` mounted at `path` (created) for the block, full from the start with `fill`:
    writes there end in ENOSPC as on a full disk.  Skips the test where it cannot mount (not root)."""
    import os
    import subprocess

    import pytest

    if os.geteuid() != 0:
        pytest.skip("a full filesystem is a small tmpfs, and mounting one needs root")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        if fill:
            with contextlib.suppress(OSError), open(path / "filler", "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)
