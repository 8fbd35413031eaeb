"""Payloads on the wire without their bytes: the exact encoded size now, the bytes only if read.

Most messages are never read as bytes: the network needs only their size (for bandwidth and the
log), and the receiver takes the value.  Encoding at send and decoding at delivery made and read
bytes nobody else looked at (issue 40, item 3).  `unencoded(payload)` walks a payload of the types
whose encoding it can size exactly and returns an `Unencoded`:

* ``len()`` is ``len(encode(payload))``, computed from msgpack's header rules (fixstr / str 8 /
  16 / 32, fixarray / array 16 / 32, fixmap / map 16 / 32, the int forms, bin 8 / 16 / 32, fixext
  / ext 8 / 16 / 32) and, for an ndarray, its dtype string, shape and ``nbytes``;
* ``value`` is what ``decode(encode(payload))`` gives — tuples as lists, arrays as C-ordered
  writable copies of the decoded dtype, ``np.float64`` as ``float``, a `PartialModel` through
  `PartialModel.from_wire` — made now, so a sender that changes its arrays after the send does
  not change what arrives;
* ``data`` is ``encode(payload)``, made on the first read and kept.

Anything else (other types or subclasses, NumPy dtypes other than bool, integer, float and
complex, dict keys other than str, bytes, int, float, bool and None, nesting deeper than
`_DEPTH`, ints or lengths msgpack refuses) gives None: the caller encodes it as before, so a
payload the codec refuses is refused at the send, with the same error.

`fresh` copies a decoded value for a further receiver (a broadcast's).  This module does not
import the codec (the codec imports it): the codec's `encode` is imported where bytes are made.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netemu.wire.partial import PartialModel

__all__ = ["Unencoded", "fresh", "unencoded"]

_DEPTH = 100  # deeper payloads are encoded at once (msgpack's own limit is 1024)
_BIG = 1 << 32  # msgpack's lengths are below 2³²
_KINDS = "biufc"  # bool, signed and unsigned integers, floats, complex: plain bytes of a fixed size
_TAKEN = object()


class _Eager(Exception):
    """The payload is not one `unencoded` can size and copy exactly: encode it."""


class Unencoded:
    """A payload on the wire whose bytes are made only if something reads them (module docstring)."""

    __slots__ = ("_data", "size", "value")

    def __init__(self, value: Any, size: int) -> None:
        self.value, self.size = value, size
        self._data: bytes | None = None

    def __len__(self) -> int:
        return self.size

    @property
    def data(self) -> bytes:
        """The encoded bytes, ``len(data) == len(self)``: made at the first read, then kept."""
        data = self._data
        if data is None:
            if self.value is _TAKEN:
                raise RuntimeError("the payload was delivered before its bytes were read; they were not kept")
            from netemu.wire.codec import encode  # (the codec imports this module)

            data = self._data = encode(self.value)
        return data

    def __bytes__(self) -> bytes:
        return self.data

    def take(self) -> Any:
        """The value, handed to its one receiver: this object no longer holds it."""
        value, self.value = self.value, _TAKEN
        return value

    def copy(self) -> Unencoded:
        """A second message of the same payload (a duplicate) with a value of its own."""
        twin = Unencoded(fresh(self.value), self.size)
        twin._data = self._data
        return twin

    def __repr__(self) -> str:
        return f"Unencoded({self.size} bytes)"


def unencoded(payload: Any) -> Unencoded | None:
    """`payload` as an `Unencoded`, or None when it is to be encoded now (module docstring)."""
    if type(payload) is np.ndarray:  # a model: a vector of a dtype seen before is sized here, in a few steps
        known = _DTYPES.get(id(payload.dtype))
        if known is not None and known[1] is None and payload.ndim == 1:
            d, n = len(payload), payload.nbytes  # (a vector's length without its shape tuple)
            if n < _BIG:  # the body: header and dtype, the shape [d], the raw bytes
                body = known[2] + (2 if d < 0x80 else 3 if d < 0x100 else 4 if d < 0x10000 else 6) \
                    + n + (2 if n < 0x100 else 3 if n < 0x10000 else 5)
                if 16 < body < _BIG:  # (not a fixext)
                    return Unencoded(payload.copy(), body + (3 if body < 0x100 else 4 if body < 0x10000 else 6))
    try:
        if type(payload) is np.ndarray:
            value, size = _array(payload)
            return Unencoded(value, _ext(size))
        value, size = _walk(payload, 0)
    except _Eager:
        return None
    return Unencoded(value, size)


def _length(n: int) -> int:
    """Header bytes of a str, array or map of n items (str: n bytes): 1 for the fix forms is the caller's."""
    if n < 0x10000:
        return 3
    if n < _BIG:
        return 5
    raise _Eager


