"""The ClientApp: local training and evaluation on the node's partition."""

from __future__ import annotations

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from flower_digits.task import load_partition, loss_and_accuracy, train

app = ClientApp()


def _data(context: Context):
    cfg = context.node_config
    return load_partition(int(cfg["partition-id"]), int(cfg["num-partitions"]), int(context.run_config.get("data-seed", 0)))


@app.train()
def train_fn(msg: Message, context: Context) -> Message:
    (X, y), _ = _data(context)
    model = msg.content["arrays"].to_numpy_ndarrays()
    lr = float(msg.content["config"]["lr"])
    epochs = int(context.run_config.get("local-epochs", 1))
    model, loss = train(model, X, y, epochs, lr)
    content = RecordDict({"arrays": ArrayRecord(model), "metrics": MetricRecord({"train-loss": loss, "num-examples": len(y)})})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate_fn(msg: Message, context: Context) -> Message:
    _, (X, y) = _data(context)
    loss, acc = loss_and_accuracy(msg.content["arrays"].to_numpy_ndarrays(), X, y)
    content = RecordDict({"metrics": MetricRecord({"eval-loss": loss, "eval-acc": acc, "num-examples": len(y)})})
    return Message(content=content, reply_to=msg)
