"""The ServerApp: Flower's FedAvg with a centralized evaluation after every round.

The final global model is left in `context.state["final-model"]` (Flower returns the
ServerApp's context at the end of a run)."""

from __future__ import annotations

from flwr.app import ArrayRecord, ConfigRecord, Context, MetricRecord
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from flower_digits.task import central_test_set, initial_model, loss_and_accuracy

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    strategy = FedAvg(
        fraction_train=float(cfg.get("fraction-train", 1.0)),
        fraction_evaluate=float(cfg.get("fraction-evaluate", 0.0)),
        min_train_nodes=int(cfg.get("min-train-nodes", 2)),
        min_available_nodes=int(cfg.get("min-available-nodes", 2)),
    )
    X_test, y_test = central_test_set(int(cfg.get("data-seed", 0)))

    def central_evaluation(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        loss, acc = loss_and_accuracy(arrays.to_numpy_ndarrays(), X_test, y_test)
        return MetricRecord({"loss": loss, "accuracy": acc})

    result = strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord(initial_model()),
        num_rounds=int(cfg.get("num-server-rounds", 10)),
        timeout=float(cfg.get("round-timeout", 3600.0)),
        train_config=ConfigRecord({"lr": float(cfg.get("lr", 0.5))}),
        evaluate_fn=central_evaluation,
    )
    context.state["final-model"] = result.arrays
