"""Streaming nonlinear-regression data of PAO-Fed (thesis §4.4.1, eq. 4.35).

Client k draws an AR(1) input x_s = θ_k x_{s−1} + sqrt(1 − θ_k²) u_s, u_s ~ N(μ_k, σ²_k),
with θ_k ~ U(0.2, 0.9), μ_k ~ U(−0.2, 0.2), σ²_k ~ U(0.2, 1.2), embeds it in time as
x = [x_s, x_{s−1}, x_{s−4}, x_{s−3}] and observes

    y = sqrt(x[1]² + sin²(π x[4])) + (0.8 − 0.5 exp(−x[2]²)) x[3] + ν,   ν ~ N(0, σ²_ν,k)

(`formula = "product"`, 1-based indices as in the paper).  The printed bracket can also be
read as (0.8 − 0.5 exp(−x[2]²) x[3]) (`formula = "printed"`).  σ²_ν,k ~ U(0.005, 0.03).

Clients fall into data groups by k mod len(group_samples) (default 500, 1000, 1500 and
2000 samples); a client's samples are revealed one per iteration at iterations drawn
uniformly without replacement from the run, so a client "receives new data" at exactly
that many iterations.  The test set holds `test_samples` samples pooled from
`test_sources` fresh AR sources drawn like clients.  Every client has its own stream, so
adding a client changes no other client's data.  A CSV file can replace the synthetic
source (`load_csv`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from netemu.config import require
from netemu.data.base import client_generators
from netemu.engine.rng import Streams

__all__ = ["OnlineData", "OnlineRegression", "OnlineStream", "load_csv", "make_online", "nonlinear_target", "read_columns"]

LAGS = (0, 1, 4, 3)  # x = [x_s, x_{s-1}, x_{s-4}, x_{s-3}]


@dataclass(frozen=True)
class OnlineData:
    iterations: int = 2000
    group_samples: tuple = (500, 1000, 1500, 2000)
    formula: str = "product"
    test_samples: int = 500
    test_sources: int = 10
    csv: str = ""  # optional CSV of x columns and a final y column, streamed instead
    csv_columns: tuple = ()  # named x columns of a wider table (e.g. CalCOFI's bottle.csv) ...
    csv_target: str = ""  # ... and the named y column; rows with an empty field among them are skipped
    csv_rows: int = 0  # read at most this many usable rows (0: all; PAO-Fed Fig. 4.4 uses 80,000)

    def __post_init__(self) -> None:
        require(self.iterations >= 1, "iterations", ">= 1")
        require(len(self.group_samples) >= 1 and all(isinstance(s, int) and 1 <= s for s in self.group_samples),
                "group_samples", "a list of positive sample counts")
        require(self.formula in ("product", "printed"), "formula", 'one of "product", "printed"')
        require(self.test_samples >= 1 and self.test_sources >= 1, "test_samples", ">= 1 (and test_sources >= 1)")
        require(isinstance(self.csv_columns, (list, tuple)) and all(isinstance(c, str) and c for c in self.csv_columns),
                "csv_columns", "a list of column names of the CSV header")
        require(bool(self.csv_columns) == bool(self.csv_target), "csv_target",
                "a column name, given together with csv_columns (or neither)")
        require(not self.csv_columns or bool(self.csv), "csv_columns", "only with csv = the table's path")
        require(isinstance(self.csv_rows, int) and self.csv_rows >= 0, "csv_rows", ">= 0 (0: every usable row)")

    def with_paths(self, resolve) -> OnlineData:
        """A copy with `csv` resolved (by `resolve`) relative to where the scenario lives."""
        return dataclasses.replace(self, csv=resolve(self.csv)) if self.csv else self


def nonlinear_target(x: np.ndarray, formula: str = "product") -> np.ndarray:
    """f(x) of eq. (4.35) for rows x = [x1, x2, x3, x4] (the paper's 1-based names)."""
    x1, x2, x3, x4 = x[:, 0], x[:, 1], x[:, 2], x[:, 3]
    first = np.sqrt(x1**2 + np.sin(np.pi * x4) ** 2)
    if formula == "product":
        return first + (0.8 - 0.5 * np.exp(-(x2**2))) * x3
    return first + (0.8 - 0.5 * np.exp(-(x2**2)) * x3)


def _ar_inputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """n time-embedded AR(1) inputs of one source with freshly drawn parameters."""
    theta, mu, var = rng.uniform(0.2, 0.9), rng.uniform(-0.2, 0.2), rng.uniform(0.2, 1.2)
    u = rng.normal(mu, np.sqrt(var), size=n + max(LAGS))
    x = np.empty_like(u)
    x[0] = u[0]
    c = np.sqrt(1 - theta**2)
    for s in range(1, x.size):
        x[s] = theta * x[s - 1] + c * u[s]
    start = max(LAGS)
    return np.stack([x[start - lag : start - lag + n] for lag in LAGS], axis=1)


@dataclass(frozen=True)
class OnlineRegression:
    """The data of one Monte Carlo run.  Arrays are indexed by client position k.

    `arrival[k]` — sorted iterations at which client k receives its samples;
    `inputs[k]`, `outputs[k]` — its samples in arrival order; `test` — (X, y).
    """

    clients: tuple[str, ...]
    arrival: tuple[np.ndarray, ...]
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    test: tuple[np.ndarray, np.ndarray]
    iterations: int

    def stream(self) -> OnlineStream:
        return OnlineStream(self)


class OnlineStream:
    """Which clients receive data at iteration n, and their samples, as arrays.

    Every client's samples are stacked once into one table (`X`, `y`) and `row[n, k]` says
    which of its rows client k receives at iteration n (-1: none), so the samples of any
    set of clients are one fancy-indexing gather, not a Python loop per client."""

    def __init__(self, data: OnlineRegression) -> None:
        K, N = len(data.clients), data.iterations
        self.row = np.full((N, K), -1, dtype=np.int64)  # row of X / y, -1 = no new data
        start = 0
        for k, when in enumerate(data.arrival):
            self.row[when, k] = start + np.arange(when.size)
            start += len(data.inputs[k])
        width = max((x.reshape(len(x), -1).shape[1] for x in data.inputs if len(x)), default=0)
        self.X = np.concatenate([x.reshape(len(x), width) for x in data.inputs]) if K else np.empty((0, width))
        self.y = np.concatenate([np.asarray(y, dtype=float) for y in data.outputs]) if K else np.empty(0)
        self.data = data
        # every iteration's clients with data, found in one pass (row-major: by n, then k) and
        # split into read-only views: `with_data` is asked twice per iteration
        iteration, client = np.nonzero(self.row >= 0)
        client.setflags(write=False)
        self._with = np.split(client, np.cumsum(np.bincount(iteration, minlength=N))[:-1])

    def with_data(self, n: int) -> np.ndarray:
        """Positions of the clients that receive a sample at iteration n (read-only)."""
        return self._with[n]

    def samples(self, n: int, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The inputs (rows) and outputs the clients `ks` receive at iteration n."""
        rows = self.row[n, ks]
        return self.X[rows], self.y[rows]

    def sample(self, n: int, k: int) -> tuple[np.ndarray, float]:
        """The input row (1 × L) and output client k receives at iteration n."""
        r = int(self.row[n, k])
        return self.X[r : r + 1], self.y[r]


def make_online(params: OnlineData, clients: Sequence[str], streams: Streams) -> OnlineRegression:
    if params.csv:
        return load_csv(Path(params.csv), params, clients, streams)
    arrival, inputs, outputs = [], [], []
    groups = params.group_samples
    for k, rng in enumerate(client_generators(streams, clients)):
        n = min(groups[k % len(groups)], params.iterations)
        x = _ar_inputs(rng, n)
        noise_sd = np.sqrt(rng.uniform(0.005, 0.03))
        arrival.append(np.sort(rng.choice(params.iterations, size=n, replace=False)))
        inputs.append(x)
        outputs.append(nonlinear_target(x, params.formula) + noise_sd * rng.standard_normal(n))
    test_rng = streams.generator("data/test")
    per = -(-params.test_samples // params.test_sources)
    X = np.concatenate([_ar_inputs(test_rng, per) for _ in range(params.test_sources)])[: params.test_samples]
    y = nonlinear_target(X, params.formula)  # the noiseless target: the test error measures the model
    return OnlineRegression(tuple(clients), tuple(arrival), tuple(inputs), tuple(outputs), (X, y), params.iterations)


def load_csv(path: Path, params: OnlineData, clients: Sequence[str], streams: Streams) -> OnlineRegression:
    """Stream a user's (x, y) rows: columns x1..xL then y, with a header line.

    With `csv_columns` and `csv_target` the x and y columns are picked by name from a wider
    table (`read_columns`).  Rows are dealt to clients round-robin in file order and revealed like the synthetic
    data (one per iteration at drawn iterations); the last `test_samples` rows are the test set.
    """
    if params.csv_columns:
        table = read_columns(path, tuple(params.csv_columns), params.csv_target, params.csv_rows)
    else:
        try:
            table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: expected a CSV with a header and numeric columns x1..xL,y: {exc}") from None
    require(table.shape[1] >= 2, "csv", f"{path}: at least one x column and a y column")
    require(table.shape[0] > params.test_samples, "csv", f"{path}: more rows than test_samples = {params.test_samples}")
    train, test = table[: -params.test_samples], table[-params.test_samples :]
    arrival, inputs, outputs = [], [], []
    for k, rng in enumerate(client_generators(streams, clients)):
        rows = train[k :: len(clients)][: params.iterations]
        arrival.append(np.sort(rng.choice(params.iterations, size=len(rows), replace=False)))
        inputs.append(rows[:, :-1])
        outputs.append(rows[:, -1])
    return OnlineRegression(tuple(clients), tuple(arrival), tuple(inputs), tuple(outputs), (test[:, :-1], test[:, -1]), params.iterations)


CSV_BYTES = 4 << 30  # a CSV table read: no more than 4 GiB on disk (CalCOFI's bottle.csv is ~250 MB)


def read_columns(path: Path, columns: tuple, target: str, max_rows: int = 0) -> np.ndarray:
    """Rows [x columns..., target] of a CSV table with a header, picked by name.

    Built for CalCOFI's bottle.csv (PAO-Fed Fig. 4.4): 74 columns, text ones among them,
    and many empty cells.  A row with an empty field among the chosen columns is skipped;
    any other non-number is a DataError naming the line and column.  Reading stops after
    `max_rows` usable rows (0: all).  The file is read as Latin-1 (bottle.csv's header
    has "Oxy_µmol/Kg" in that encoding), which decodes every byte."""
    import csv
    import os

    from netemu.data.files import DataError

    try:
        size = os.stat(path).st_size
        if size > CSV_BYTES:
            raise DataError(f"{path}: {size} bytes is more than the limit of {CSV_BYTES} bytes for a CSV table")
        with open(path, newline="", encoding="latin-1") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            wanted = [*columns, target]
            missing = [c for c in wanted if c not in header]
            if missing:
                shown = ", ".join(header[:20]) + (", ..." if len(header) > 20 else "")
                raise DataError(f"{path}: no column {missing[0]!r} in the header (has {shown})")
            index = [header.index(c) for c in wanted]
            rows = []
            for line, record in enumerate(reader, start=2):
                fields = [record[i].strip() if i < len(record) else "" for i in index]
                if any(v == "" for v in fields):
                    continue
                try:
                    values = [float(v) for v in fields]
                except ValueError:
                    bad = next(c for c, v in zip(wanted, fields, strict=True) if not _is_number(v))
                    raise DataError(f"{path}: line {line}, column {bad!r}: "
                                    f"{fields[wanted.index(bad)]!r} is not a number") from None
                if not all(np.isfinite(values)):
                    continue  # a "NaN" cell is as missing as an empty one
                rows.append(values)
                if max_rows and len(rows) >= max_rows:
                    break
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
    except csv.Error as exc:
        raise DataError(f"{path}: not a readable CSV table ({exc})") from None
    if not rows:
        raise DataError(f"{path}: no row has numbers in all of {', '.join(wanted)}")
    return np.array(rows)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
