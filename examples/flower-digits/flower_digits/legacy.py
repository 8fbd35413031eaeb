"""The same model with Flower's compatibility layer, as Flower's DP and secure-aggregation
examples are written: a `NumPyClient` behind `ClientApp(client_fn=...)`, a legacy strategy
behind `ServerApp(server_fn=...)` or a `DefaultWorkflow` (optionally with SecAgg+).

Run config: "strategy" (fedavg, fedadam, fedmedian, fedprox, qfedavg, fedtrimmedavg),
"num-server-rounds", "round-timeout", "local-epochs", "lr", "fraction-train",
"min-train-nodes"; for the workflow app also "secure" (SecAgg+), "num-shares",
"reconstruction-threshold".  The last global model the strategy evaluated is left in
`context.state["final-model"]`.
"""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, Context
from flwr.client import NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.clientapp import ClientApp
from flwr.common import ndarrays_to_parameters
from flwr.server import LegacyContext, ServerAppComponents, ServerConfig
from flwr.server.strategy import FedAdam, FedAvg, FedMedian, FedProx, FedTrimmedAvg, QFedAvg
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.serverapp import Grid, ServerApp

from flower_digits.task import central_test_set, initial_model, load_partition, loss_and_accuracy, train

STRATEGIES = {"fedavg": FedAvg, "fedadam": FedAdam, "fedmedian": FedMedian, "fedprox": FedProx, "qfedavg": QFedAvg,
              "fedtrimmedavg": FedTrimmedAvg}


class DigitsClient(NumPyClient):
    def __init__(self, context: Context) -> None:
        cfg = context.node_config
        self.train_set, self.test_set = load_partition(int(cfg["partition-id"]), int(cfg["num-partitions"]),
                                                       int(context.run_config.get("data-seed", 0)))
        self.epochs = int(context.run_config.get("local-epochs", 1))

    def fit(self, parameters, config):
        X, y = self.train_set
        model, loss = train(list(parameters), X, y, self.epochs, float(config["lr"]))
        return model, len(y), {"train-loss": loss}

    def evaluate(self, parameters, config):
        X, y = self.test_set
        loss, acc = loss_and_accuracy(list(parameters), X, y)
        return loss, len(y), {"eval-acc": acc}


def client_fn(context: Context):
    return DigitsClient(context).to_client()


client_app = ClientApp(client_fn=client_fn)
secure_client_app = ClientApp(client_fn=client_fn, mods=[secaggplus_mod])


def weighted(metrics):
    """Example-weighted mean of each client metric (the strategies' metrics aggregation)."""
    total = sum(n for n, _ in metrics)
    return {key: sum(n * m[key] for n, m in metrics) / total for key in metrics[0][1]} if metrics else {}


def strategy(context: Context):
    cfg = context.run_config
    X_test, y_test = central_test_set(int(cfg.get("data-seed", 0)))

    def evaluate(server_round, parameters, config):
        model = [np.asarray(p) for p in parameters]
        context.state["final-model"] = ArrayRecord(model)
        loss, acc = loss_and_accuracy(model, X_test, y_test)
        return loss, {"accuracy": acc}

    name = str(cfg.get("strategy", "fedavg"))
    extra = {"proximal_mu": 0.1} if name == "fedprox" else {}
    min_train = int(cfg.get("min-train-nodes", 2))
    return STRATEGIES[name](
        fraction_fit=float(cfg.get("fraction-train", 1.0)), fraction_evaluate=float(cfg.get("fraction-evaluate", 0.0)),
        min_fit_clients=min_train, min_evaluate_clients=min_train, min_available_clients=int(cfg.get("min-available-nodes", 2)),
        initial_parameters=ndarrays_to_parameters(initial_model()), evaluate_fn=evaluate,
        on_fit_config_fn=lambda server_round: {"lr": float(cfg.get("lr", 0.5))},
        fit_metrics_aggregation_fn=weighted, evaluate_metrics_aggregation_fn=weighted, **extra,
    )


def _config(context: Context) -> ServerConfig:
    timeout = context.run_config.get("round-timeout")
    return ServerConfig(num_rounds=int(context.run_config.get("num-server-rounds", 3)),
                        round_timeout=None if timeout is None else float(timeout))


def server_fn(context: Context) -> ServerAppComponents:
    return ServerAppComponents(strategy=strategy(context), config=_config(context))


server_app = ServerApp(server_fn=server_fn)
workflow_app = ServerApp()


@workflow_app.main()
def workflow_main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    legacy = LegacyContext(context=context, config=_config(context), strategy=strategy(context))
    fit = None
    if cfg.get("secure", False):
        fit = SecAggPlusWorkflow(num_shares=cfg.get("num-shares", 3), reconstruction_threshold=cfg.get("reconstruction-threshold", 2),
                                 timeout=cfg.get("round-timeout"))
    DefaultWorkflow(fit_workflow=fit)(grid, legacy)
