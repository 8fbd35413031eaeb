"""msgpack codec for payloads and envelopes.  The encoded length is the wire size.

Extension types (documented in docs/formats.md):

* 1 — ``numpy.ndarray``: msgpack array ``[dtype.str, shape, raw C-order bytes]``;
  dtype.str carries the byte order, so big-endian arrays stay big-endian.
* 2 — NumPy scalar (``np.float32(1.5)``): same layout with shape ``[]``; decodes to a scalar.
* 3 — ``PartialModel``: ``[dim, indices(ext 1), values(ext 1)]``.

Object and structured (void) dtypes are refused: they have no portable byte form.
Tuples decode as lists (msgpack has one sequence type).

Decoding trusts nothing it reads: msgpack's container and string limits are the
length of the bytes given (a message cannot declare more items than it has bytes),
and an array extension must carry exactly the bytes its dtype and shape need, so a
crafted message cannot make the decoder allocate more than a small multiple of its
own size.  Anything malformed is a `WireError` naming what is wrong.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from netemu.wire.lazy import Unencoded, fresh, unencoded
from netemu.wire.pack import EXT_NDARRAY, EXT_PARTIAL, EXT_SCALAR, REFUSED_KINDS, WireError, encode, pack_payload
from netemu.wire.partial import PartialModel

__all__ = ["ENVELOPE_FIELDS", "Unencoded", "WireError", "decode", "decode_envelope", "encode", "encode_envelope", "encode_from",
           "fresh", "header_size"]

#: order of the fields of an encoded envelope (a msgpack array)
ENVELOPE_FIELDS = ("id", "src", "dst", "kind", "round", "sent_at", "payload")


def _ext_body(data: bytes) -> tuple[int, int] | None:
    """(type code, offset of the body) when `data` is exactly one msgpack extension, else None."""
    if not data:
        return None
    first = data[0]
    if 0xD4 <= first <= 0xD8:
        n, start = 1 << (first - 0xD4), 2
    elif first == 0xC7 and len(data) > 2:
        n, start = data[1], 3
    elif first == 0xC8 and len(data) > 3:
        n, start = int.from_bytes(data[1:3], "big"), 4
    elif first == 0xC9 and len(data) > 5:
        n, start = int.from_bytes(data[1:5], "big"), 6
    else:
        return None
    if start + n != len(data):
        return None
    return data[start - 1], start


_MAX_DIMS = 64  # NumPy's own limit
_DTYPES: dict[str, np.dtype] = {}  # dtype strings already checked (a run uses a handful)


def _unpack(data: bytes | memoryview) -> Any:
    """msgpack.unpackb: since msgpack 1.0 (the pinned minimum) every container and string
    limit of unpackb defaults to len(data), so a message cannot declare more items than
    it has bytes.  (Passing the limits explicitly costs a microsecond per call; so does
    forwarding keywords through ``**kw``: hence two functions, this one and `_unpack_ext`.)"""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def _unpack_ext(data: bytes) -> Any:
    """`_unpack` with netemu's extensions decoded (`_ext_hook`)."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=_ext_hook)


def _dtype(dtype_str: Any) -> np.dtype:
    dtype = _DTYPES.get(dtype_str) if isinstance(dtype_str, str) else None
    if dtype is not None:
        return dtype
    if not isinstance(dtype_str, str):
        raise WireError(f"ndarray extension: the dtype must be a string, got {repr(dtype_str)[:40]}")
    try:
        dtype = np.dtype(dtype_str)
    except (TypeError, ValueError, OverflowError, SyntaxError):  # SyntaxError: numpy literal_evals "i2,(,)"-like strings
        raise WireError(f"ndarray extension: {dtype_str[:40]!r} is not a NumPy dtype") from None
    if dtype.kind in REFUSED_KINDS or dtype.shape or dtype.fields is not None or dtype.itemsize == 0:
        raise WireError(f"ndarray extension: dtype {dtype_str[:40]!r} is refused (only plain dtypes with a byte form)")
    if len(_DTYPES) < 256:
        _DTYPES[dtype_str] = dtype
    return dtype


def _array_from(data: bytes | memoryview) -> np.ndarray:
    """An ndarray from its extension body, after checking that the dtype is a plain
    one and that the bytes present are exactly what the dtype and shape need."""
    body = _unpack(data)
    if type(body) is not list or len(body) != 3 or type(body[1]) is not list or type(body[2]) is not bytes:
        raise WireError(f"an ndarray extension must be [dtype string, shape list, bytes], got {repr(body)[:80]}")
    dtype_str, shape, raw = body
    dtype = _dtype(dtype_str)
    if len(shape) == 1 and type(shape[0]) is int and 0 <= shape[0] and shape[0] * dtype.itemsize == len(raw):
        return np.frombuffer(raw, dtype=dtype).copy()  # a vector, the usual model (what the general path returns)
    count = 1
    for d in shape:
        if type(d) is not int or d < 0:
            raise WireError(f"ndarray extension: shape {repr(shape)[:80]} is not a list of sizes >= 0")
        count *= d
    if len(shape) > _MAX_DIMS or count * dtype.itemsize != len(raw):
        raise WireError(
            f"ndarray extension: shape {repr(shape)[:80]} of dtype {dtype} needs {count * dtype.itemsize} bytes "
            f"(at most {_MAX_DIMS} dimensions), the message holds {len(raw)}"
        )
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _ext_hook(code: int, data: bytes) -> Any:
    if code == EXT_NDARRAY:
        return _array_from(data)
    if code == EXT_SCALAR:
        arr = _array_from(data)
        if arr.ndim:
            raise WireError(f"a NumPy scalar extension must have shape [], got {list(arr.shape)}")
        return arr[()]
    if code == EXT_PARTIAL:
        body = _unpack_ext(data)
        if not (isinstance(body, list) and len(body) == 3 and isinstance(body[0], int) and not isinstance(body[0], bool)
                and body[0] >= 0 and isinstance(body[1], np.ndarray) and isinstance(body[2], np.ndarray)):
            raise WireError(f"a PartialModel extension must be [dim >= 0, indices array, values array], got {repr(body)[:80]}")
        if body[1].dtype.kind not in "iu":
            raise WireError(f"PartialModel extension: indices of dtype {body[1].dtype}; expected integers")
        try:
            return PartialModel.from_wire(*body)
        except ValueError as exc:
            raise WireError(f"PartialModel extension: {exc}") from None
    return msgpack.ExtType(code, data)


