"""A ServerApp for the differential test against Flower's own simulation: Flower's
Message-API FedAvg, FedAdam or FedMedian on the flower-digits ClientApp; the final model
is left in the Context's state and, if `out` is given, saved there (Flower's Ray
simulation returns no Context)."""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAdam, FedAvg, FedMedian

STRATEGIES = {"fedavg": FedAvg, "fedadam": FedAdam, "fedmedian": FedMedian}


def server_app(strategy: str, rounds: int, nodes: int, out: str | None = None) -> ServerApp:
    """Every round trains on all `nodes` (the minimum too, so that Ray's nodes, which connect
    one by one, are all there before the first round samples)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        from flower_digits.task import initial_model

        chosen = STRATEGIES[strategy](fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=nodes, min_available_nodes=nodes)
        result = chosen.start(grid=grid, initial_arrays=ArrayRecord(initial_model()), num_rounds=rounds, timeout=3600.0,
                              train_config=ConfigRecord({"lr": 0.5}))
        context.state["final-model"] = result.arrays
        if out:
            np.savez(out, *result.arrays.to_numpy_ndarrays())

    return app