def _int(n: int) -> int:
    if n >= 0:
        if n < 0x80:
            return 1
        return 2 if n < 0x100 else 3 if n < 0x10000 else 5 if n < _BIG else 9 if n < 1 << 64 else _refuse()
    if n >= -32:
        return 1
    return 2 if n >= -0x80 else 3 if n >= -0x8000 else 5 if n >= -0x80000000 else 9 if n >= -(1 << 63) else _refuse()


def _refuse() -> int:
    raise _Eager


def _str(s: str) -> int:
    try:
        n = len(s) if s.isascii() else len(s.encode())
    except UnicodeEncodeError:  # a lone surrogate: the codec's error
        raise _Eager from None
    return n + (1 if n < 32 else 2 if n < 0x100 else _length(n))


def _bin(n: int) -> int:
    return n + (2 if n < 0x100 else 3 if n < 0x10000 else 5 if n < _BIG else _refuse())


def _ext(n: int) -> int:
    """Bytes of an extension whose body is n bytes: fixext 1, 2, 4, 8, 16, else ext 8, 16, 32."""
    if n in (1, 2, 4, 8, 16):
        return n + 2
    return n + (3 if n < 0x100 else 4 if n < 0x10000 else 6 if n < _BIG else _refuse())


_DTYPES: dict[int, tuple[np.dtype, np.dtype | None, int]] = {}  # id(dtype) -> `_dtype(dtype)`
_DTYPES_KEPT = 256  # (a run uses a handful)


def _dtype(dtype: np.dtype) -> tuple[np.dtype, np.dtype | None, int]:
    """(`dtype`, the dtype to copy an array of it into — None when ``copy()`` gives what decoding
    gives; ``np.longlong``'s arrays decode as ``int64``'s, and a dtype's metadata is lost —,
    the bytes of an extension body's array header and dtype string); a refused kind is `_Eager`.
    Kept by the dtype's id (what makes it a few lookups, not ``dtype.str``'s new string): the
    entry holds the dtype, so its id is not reused while it is kept."""
    known = _DTYPES.get(id(dtype))
    if known is not None:
        return known
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise _Eager
    decoded = np.dtype(dtype.str)
    same = dtype.type is decoded.type and dtype.metadata is None  # (decoding keeps no metadata)
    known = (dtype, None if same else decoded, 2 + len(decoded.str))  # array of 3, fixstr
    if len(_DTYPES) < _DTYPES_KEPT:
        _DTYPES[id(dtype)] = known
    return known


def _body(head: int, shape: tuple[int, ...], nbytes: int) -> int:
    """Bytes of an ndarray extension's body, ``[dtype.str, shape, raw bytes]`` (`head`: the bytes before the shape)."""
    n = len(shape)
    if n == 1:  # a vector, the usual model
        d = shape[0]
        size = head + (2 if d < 0x80 else 1 + _int(d))
    else:
        size = head + (1 if n < 16 else _length(n))
        for d in shape:
            size += 1 if d < 0x80 else _int(d)
    return size + nbytes + (2 if nbytes < 0x100 else 3 if nbytes < 0x10000 else 5 if nbytes < _BIG else _refuse())