def encode_from(sender: str, kind: str, payload: Any, dst: str | None = None) -> bytes | Unencoded:
    """An actor's payload for the network: `Unencoded` (its exact size now, its bytes only if
    read: `netemu.wire.lazy`) when it is made only of types whose encoding can be sized and
    copied exactly, else its encoded bytes, made now.  A refusal names the sender, kind and
    field (the context string is only built on that error path)."""
    lazy = unencoded(payload)
    if lazy is not None:
        return lazy
    try:
        return pack_payload(payload)
    except (WireError, TypeError, ValueError, OverflowError):
        to = f" to {dst!r}" if dst is not None else ""
        return encode(payload, context=f"{sender} sending {kind!r}{to}")


def decode(data: bytes | Unencoded) -> Any:
    """The payload encoded in `data` (an `Unencoded` payload's bytes are made for it); malformed
    or crafted bytes are a `WireError`."""
    if isinstance(data, Unencoded):
        data = data.data
    try:
        ext = _ext_body(data)
        if ext is not None and ext[0] == EXT_NDARRAY:  # a model: read without the outer unpacker
            start = ext[1]
            return _array_from(data[start:] if len(data) < 4096 else memoryview(data)[start:])  # (a big one is not copied)
        return _unpack_ext(data)
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, msgpack.UnpackException) as exc:
        raise WireError(f"cannot decode {len(data)} bytes: {type(exc).__name__}: {str(exc)[:120]}") from None


_HEADER = msgpack.Packer(use_bin_type=True)


def encode_envelope(msg_id: int, src: str, dst: str, kind: str, round: int, sent_at: float, payload: bytes | Unencoded) -> bytes:
    """Encoded envelope; `payload` is the encoded payload (shared by a broadcast), or an `Unencoded` one: its bytes are made."""
    if isinstance(payload, Unencoded):
        payload = payload.data
    pack = _HEADER.pack
    return b"".join(
        (_HEADER.pack_array_header(7), pack(msg_id), pack(src), pack(dst), pack(kind), pack(round), pack(sent_at), payload)
    )


def _int_size(n: int) -> int:
    """Bytes msgpack packs the int `n` in (fixint, then 8-, 16-, 32- and 64-bit forms)."""
    if n >= 0:
        return 1 if n < 0x80 else 2 if n < 0x100 else 3 if n < 0x10000 else 5 if n < 0x100000000 else 9
    return 1 if n >= -32 else 2 if n >= -0x80 else 3 if n >= -0x8000 else 5 if n >= -0x80000000 else 9


_STR_SIZES: dict[str, int] = {}  # long or non-ASCII names already sized, up to _STR_SIZES_KEPT of them
_STR_SIZES_KEPT = 1 << 16  # bounded: a million clients' names would hold ~50 MB


def _str_size(s: str) -> int:
    size = _STR_SIZES.get(s)
    if size is None:
        n = len(s.encode())
        size = n + (1 if n < 32 else 2 if n < 0x100 else 3 if n < 0x10000 else 5)
        if len(_STR_SIZES) < _STR_SIZES_KEPT:
            _STR_SIZES[s] = size
    return size


def header_size(msg_id: int, src: str, dst: str, kind: str, round: int, sent_at: float) -> int:
    """``len(encode_envelope(msg_id, src, dst, kind, round, sent_at, b""))``, computed from
    msgpack's sizes instead of packing: the bytes the log counts for a message's header
    (issue 15: half the cost).  Values of other types than int, str and float are packed."""
    if type(msg_id) is int and type(round) is int and type(sent_at) is float and type(src) is str \
            and type(dst) is str and type(kind) is str:
        if len(src) < 32 and len(dst) < 32 and len(kind) < 32 and src.isascii() and dst.isascii() and kind.isascii():
            names = len(src) + len(dst) + len(kind) + 3  # three fixstr: a byte each, then one per ASCII character
        else:
            names = _str_size(src) + _str_size(dst) + _str_size(kind)
        # the array header and the float64 take 1 + 9 bytes; ids are below 2³² (5 bytes from 65,536 on), rounds small
        return 10 + names + (5 if 0x10000 <= msg_id < 0x100000000 else _int_size(msg_id)) \
            + (1 if 0 <= round < 0x80 else _int_size(round))
    return len(encode_envelope(msg_id, src, dst, kind, round, sent_at, b""))


def decode_envelope(data: bytes) -> list:
    """`[id, src, dst, kind, round, sent_at, payload]` with the payload decoded."""
    return decode(data)
