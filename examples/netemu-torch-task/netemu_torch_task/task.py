"""`TorchCNNTask`: netemu's `Task` protocol (netemu.tasks.base) over a PyTorch module.

What netemu sees is NumPy: parameters in and out as one flat float64 vector (netemu_torch_task.model
says the order), sample counts, work units, metrics as floats.  What runs is torch: each local
round loads the vector into the module, takes `steps` SGD steps with autograd and reads the vector
back.  Determinism (same scenario and seed ⇒ byte-identical logs) holds because nothing random is
torch's: the initial parameters come from the stream `task/init`, and the mini-batches are the rows
`netemu.kernels.classifiers.batches` draws from the stream `train/<client>/<n>` (n counting the
client's local rounds in this run) — the very batches netemu's own `cnn` task takes.  Torch runs on
one thread (`torch.set_num_threads(1)`): netemu's measured compute and a shared machine's other
processes assume one core per run, and one thread keeps the order of every float reduction fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from netemu.config import ConfigError
from netemu.engine.rng import Streams
from netemu.kernels.classifiers import batches, macro_prf
from netemu.tasks.base import evaluated, local_steps
from netemu_torch_task.model import SmallCNN, he_init, load_vector, to_vector
from netemu_torch_task.params import TorchCNNParams

__all__ = ["TorchCNNTask"]

_EVAL_CHUNK = 1000  # test images per forward pass in `evaluate`: bounded memory, same result


class TorchCNNTask:
    """A `Task` training `SmallCNN` by local SGD on each client's part of a `classification` split."""

    def __init__(self, params: TorchCNNParams, data: Any, streams: Streams) -> None:
        torch.set_num_threads(1)  # process-wide: see the module docstring
        self.p = params
        self.parts: Mapping[str, tuple[np.ndarray, np.ndarray]] = data.parts
        self.test: tuple[np.ndarray, np.ndarray] = data.test
        self.local_tests: Mapping[str, tuple[np.ndarray, np.ndarray]] = getattr(data, "local_tests", None) or {}
        if params.evaluate_on != "server" and not self.local_tests:
            raise ConfigError("evaluate_on", '"server": the data holds no client test splits (set data.client_test > 0)')
        self.classes = int(data.classes)
        d = int(self.test[0].shape[1])
        self.side = int(round(np.sqrt(d)))
        if self.side * self.side != d or self.side < (4 if params.channels2 else 2):
            raise ConfigError("name", f"a model for {d} features: this CNN reads square grey images (64 for the 8x8 digits, 784 for MNIST)")
        self.dtype = getattr(torch, params.dtype)
        self.module = SmallCNN(self.side, self.classes, params.channels, params.channels2).to(self.dtype)
        self._streams = streams
        self._sizes = {c: int(y.shape[0]) for c, (_, y) in self.parts.items()}
        self._rounds: dict[str, int] = {}
        self._tensors: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self._theta0 = he_init(self.module, streams.generator("task/init"))

    # ---------------------------------------------------------------- sizes and plans

    def init(self) -> np.ndarray:
        return self._theta0.copy()

    def samples(self, client: str) -> int:
        return self._sizes[client]

    def _batch(self, n: int) -> int:
        return n if self.p.batch <= 0 or self.p.batch >= n else self.p.batch

    def plan(self, client: str, fraction: float) -> tuple[int, float]:
        """As netemu's built-in tasks: `steps`, else ⌈n / batch⌉ × `epochs` steps; work = samples processed × work_per_sample."""
        n = self._sizes[client]
        b = self._batch(n)
        per_pass = -(-n // b) if b else 1
        full = self.p.steps or max(1, round(self.p.epochs * per_pass))
        steps = local_steps(full, fraction)
        work = ((steps // per_pass) * n + min((steps % per_pass) * b, n)) * self.p.work_per_sample
        return steps, int(work) if float(work).is_integer() else work

    # ---------------------------------------------------------------- training

    def _data(self, client: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The client's part as tensors (images N×1×side×side in the task's dtype), converted once."""
        if client not in self._tensors:
            X, y = self.parts[client]
            self._tensors[client] = (self._images(X), torch.from_numpy(np.asarray(y, dtype=np.int64)))
        return self._tensors[client]

    def _images(self, X: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(X)).to(self.dtype).reshape(-1, 1, self.side, self.side)

    def _sgd(self, params: np.ndarray, X: torch.Tensor, y: torch.Tensor, rows: Any, mu: float) -> np.ndarray:
        """SGD from `params` over the batches `rows` yields, on cross-entropy + (mu/2)‖θ − params‖²."""
        load_vector(self.module, params)
        weights = list(self.module.parameters())
        anchor = [w.detach().clone() for w in weights] if mu else []
        for r in rows:
            index = r if isinstance(r, slice) else torch.from_numpy(r)
            loss = F.cross_entropy(self.module(X[index]), y[index])
            grads = torch.autograd.grad(loss, weights)
            with torch.no_grad():
                for k, (w, g) in enumerate(zip(weights, grads)):
                    if mu:
                        g = g + mu * (w - anchor[k])  # FedProx's proximal gradient (Li et al. MLSys 2020, eq. 2)
                    w.sub_(self.p.lr * g)
        return to_vector(self.module)

    def train(self, params: np.ndarray, client: str, steps: int, *, mu: float = 0.0) -> np.ndarray:
        X, y = self._data(client)
        k = self._rounds.get(client, 0)
        self._rounds[client] = k + 1
        n = int(y.shape[0])
        if n == 0:
            return np.array(params, dtype=np.float64)
        whole = self.p.batch <= 0 or self.p.batch >= n
        rng = None if whole else self._streams.generator(f"train/{client}/{k}")
        return self._sgd(params, X, y, batches(n, self.p.batch, steps, rng), mu)

    def step_cost(self) -> tuple[Callable[[], object], float]:
        """One SGD step of the client with the median sample count (ties by name), on batches of
        the timing's own generator (nothing of the run's streams); its work units."""
        client = sorted((n, c) for c, n in self._sizes.items())[(len(self._sizes) - 1) // 2][1]
        X, y = self._data(client)
        n, theta = int(y.shape[0]), self.init()
        rng = np.random.default_rng(0)
        return (lambda: self._sgd(theta, X, y, batches(n, self.p.batch, 1, rng), 0.0)), self._batch(n) * self.p.work_per_sample

    # ---------------------------------------------------------------- evaluation

    def _scores(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> dict[str, float]:
        load_vector(self.module, params)
        with torch.no_grad():
            logits = torch.cat([self.module(self._images(X[i : i + _EVAL_CHUNK])) for i in range(0, X.shape[0], _EVAL_CHUNK)])
            labels = torch.from_numpy(np.asarray(y, dtype=np.int64))
            loss = float(F.cross_entropy(logits.to(torch.float64), labels))
        pred = logits.argmax(dim=1).numpy()
        out = {}
        for name in self.p.metrics:
            if name == "accuracy":
                out[name] = float(np.mean(pred == y))
            elif name == "loss":
                out[name] = loss
            else:  # precision, recall, f1: macro_prf's order
                out[name] = macro_prf(y, pred, self.classes)[("precision", "recall", "f1").index(name)]
        return out

    def evaluate(self, params: np.ndarray | Mapping[str, np.ndarray]) -> dict[str, float]:
        """`metrics` of one model, or of each client's own (client -> params), on the server's test set
        and/or (names + `_clients`) the mean over the clients' own test splits (netemu.tasks.base.evaluated)."""
        return evaluated(self._scores, self.p, params, self.test, self.local_tests)

    def evaluates(self, round: int, rounds: int) -> bool:
        return self.p.evaluates(round, rounds)

