"""A PyTorch ClientApp on netemu is reproducible: torch's global generator is seeded from a
named stream for the run and restored after it.  PyTorch is not a netemu dependency."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed: pip install -e '.[flower]'")
torch = pytest.importorskip("torch", reason="PyTorch is not installed (not a netemu dependency): pip install torch to run")

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402

from netemu import MessageLog  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from test_flower import APP_DIR, digits_world, final_model  # noqa: E402

app = ClientApp()


@app.train()
def train(msg: Message, context: Context) -> Message:
    """One epoch of SGD with dropout on the node's digits: dropout masks come from torch's global generator."""
    sys.path.insert(0, APP_DIR)
    from flower_digits.task import load_partition

    (X, y), _ = load_partition(int(context.node_config["partition-id"]), int(context.node_config["num-partitions"]))
    W, b = (torch.tensor(a, requires_grad=True) for a in msg.content["arrays"].to_numpy_ndarrays())
    inputs, labels = torch.tensor(X), torch.tensor(y)
    for i in range(0, len(y), 32):
        logits = torch.nn.functional.dropout(inputs[i:i + 32], p=0.2) @ W + b
        loss = torch.nn.functional.cross_entropy(logits, labels[i:i + 32])
        loss.backward()
        with torch.no_grad():
            W -= 0.5 * W.grad
            b -= 0.5 * b.grad
            W.grad.zero_()
            b.grad.zero_()
    content = RecordDict({"arrays": ArrayRecord([W.detach().numpy(), b.detach().numpy()]),
                          "metrics": MetricRecord({"num-examples": len(y)})})
    return Message(content, reply_to=msg)


def run(seed: int) -> tuple[list[np.ndarray], bytes]:
    buf = io.BytesIO()
    world = digits_world(seed, client_app=app, log=MessageLog(buf), run_config={"num-server-rounds": 2, "round-timeout": 30.0})
    world.run()
    return final_model(world), buf.getvalue()


def test_two_runs_of_a_torch_app_with_the_same_seed_give_the_same_model_and_log():
    (model_a, log_a), (model_b, log_b) = run(3), run(3)
    for a, b in zip(model_a, model_b, strict=True):
        np.testing.assert_array_equal(a, b)
    assert log_a == log_b
    assert not all(np.array_equal(a, b) for a, b in zip(model_a, run(4)[0], strict=True))  # the seed reaches torch


def test_torchs_global_generator_is_restored_after_the_run():
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    run(3)
    assert torch.equal(torch.rand(3), expected)
