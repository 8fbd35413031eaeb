"""msgpack codec for payloads and envelopes.  The encoded length is the wire size.

Extension types (documented in docs/formats.md):

* 1 — ``numpy.ndarray``: msgpack array ``[dtype.str, shape, raw C-order bytes]``;
  dtype.str carries the byte order, so big-endian arrays stay big-endian.
* 2 — NumPy scalar (``np.float32(1.5)``): same layout with shape ``[]``; decodes to a scalar.
* 3 — ``PartialModel``: ``[dim, indices(ext 1), values(ext 1)]``.

Object and structured (void) dtypes are refused: they have no portable byte form.
Tuples decode as lists (msgpack has one sequence type).
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from netemu.errors import InputError
from netemu.wire.partial import PartialModel

__all__ = ["ENVELOPE_FIELDS", "WireError", "decode", "decode_envelope", "encode", "encode_envelope", "encode_from"]

EXT_NDARRAY, EXT_SCALAR, EXT_PARTIAL = 1, 2, 3
_REFUSED_KINDS = {"O": "object", "V": "structured/void"}

#: order of the fields of an encoded envelope (a msgpack array)
ENVELOPE_FIELDS = ("id", "src", "dst", "kind", "round", "sent_at", "payload")


class WireError(InputError, TypeError):
    """A payload cannot be put on the wire; the message names the offending field."""


def _array_ext(code: int, arr: np.ndarray) -> msgpack.ExtType:
    if arr.dtype.kind in _REFUSED_KINDS:
        raise WireError(f"{_REFUSED_KINDS[arr.dtype.kind]} dtype {arr.dtype} cannot be encoded")
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        arr = arr.copy(order="C")
    return msgpack.ExtType(code, msgpack.packb([arr.dtype.str, list(arr.shape), arr.tobytes()]))


def _default(obj: Any) -> msgpack.ExtType:
    if isinstance(obj, np.ndarray):
        return _array_ext(EXT_NDARRAY, obj)
    if isinstance(obj, np.generic):
        return _array_ext(EXT_SCALAR, np.asarray(obj))
    if isinstance(obj, PartialModel):
        body = [obj.dim, _array_ext(EXT_NDARRAY, obj.indices), _array_ext(EXT_NDARRAY, obj.values)]
        return msgpack.ExtType(EXT_PARTIAL, msgpack.packb(body))
    raise WireError(f"type {type(obj).__name__} cannot be encoded")


def _array_from(data: bytes) -> np.ndarray:
    dtype, shape, raw = msgpack.unpackb(data)
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()


def _ext_hook(code: int, data: bytes) -> Any:
    if code == EXT_NDARRAY:
        return _array_from(data)
    if code == EXT_SCALAR:
        return _array_from(data)[()]
    if code == EXT_PARTIAL:
        dim, indices, values = msgpack.unpackb(data, ext_hook=_ext_hook)
        return PartialModel(dim, indices, values)
    return msgpack.ExtType(code, data)


def _find_bad_field(obj: Any, path: str) -> tuple[str, str] | None:
    """Locate the first field the codec refuses: (dotted path, reason)."""
    try:
        msgpack.packb(obj, default=_default, use_bin_type=True)
        return None
    except (WireError, TypeError, ValueError, OverflowError) as exc:
        reason = str(exc)
    if isinstance(obj, dict):
        for k, v in obj.items():
            found = _find_bad_field(v, f"{path}[{k!r}]")
            if found:
                return found
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found = _find_bad_field(v, f"{path}[{i}]")
            if found:
                return found
    return path, reason


def encode(payload: Any, *, context: str = "payload") -> bytes:
    """msgpack bytes of `payload`; a refusal names the field (`context` prefixes the message)."""
    try:
        return msgpack.packb(payload, default=_default, use_bin_type=True)
    except (WireError, TypeError, ValueError, OverflowError):
        path, reason = _find_bad_field(payload, "payload") or ("payload", "cannot be encoded")
        raise WireError(f"{context}: field {path}: {reason}") from None


def encode_from(sender: str, kind: str, payload: Any, dst: str | None = None) -> bytes:
    """`encode` for an actor's message: a refusal names the sender, kind and field
    (the context string is only built on that error path)."""
    try:
        return msgpack.packb(payload, default=_default, use_bin_type=True)
    except (WireError, TypeError, ValueError, OverflowError):
        to = f" to {dst!r}" if dst is not None else ""
        return encode(payload, context=f"{sender} sending {kind!r}{to}")


def decode(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)


_HEADER = msgpack.Packer(use_bin_type=True)


def encode_envelope(msg_id: int, src: str, dst: str, kind: str, round: int, sent_at: float, payload: bytes) -> bytes:
    """Encoded envelope; `payload` is the already-encoded payload (shared by a broadcast)."""
    pack = _HEADER.pack
    return b"".join(
        (_HEADER.pack_array_header(7), pack(msg_id), pack(src), pack(dst), pack(kind), pack(round), pack(sent_at), payload)
    )


def decode_envelope(data: bytes) -> list:
    """`[id, src, dst, kind, round, sent_at, payload]` with the payload decoded."""
    return decode(data)
