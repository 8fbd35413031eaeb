"""Flower messages on netemu's wire: the bytes a link carries are Flower's own protobuf
serialization of the Message (`flwr.common.serde.message_to_proto`), metadata, content
(every ArrayRecord, MetricRecord and ConfigRecord) and error included.

The receiving side rebuilds the Message from those bytes, so a ClientApp and the
ServerApp never share an object: what one learns of the other crossed the network.
"""

from __future__ import annotations

import uuid

import numpy as np
from flwr.app import Message
from flwr.common.serde import message_from_proto, message_to_proto
from flwr.proto.message_pb2 import Message as ProtoMessage  # pylint: disable=E0611

__all__ = ["from_wire", "new_message_id", "to_wire"]


def to_wire(message: Message) -> bytes:
    """Flower's serialization of `message` (deterministic field order)."""
    return message_to_proto(message).SerializeToString(deterministic=True)


def from_wire(data: bytes) -> Message:
    """The Message that `to_wire` serialized (message id included)."""
    return message_from_proto(ProtoMessage.FromString(data))


def new_message_id(rng: np.random.Generator) -> str:
    """A UUID4-shaped message id (as Flower's in-memory Grid assigns) drawn from a
    seeded stream instead of the operating system, so reruns are byte-identical."""
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))
