"""How much virtual compute a ClientApp call costs: a deterministic work model.

A Flower ClientApp runs instantly in wall time; the node then spends
`work / speed` virtual seconds (netemu's straggler model: node speed, its log-normal
slowdown, groups, device traces) before its reply leaves.  The work of one message is

    per_message + examples × (train_per_example × epochs   for "train" messages,
                              evaluate_per_example         for "evaluate" messages,
                              0                            otherwise)

where `examples` is the value the ClientApp reports under `examples_key` in its reply's
MetricRecord (Flower's convention: "num-examples"; a legacy `NumPyClient`'s reply carries
it as "num_examples", read when `examples_key` is absent), 0 if neither is there, and `epochs` is the value of
`epochs_key` in the instruction's ConfigRecord, else in the run config, else 1.
Nothing here reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netemu.config import require

if TYPE_CHECKING:  # needs no Flower at import: the spec (and netemu validate) use this class
    from flwr.app import Message

__all__ = ["LEGACY_EXAMPLES_KEY", "WorkModel"]

LEGACY_EXAMPLES_KEY = "num_examples"  # FitRes / EvaluateRes.num_examples in a legacy reply's MetricRecord


@dataclass(frozen=True)
class WorkModel:
    examples_key: str = "num-examples"
    epochs_key: str = "local-epochs"
    train_per_example: float = 1.0
    evaluate_per_example: float = 0.1
    per_message: float = 0.0

    def __post_init__(self) -> None:
        require(self.train_per_example >= 0, "train_per_example", ">= 0 work units per example and epoch")
        require(self.evaluate_per_example >= 0, "evaluate_per_example", ">= 0 work units per example")
        require(self.per_message >= 0, "per_message", ">= 0 work units")

    def work(self, instruction: Message, reply: Message, run_config: dict[str, Any]) -> float:
        """Work units the node spends on `instruction`, whose reply is `reply`."""
        category = instruction.metadata.message_type.split(".", 1)[0]
        if category == "train":
            per_example = self.train_per_example * self._epochs(instruction, run_config)
        elif category == "evaluate":
            per_example = self.evaluate_per_example
        else:
            per_example = 0.0
        return self.per_message + per_example * (self.examples(reply) or 0.0)

    def examples(self, reply: Message) -> float | None:
        """The examples `reply` reports (`examples_key`, else the legacy "num_examples"), None if it reports none."""
        if not reply.has_content():
            return None
        for key in (self.examples_key, LEGACY_EXAMPLES_KEY):
            for record in reply.content.metric_records.values():
                value = record.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return float(value)
        return None

    def _epochs(self, instruction: Message, run_config: dict[str, Any]) -> float:
        if instruction.has_content():
            for record in instruction.content.config_records.values():
                value = record.get(self.epochs_key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return float(value)
        value = run_config.get(self.epochs_key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 1.0

