"""The Arrow message log (`[output] log_format = "arrow"`): the records `MessageLog` writes, as
Arrow IPC record batches in one stream (`messages.arrows`), and `read_arrow`, which yields them
back equal, field for field and in the same order, to what messages.jsonl holds.

Schema (docs/formats.md): one column per field of `netemu.logschema.FIELDS` — the fields and
types of `netemu log export`'s tables, `t` and `event` first — null where a record has no such
field (a field present with the value None: null, and listed in `keys`); `extra`, a JSON object
of the fields no column holds exactly (a field no table names, a list, a string where a number
is expected) or null; and `keys`: the record's fields in order, as a JSON list whose items are a
column's name, `[name, "int"]` (an integer kept in a float64 column, read back as an integer) or
`[name, "extra"]`.  Strings are dictionary-encoded per batch, buffers LZ4-compressed.  The
stream carries no time stamp: the same run writes the same bytes.

Records are kept per layout (their keys and bound context) column by column, one list append
per value, and written as one record batch (netemu.logcolumns) every `BATCH` records and at every
`flush` (the run flushes on every exit path), so a run that fails keeps what it logged; an IPC
stream cut after its last whole batch is read to there.  Needs pyarrow (`pip install 'netemu[export]'`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import numpy as np
import orjson

from netemu.errors import InputError, LogError
from netemu.logcolumns import Column, pylist, utf8
from netemu.logschema import BOOL, FIELDS, FLOAT, INT, STR

__all__ = ["BATCH", "COMPRESSION", "FILE_NAME", "ArrowSink", "Layout", "is_arrow", "pyarrow", "read_arrow"]

BATCH = 32_768  # records per record batch: a few MB of Python values held at most; a failing run loses none of them (flushed)
FILE_NAME = "messages.arrows"  # .arrows: the Arrow IPC stream format's file extension
#: each batch's buffers LZ4-compressed (the IPC format's LZ4_FRAME; every Arrow reader decompresses it): a
#: column a layout does not have is 8 zero bytes a record, so a quick-start log is 10x smaller, for no CPU measured
COMPRESSION = "lz4"
_MAGIC = b"\xff\xff\xff\xff"  # an IPC stream's first message starts with the continuation marker
_OPTIONS = orjson.OPT_SERIALIZE_NUMPY
_POS = {k: i for i, k in enumerate(FIELDS)}


def pyarrow() -> Any:
    """pyarrow, or an `InputError` saying how to install it."""
    try:
        import pyarrow
        import pyarrow.ipc  # noqa: F401
    except ImportError:
        raise InputError("the Arrow message log needs pyarrow: pip install 'netemu[export]' (or output.log_format = \"jsonl\")") from None
    return pyarrow


class Layout:
    """Records with the same keys in the same order and the same bound context (`const`, the values
    of keys[2 : 2 + len(const)]): their other values column by column (`cols`, in key order), each
    appended by its list's bound `append` (`put`): no tuple per record to build and transpose."""

    __slots__ = ("code", "cols", "const", "keys", "put")

    def __init__(self, code: int, keys: tuple[str, ...], const: tuple) -> None:
        self.code, self.keys, self.const = code, keys, const
        self.cols: list[list] = [[] for _ in range(len(keys) - len(const))]
        self.put = tuple(c.append for c in self.cols)


