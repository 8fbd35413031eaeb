"""The graph-filter family's run constants (netemu.algorithms.graphfl): the data, the task's
model and local training, the initial θ⁰, FedBN's kept entries, each client's device and plan (α, q, z), and —
set by the server from the clients' `stats` messages — the weights ζ and the client graph
the filters use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netemu.algorithms.graphfl_params import _POSITIONS_NEEDED, GraphFLParams, check_task
from netemu.config import require
from netemu.kernels.graphfilter import (
    components,
    hard_filter,
    join_components,
    laplacian,
    paper_filter,
    position_graph,
    soft_filter,
    spectrum,
    statistics_graph,
    weighted_filter,
)
from netemu.kernels.personal import merge_kept, personalize
from netemu.system import Device, draw_devices, heterogeneity, optimize, rate
from netemu.wire.codec import encode_envelope, encode_from
from netemu.wire.partial import PartialModel

if TYPE_CHECKING:
    from netemu.data.federated import FederatedTask
    from netemu.engine.world import World
    from netemu.tasks.supervised import ModelTask

__all__ = ["GraphFLState"]


class GraphFLState:
    """The run's shared constants: data, model and local training (the task's), client weights ζ
    and the client graph.  `task` is the data (`digits_fl`'s record: parts, local and global test
    sets, positions) and `training` the task's local-training keys (lr, lr_decay, epochs, batch,
    work_per_sample, metrics, evaluate_every)."""

    def __init__(self, world: World, p: GraphFLParams, learning: ModelTask) -> None:
        check_task(p, learning.p)
        self.p, self.training, self.model = p, learning.p, learning.model
        self.learning = learning  # the task: its evaluation scores the models the clients use
        self.task: FederatedTask = learning.data
        task = self.task
        self.clients = [n for n, node in world.network.nodes.items() if node.role == "client"]
        require(set(self.clients) <= set(task.parts), "topology", "a star whose clients all have data")
        # ω⁰ is the task's θ⁰ (stream "task/init"): every algorithm of a run starts from the same
        # model, the general FedAvg, FedProx and local-only beside this family among them
        self.theta0 = learning.init()
        mask = getattr(self.model, "local_mask", None)
        require(not p.keep_local or mask is not None, "keep_local", "false with a model without batch-norm entries (FedBN keeps them local)")
        # FedBN: entries that stay on the clients (None: every entry travels)
        self.kept = np.asarray(mask, dtype=bool) if p.keep_local else None
        self.shared_size = self.model.size if self.kept is None else int((~self.kept).sum())
        # what each client uses, for the local accuracy only (pFedMe's θ̂, FedBN's kept
        # entries): written by the clients, read by the metrics, never by the algorithm
        self.probe: dict[str, np.ndarray] = {}
        if p.graph == "positions":
            require(task.positions is not None, "graph", _POSITIONS_NEEDED)
        # set by the server from the clients' `stats` messages (set_graph)
        self.zeta: np.ndarray | None = None
        self.A: np.ndarray | None = None
        self.spectrum: tuple[np.ndarray, np.ndarray] | None = None
        self.components = 0
        n = len(self.clients)
        self.plan: dict[str, tuple[float, float, float]] = {k: (self.training.epochs, 1.0, p.sparsity) for k in self.clients}  # (α, q, z) per client
        self.devices, self.deadline, self.H = None, p.deadline, None
        if p.system == "table3":
            devices = dict(zip(self.clients, draw_devices(n, world.streams.generator("system"), p.system_spread)))
            self.devices, self.H = devices, heterogeneity(list(devices.values()))
            if p.optimize:
                self.plan_rounds(world, devices)

    def update_bits(self, world: World) -> tuple[float, float]:
        """(χ₀, χ₁): the encoded size in bits of an update sending share z of the entries is
        about χ₀ + z χ₁ (fitted on the envelopes of two partial updates)."""
        k, server = self.clients[0], world.network.neighbours(self.clients[0])[0]
        B = self.shared_size

        def bits(m: int) -> float:
            u = PartialModel.take(np.ones(B), np.arange(m))
            return 8.0 * len(encode_envelope(0, k, server, "update", 1, 0.0, encode_from(k, "update", {"u": u})))

        small, large = max(1, B // 10), B
        per_entry = (bits(large) - bits(small)) / (large - small)
        return bits(large) - per_entry * B, per_entry * B

    def plan_rounds(self, world: World, by_client: dict[str, Device]) -> None:
        """Problem P'' (33) under T_opt (28); per-client (α, q, z) and the deadline."""
        p = self.p
        devices = [by_client[k] for k in self.clients]
        plan = optimize(devices, [self.task.parts[k][1].size for k in self.clients], self.update_bits(world),
                        weights=(p.opt_mu1, p.opt_mu2, p.opt_mu3), alpha_range=(p.alpha_min, p.alpha_max),
                        q_min=p.q_min, z_min=p.z_min, energy_max=p.energy_max, relax_alpha=p.opt_alpha == "relaxed")
        self.plan = {k: (plan.alpha[i], plan.q[i], plan.z[i]) for i, k in enumerate(self.clients)}
        self.deadline = plan.deadline * 1.02

    def apply_devices(self, world: World, server: str) -> None:
        """Each device's compute speed (f/ρ samples/s) and uplink bandwidth (r bits/s)."""
        for k, d in (self.devices or {}).items():
            world.network.nodes[k].speed = d.speed
            world.network.link(k, server).bandwidth = rate(d)

    @property
    def needs_graph(self) -> bool:
        return self.p.filter in ("soft", "hard")


    def set_graph(self, reports: dict[str, dict]) -> None:
        """ζ, the client graph and its spectrum from the received reports; a client
        without a report gets the others' mean sample count and no edges."""
        p, K = self.p, len(self.clients)
        known = [reports[k]["n"] for k in self.clients if k in reports]
        fill = float(np.mean(known)) if known else 1.0
        sizes = np.array([reports[k]["n"] if k in reports else fill for k in self.clients], dtype=float)
        self.zeta = sizes / sizes.sum()
        if not self.needs_graph:  # the mean and identity filters use no graph
            self.A = np.zeros((K, K))
            return
        have = [i for i, k in enumerate(self.clients) if k in reports]
        A = np.zeros((K, K))
        if have:
            if p.graph == "positions":
                sub = position_graph(np.array([reports[self.clients[i]]["pos"] for i in have]), p.d_max)
            else:
                sub = statistics_graph([np.asarray(reports[self.clients[i]]["s"]) for i in have])
            A[np.ix_(have, have)] = sub
        self.components = int(components(A).max()) + 1
        if p.disconnected == "join" and self.components > 1:
            A = join_components(A, p.join_weight)
        self.A, self.spectrum = A, spectrum(laplacian(A))

    def aggregate(self, t: int, stack: np.ndarray) -> np.ndarray:
        """F applied to the K × B stack (module docstring, step 4)."""
        p = self.p
        if p.filter == "identity":
            return stack.copy()
        zeta, spec = self.zeta, self.spectrum
        if zeta is None:
            raise RuntimeError("GraphFLState.aggregate before set_graph: no client weights ζ yet")
        if p.filter == "mean":
            return np.broadcast_to(zeta @ stack, stack.shape).copy()
        if spec is None:
            raise RuntimeError(f"GraphFLState.aggregate before set_graph: the {p.filter} filter has no graph spectrum yet")
        if p.filter == "hard":
            return hard_filter(spec, min(p.tau, t, len(self.clients))) @ stack
        H = soft_filter(spec, *p.nu(t))
        if p.normalize == "paper":
            return paper_filter(H, zeta, stack)
        return weighted_filter(H, zeta, stack)

    def shared(self, vector: np.ndarray) -> np.ndarray:
        """The entries of a model vector that travel (all but FedBN's kept ones)."""
        return vector if self.kept is None else vector[~self.kept]

    def used_model(self, k: str, row: np.ndarray) -> np.ndarray:
        """The model client k uses, for the metrics: pFedMe's θ̂ from its last local round;
        otherwise its server row Ψ[k] with, under FedBN, the client's own kept entries, and
        for Per-FedAvg one step of size α on its training data (`personalize`).  The
        metrics observe the clients' state here; the algorithm never does."""
        p, seen = self.p, self.probe.get(k)
        if p.local == "pfedme":
            return row if seen is None else seen
        if self.kept is not None and seen is not None:
            row = merge_kept(row[~self.kept], seen, self.kept)
        if p.local == "perfedavg":
            row = personalize(self.model, row, *self.task.parts[k], p.alpha)
        return row