def _array(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """A decoded copy of `arr` and its extension's body size."""
    _, convert, head = _dtype(arr.dtype)
    copy = arr.copy() if convert is None else arr.astype(convert, order="C")  # (copy() is C-ordered)
    return copy, _body(head, arr.shape, arr.nbytes)


def _walk(obj: Any, depth: int) -> tuple[Any, int]:
    """(decoded value, encoded size) of `obj`, or `_Eager`."""
    t = type(obj)
    if t is str:
        return obj, _str(obj)
    if t is int:
        return obj, (1 if 0 <= obj < 0x80 else _int(obj))
    if t is float or t is np.float64:  # (np.float64 is a float: msgpack packs it as one)
        return float(obj), 9
    if t is bool or obj is None:
        return obj, 1
    if t is np.ndarray:
        value, size = _array(obj)
        return value, _ext(size)
    if t is dict:
        if depth >= _DEPTH:
            raise _Eager
        n = len(obj)
        size = 1 if n < 16 else _length(n)
        out = {}
        for k, v in obj.items():
            tk = type(k)
            if tk is str:
                size += _str(k)
            elif tk is int:
                size += _int(k)
            elif tk is float:
                size += 9
            elif tk is bool or k is None:
                size += 1
            elif tk is bytes:
                size += _bin(len(k))
            else:  # a tuple does not decode as a key; a NumPy scalar is a key of another type
                raise _Eager
            out[k], s = _walk(v, depth + 1)
            size += s
        return out, size
    if t is list or t is tuple:
        if depth >= _DEPTH:
            raise _Eager
        n = len(obj)
        size = 1 if n < 16 else _length(n)
        items = []
        for v in obj:
            value, s = _walk(v, depth + 1)
            items.append(value)
            size += s
        return items, size
    if t is bytes:
        return obj, _bin(len(obj))
    if t is bytearray:
        return bytes(obj), _bin(len(obj))
    if t is PartialModel:
        return _partial(obj)
    if isinstance(obj, np.generic):  # a NumPy scalar (immutable) of a type decoding gives
        _, convert, head = _dtype(obj.dtype)
        if convert is None:
            return obj, _ext(_body(head, (), obj.dtype.itemsize))
    raise _Eager


def _partial(pm: PartialModel) -> tuple[PartialModel, int]:
    """A `PartialModel` as its extension ``[dim, indices (ext 1), values (ext 1)]`` decodes, and
    its size; one that decoding would refuse is encoded now (and refused at its delivery, as before)."""
    dim, indices, values = pm.dim, pm.indices, pm.values
    if type(dim) is not int or dim < 0 or type(indices) is not np.ndarray or type(values) is not np.ndarray \
            or indices.dtype.kind not in "iu":
        raise _Eager
    idx, idx_size = _array(indices)
    val, val_size = _array(values)
    try:
        value = PartialModel.from_wire(dim, idx, val)
    except ValueError:
        raise _Eager from None
    return value, _ext(1 + _int(dim) + _ext(idx_size) + _ext(val_size))


def fresh(obj: Any) -> Any:
    """A copy of a decoded payload that shares no mutable object with it: what decoding
    the same bytes again would give (equal values, dtypes and shapes; writable arrays of
    its own).  The network decodes a broadcast's shared payload once and hands each
    receiver `fresh` of it — a copy costs a fraction of a decode.  Decoded values are
    only these types; the others (str, bytes, numbers, None, NumPy scalars, ExtType)
    are immutable and shared."""
    t = type(obj)
    if t is np.ndarray:
        return obj.copy()
    if t is dict:
        return {k: fresh(v) for k, v in obj.items()}
    if t is list:
        return [fresh(v) for v in obj]
    if t is PartialModel:
        copy = object.__new__(PartialModel)  # already checked when decoded: no second validation
        object.__setattr__(copy, "dim", obj.dim)
        object.__setattr__(copy, "indices", obj.indices.copy())
        object.__setattr__(copy, "values", obj.values.copy())
        return copy
    return obj
