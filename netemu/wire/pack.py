"""msgpack encoding of payloads: the bytes `netemu.wire.codec` documents (its extension
types, its refusals).  Apart from the codec, which decodes and frames envelopes, so that
`netemu.wire.lazy` makes an `Unencoded` payload's bytes here without importing the codec
that imports it.
"""

from __future__ import annotations

import threading
from typing import Any

import msgpack
import numpy as np

from netemu.errors import InputError
from netemu.wire.partial import PartialModel

__all__ = ["EXT_NDARRAY", "EXT_PARTIAL", "EXT_SCALAR", "REFUSED_KINDS", "WireError", "encode", "pack_payload"]

EXT_NDARRAY, EXT_SCALAR, EXT_PARTIAL = 1, 2, 3
REFUSED_KINDS = {"O": "object", "V": "structured/void"}


class WireError(InputError, TypeError):
    """A payload cannot be put on the wire; the message names the offending field."""


# packs the bodies of extensions: lists of strings, ints, bytes and ExtTypes, never calling back
# into Python, so one packer serves every call (msgpack.packb builds a packer per call)
_BODY = msgpack.Packer(use_bin_type=True)


def _array_body(arr: np.ndarray) -> bytes:
    if arr.dtype.kind in REFUSED_KINDS:
        raise WireError(f"{REFUSED_KINDS[arr.dtype.kind]} dtype {arr.dtype} cannot be encoded")
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        arr = arr.copy(order="C")
    return _BODY.pack([arr.dtype.str, list(arr.shape), arr.tobytes()])


def _array_ext(code: int, arr: np.ndarray) -> msgpack.ExtType:
    return msgpack.ExtType(code, _array_body(arr))


_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}  # fixext 1, 2, 4, 8, 16: the body's size in the type byte


def _ext_bytes(code: int, body: bytes) -> bytes:
    """What msgpack packs ``ExtType(code, body)`` into: its header (fixext, or ext 8, 16 or
    32 with the body's length, big-endian), the type code, the body."""
    n = len(body)
    fixed = _FIXEXT.get(n)
    if fixed is not None:
        return bytes((fixed, code)) + body
    if n < 0x100:
        return bytes((0xC7, n, code)) + body
    if n < 0x10000:
        return b"\xc8" + n.to_bytes(2, "big") + bytes((code,)) + body
    return b"\xc9" + n.to_bytes(4, "big") + bytes((code,)) + body  # (4 GiB or more: OverflowError, a refusal)


def _default(obj: Any) -> msgpack.ExtType:
    if isinstance(obj, np.ndarray):
        return _array_ext(EXT_NDARRAY, obj)
    if isinstance(obj, np.generic):
        return _array_ext(EXT_SCALAR, np.asarray(obj))
    if isinstance(obj, PartialModel):
        body = [obj.dim, _array_ext(EXT_NDARRAY, obj.indices), _array_ext(EXT_NDARRAY, obj.values)]
        return msgpack.ExtType(EXT_PARTIAL, _BODY.pack(body))
    raise WireError(f"type {type(obj).__name__} cannot be encoded")


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


_PACKERS = threading.local()  # each thread's payload packer: `_default` runs Python code, so a pack is not atomic


def pack_payload(payload: Any) -> bytes:
    """``msgpack.packb(payload, default=_default, use_bin_type=True)`` through this thread's
    packer, kept rather than built per call (a fifth of a small payload's encoding); a
    packer starts afresh after an exception, so a refused payload leaves nothing behind."""
    if type(payload) is np.ndarray:  # a model: its extension's bytes made here, not through the packer's callback
        return _ext_bytes(EXT_NDARRAY, _array_body(payload))
    try:
        pack = _PACKERS.pack
    except AttributeError:
        pack = _PACKERS.pack = msgpack.Packer(use_bin_type=True, default=_default).pack
    return pack(payload)


def encode(payload: Any, *, context: str = "payload") -> bytes:
    """msgpack bytes of `payload`; a refusal names the field (`context` prefixes the message)."""
    try:
        return pack_payload(payload)
    except (WireError, TypeError, ValueError, OverflowError):
        path, reason = _find_bad_field(payload, "payload") or ("payload", "cannot be encoded")
        raise WireError(f"{context}: field {path}: {reason}") from None
