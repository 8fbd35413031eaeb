"""The columns of one Arrow message-log batch (netemu.logarrow), built from Python values through
NumPy buffers.

pyarrow's own conversion (`pyarrow.array`) imports pandas the first time it runs when pandas is
installed: 0.36 s of CPU and 52 MiB per process, more than the whole log of a small run.  Here a
column is a NumPy array per layout of the batch (`Column.piece`), concatenated and put in log
order once, then wrapped as an Arrow array over the same bytes (`Array.from_buffers`).  Strings
are dictionary-encoded: the batch's distinct values once, an int32 index per record.

A piece whose values the column cannot hold exactly (a string in a number column, an integer in
a float column beyond 2**53, one beyond int64, a list, a bool where an integer is expected) is
refused (`piece` returns None) and the caller keeps those values as JSON in `extra`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netemu.logschema import BOOL, FLOAT, INT, STR

__all__ = ["Column", "utf8"]

_NONE = type(None)
_NUMBERS: dict[str, tuple[frozenset[type], Any]] = {  # a column's accepted Python types and its NumPy dtype
    FLOAT: (frozenset((float, np.float64)), np.float64),
    INT: (frozenset((int, np.int64, np.int32)), np.int64),
    BOOL: (frozenset((bool, np.bool_)), np.bool_),
}
_EXACT = 1 << 53  # integers up to this are exact in float64


class _Codes(dict):
    """A string's code: its order of first appearance."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


class Column:
    """One column of a batch, as NumPy pieces (one per layout, in layout order) and their validity."""

    __slots__ = ("codes", "held", "kind", "n", "pieces", "valid")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pieces: list[np.ndarray] = []
        self.valid: list[np.ndarray | None] = []  # None: every value of the piece is there
        self.codes = _Codes() if kind == STR else None  # the batch's strings (STR)
        self.held = False  # whether a piece holds values (else the column is all null)
        self.n = 0

    def absent(self, n: int) -> None:
        """A piece of `n` nulls: a layout without this field."""
        self.n += n
        self.pieces.append(np.zeros(n, np.int32 if self.kind == STR else _NUMBERS[self.kind][1]))
        self.valid.append(np.zeros(n, np.bool_))

    def piece(self, vals: list) -> str | None:
        """Add `vals` (one per record of a layout; None is a null the record holds); returns "" when
        the column holds them exactly, "int" when they are integers held as float64, None when it
        cannot hold them (nothing is added then)."""
        if self.kind == STR:
            return self._strings(vals)
        ok, dtype = _NUMBERS[self.kind]
        seen = set(map(type, vals))
        how = ""
        if not seen - {_NONE} <= ok:
            if not (self.kind == FLOAT and seen == {int} and -_EXACT <= min(vals) and max(vals) <= _EXACT):
                return None
            how = "int"
        valid = None
        if _NONE in seen:
            valid = np.fromiter((v is not None for v in vals), np.bool_, len(vals))
            vals = [0 if v is None else v for v in vals]
        try:
            arr = np.array(vals, dtype)
        except OverflowError:  # an integer beyond int64
            return None
        if self.kind == FLOAT and not how:
            finite = np.isfinite(arr)
            if not finite.all():  # NaN and ±inf are null, as the JSON lines write them (orjson: null)
                valid = finite if valid is None else valid & finite
        self.pieces.append(arr)
        self.valid.append(valid)
        self.held = True
        self.n += len(arr)
        return how

    def repeat(self, value: Any, n: int) -> str | None:
        """`piece([value] * n)` (a layout's bound context value), `value` type-checked and converted once."""
        how = self.piece([value])
        if how is not None:
            self.pieces[-1] = np.repeat(self.pieces[-1], n)
            valid = self.valid[-1]
            self.valid[-1] = None if valid is None else np.repeat(valid, n)
            self.n += n - 1
        return how

    def _strings(self, vals: list) -> str | None:
        local = _Codes()
        try:
            idx = np.fromiter(map(local.__getitem__, vals), np.int32, len(vals))
        except TypeError:  # a value that cannot be a dict key (a list): not a string
            return None
        if not all(type(k) is str or k is None for k in local):
            return None
        codes = self.codes
        assert codes is not None
        remap = np.array([-1 if k is None else codes[k] for k in local], np.int32)
        idx = remap[idx]
        valid = None
        if None in local:
            valid = idx >= 0
            idx[~valid] = 0
        self.pieces.append(idx)
        self.valid.append(valid)
        self.held = True
        self.n += len(idx)
        return ""

    def array(self, pa: Any, type_: Any, take: np.ndarray | None) -> Any:
        """The column as an Arrow array, its records reordered by `take` (None: already in order);
        the pieces are consumed."""
        if not self.held:  # no layout of the batch has this field
            return pa.nulls(self.n, pa.dictionary(pa.int32(), pa.string()) if self.kind == STR else type_)
        values = np.concatenate(self.pieces) if len(self.pieces) > 1 else self.pieces[0]
        valid = None
        if any(v is not None for v in self.valid):
            valid = np.concatenate([np.ones(len(p), np.bool_) if v is None else v for p, v in zip(self.pieces, self.valid)])
        if take is not None:
            values = values[take]
            valid = valid[take] if valid is not None else None
        n = len(values)
        bitmap, nulls = None, 0
        if valid is not None:
            nulls = n - int(np.count_nonzero(valid))
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        if self.kind == STR:
            indices = pa.Array.from_buffers(pa.int32(), n, [bitmap, pa.py_buffer(np.ascontiguousarray(values))], null_count=nulls)
            return pa.DictionaryArray.from_arrays(indices, utf8(pa, list(self.codes or ())))
        data = np.packbits(values, bitorder="little") if self.kind == BOOL else np.ascontiguousarray(values)
        return pa.Array.from_buffers(type_, n, [bitmap, pa.py_buffer(data)], null_count=nulls)