class ArrowSink:
    """An Arrow IPC stream on a binary file: `MessageLog` appends records to its layouts and their
    codes to `order`, and calls `spill` when `order` holds `batch` records."""

    def __init__(self, file: IO[bytes], batch: int | None = None) -> None:
        pa = pyarrow()
        self.pa, self.file, self.batch = pa, file, batch or BATCH
        self.name = getattr(file, "name", "the message log")
        text = pa.dictionary(pa.int32(), pa.string())  # strings dictionary-encoded per batch
        types = {INT: pa.int64(), FLOAT: pa.float64(), STR: text, BOOL: pa.bool_()}
        self.types = [types[t] for t in FIELDS.values()]
        self.schema = pa.schema([*(pa.field(k, ty) for k, ty in zip(FIELDS, self.types)), pa.field("extra", text),
                                 pa.field("keys", pa.dictionary(pa.int32(), pa.string()))],
                                metadata={"netemu.log": "message log", "netemu.schema": "1"})
        self.order: list[int] = []  # the layout code of each record not yet written, in log order
        self.layouts: list[Layout] = []
        self._by_key: dict[tuple, Layout] = {}
        options = pa.ipc.IpcWriteOptions(compression=COMPRESSION if pa.Codec.is_available(COMPRESSION) else None)
        self._writer = pa.ipc.new_stream(file, self.schema, options=options)
        self._ended = False

    def layout(self, keys: tuple[str, ...], const: tuple = ()) -> Layout:
        """The layout of records with these keys (and bound context values `const`, which must be hashable)."""
        lay = self._by_key.get((keys, const))
        if lay is None:
            lay = self._by_key[(keys, const)] = Layout(len(self.layouts), keys, const)
            self.layouts.append(lay)
        return lay

    def add(self, record: dict) -> None:
        """One record given as a dict (the keyword path): its own layout, no bound context."""
        lay = self.layout(tuple(record))
        for put, v in zip(lay.put, record.values()):
            put(v)
        self.order.append(lay.code)

    def spill(self) -> None:
        """Write the records held as one record batch (nothing if none)."""
        if not self.order:
            return
        pa = self.pa
        codes = np.array(self.order, dtype=np.int32)
        self.order.clear()
        used = [lay for lay in self.layouts if lay.cols[0]]
        columns = [Column(kind) for kind in FIELDS.values()]
        extra = Column(STR)
        names: list[str] = []
        local = np.zeros(len(self.layouts), dtype=np.int32)
        for i, lay in enumerate(used):
            names.append(self._pieces(lay, columns, extra))
            local[lay.code] = i
            for c in lay.cols:
                c.clear()
        take = None
        if len(used) > 1:  # record perm[j] is row j of the layouts' pieces, concatenated
            perm = np.argsort(codes, kind="stable")
            take = np.empty_like(perm)
            take[perm] = np.arange(len(perm))
        arrays = [c.array(pa, ty, take) for c, ty in zip(columns, self.types)]
        keys = pa.DictionaryArray.from_arrays(pa.Array.from_buffers(pa.int32(), len(codes), [None, pa.py_buffer(local[codes])]),
                                              utf8(pa, names))
        self._writer.write_batch(pa.RecordBatch.from_arrays([*arrays, extra.array(pa, None, take), keys], schema=self.schema))

    def _pieces(self, lay: Layout, columns: list[Column], extra: Column) -> str:
        """Add `lay`'s records to the columns; return its `keys` entry."""
        n, k0, k1 = len(lay.cols[0]), 2, 2 + len(lay.const)
        entries: list[Any] = []
        out: dict[str, list] = {}  # the fields no column holds exactly: to `extra`, as JSON
        held = set()
        for i, key in enumerate(lay.keys):
            bound = k0 <= i < k1  # a bound context value, the same in every record: converted once
            vals = None if bound else lay.cols[i if i < k0 else i - len(lay.const)]
            j = _POS.get(key)
            if j is None:
                how = None
            else:
                how = columns[j].repeat(lay.const[i - k0], n) if vals is None else columns[j].piece(vals)
            if how is None:
                out[key] = [lay.const[i - k0]] * n if vals is None else vals
                entries.append([key, "extra"])
            else:
                held.add(j)
                entries.append([key, how] if how else key)
        for j, c in enumerate(columns):
            if j not in held:
                c.absent(n)
        if out:
            ks = tuple(out)
            extra.piece([orjson.dumps(dict(zip(ks, row)), option=_OPTIONS).decode() for row in zip(*out.values())])
        else:
            extra.absent(n)
        return orjson.dumps(entries).decode()

    def flush(self) -> None:
        """Write what is held and flush the file."""
        self.spill()
        self.file.flush()

    def close(self) -> None:
        """Write what is held and end the stream (idempotent; the file stays open: its owner closes it)."""
        if not self._ended:
            self.spill()
            self._ended = True
            self._writer.close()
            self.file.flush()


def is_arrow(path: Any) -> bool:
    """Whether the file at `path` starts as an Arrow IPC stream does (a JSON-lines log starts with `{`)."""
    with open(path, "rb") as f:
        return f.read(4) == _MAGIC


def read_arrow(path: Any) -> Iterator[tuple[int, dict]]:
    """(record number, record) of an Arrow message log, the records as messages.jsonl would give them."""
    pa = pyarrow()
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise LogError(f"{path}: cannot read ({exc.strerror})") from None
    with f:
        try:
            reader = pa.ipc.open_stream(f)
        except pa.ArrowInvalid as exc:
            raise LogError(f"{path}: not an Arrow IPC stream ({exc})") from None
        names = reader.schema.names
        if names[-2:] != ["extra", "keys"] or any(k not in names for k in ("t", "event")):
            raise LogError(f"{path}: an Arrow stream that is not a netemu message log (no `extra` and `keys` columns)")
        n = 0
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (pa.ArrowInvalid, OSError) as exc:
                raise LogError(f"{path}: the Arrow stream is cut or damaged after record {n} ({exc})") from None
            try:
                records = list(_records(pa, batch, names))
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                raise LogError(f"{path}: a record batch after record {n} is not a netemu message log's ({type(exc).__name__}: {exc})") from None
            for r in records:
                n += 1
                yield n, r


def _records(pa: Any, batch: Any, names: list[str]) -> Iterator[dict]:
    """The records of one record batch, in order."""
    keys = batch.column(len(names) - 1)
    layouts = [orjson.loads(s) for s in keys.dictionary.to_pylist()]
    index = {name: i for i, name in enumerate(names)}
    cols: dict[str, list] = {}
    nulls = [None] * len(batch)  # what an `extra` entry's plan reads: its value comes from `extra`
    plans: list[tuple[list[tuple[str, list]], bool]] = []
    for entries in layouts:
        plan, special = [], False
        for e in entries:
            name = e if isinstance(e, str) else e[0]
            special = special or not isinstance(e, str)
            if isinstance(e, str) or e[1] == "int":
                if name not in cols:
                    cols[name] = pylist(pa, batch.column(index[name]))
            plan.append((name, cols.get(name, nulls) if isinstance(e, str) or e[1] == "int" else nulls))
        plans.append((plan, special))
    extra_col = batch.column(len(names) - 2)
    extras = pylist(pa, extra_col) if extra_col.null_count < len(extra_col) else None
    specials = [[(e[0], e[1]) for e in entries if not isinstance(e, str)] for entries in layouts]
    for i, code in enumerate(pylist(pa, keys.indices)):
        plan, special = plans[code]
        r = {k: col[i] for k, col in plan}
        if special:
            extra = orjson.loads(extras[i]) if extras is not None and extras[i] is not None else {}
            for k, how in specials[code]:
                r[k] = int(r[k]) if how == "int" else extra[k]
        yield r
