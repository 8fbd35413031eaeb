"""Wire format: msgpack codec, partial models, envelopes."""

from netemu.wire.codec import WireError, decode, encode
from netemu.wire.partial import PartialModel

__all__ = ["PartialModel", "WireError", "decode", "encode"]