def utf8(pa: Any, strings: list[str]) -> Any:
    """An Arrow string array of `strings` (no nulls), from its buffers."""
    data = [s.encode() for s in strings]
    offsets = np.zeros(len(data) + 1, np.int32)
    if data:
        np.cumsum(np.fromiter(map(len, data), np.int64, len(data)), out=offsets[1:], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def pylist(pa: Any, arr: Any) -> list:
    """The values of an Arrow column (int64, float64, bool or dictionary-encoded strings) as a
    Python list, None for a null, read from its buffers through NumPy: pyarrow's `to_pylist` makes an
    Arrow scalar per value (~1 µs each) and its `to_numpy` imports pandas on first use."""
    n = len(arr)
    if arr.null_count == n:
        return [None] * n
    if isinstance(arr, pa.DictionaryArray):
        words = np.array([*arr.dictionary.to_pylist(), None], dtype=object)  # a null reads the None at the end
        idx = _values(arr.indices, np.int32)
        nulls = _nulls(arr.indices)
        return words[idx if nulls is None else np.where(nulls, len(words) - 1, idx)].tolist()
    values = _bits(arr.buffers()[1], arr.offset, n) if pa.types.is_boolean(arr.type) else \
        _values(arr, np.dtype(f"i{arr.type.bit_width // 8}") if pa.types.is_integer(arr.type) else np.float64)
    nulls = _nulls(arr)
    if nulls is None:
        return values.tolist()
    out = values.astype(object)
    out[nulls] = None
    return out.tolist()


def _values(arr: Any, dtype: Any) -> np.ndarray:
    """A primitive array's values buffer, as NumPy sees it (no copy)."""
    return np.frombuffer(arr.buffers()[1], dtype, count=len(arr), offset=arr.offset * np.dtype(dtype).itemsize)


def _bits(buf: Any, offset: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buf, np.uint8), count=offset + n, bitorder="little")[offset:].astype(np.bool_)


def _nulls(arr: Any) -> np.ndarray | None:
    """Where `arr` is null (None when nothing is)."""
    if not arr.null_count:
        return None
    return ~_bits(arr.buffers()[0], arr.offset, len(arr))
