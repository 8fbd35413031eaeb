"""A message log as tables with a fixed schema: Parquet, Arrow IPC or CSV (`netemu log export`).

JSON lines leave every reader to guess: a field first seen after the rows a reader samples
is dropped or mistyped, an integer looks like a float.  Here each event goes to the table
of its family (`TABLES`: messages, compute, lifecycle, outages, load, metric_events, other)
whose columns are the same in every row, with fixed types (int64, float64, string, bool),
null where a field does not apply, and `extra`: a JSON object of any field the schema does
not name (null when there is none), so nothing in the log is lost.  Schemas: docs/formats.md.

The log is streamed once (netemu.report.logtools); rows are buffered per table in batches of
`BATCH_ROWS` and each batch is written as one Parquet row group, Arrow record batch or CSV
chunk, so memory holds one batch per table, never the log.  Parquet and Arrow need pyarrow
(the `export` extra); CSV needs only the standard library.  Files are written under a
temporary name and renamed when the whole log was read: a refused log leaves no table.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from netemu.errors import WRITE_ERRNOS, ExportError, LogError, WriteFailed
from netemu.logschema import BOOL, FLOAT, INT, STR, TABLES, Column, columns, table_of
from netemu.report.logtools import _numbered, log_path

__all__ = ["BATCH_ROWS", "FORMATS", "TABLES", "ExportedTable", "columns", "export_log", "export_tensorboard", "table_of"]

BATCH_ROWS = 65_536  # rows per Parquet row group / Arrow record batch: ~1-3 MB of Python objects per table buffered

_PY_TYPE: dict[str, Any] = {INT: int, FLOAT: float, STR: str, BOOL: bool}
_INT64_MIN, _INT64_END = -(1 << 63), 1 << 63
_FILL = {("deliver", "duplicate"): False, ("drop", "duplicate"): False}  # applies to arrivals: absent means false
FORMATS = ("parquet", "arrow", "csv")
_EXT = {"parquet": "parquet", "arrow": "arrow", "csv": "csv"}


@dataclass(frozen=True)
class ExportedTable:
    """One file written: its table, path and row count."""

    table: str
    path: Path
    rows: int


class _Batch:
    """The rows of one table not yet written, column by column."""

    def __init__(self, cols: tuple[Column, ...]) -> None:
        self.cols = cols
        self.named = tuple(c for c in cols if c.name != "extra")
        self.data: list[list[Any]] = [[] for _ in cols]
        self.rows = 0
        self.total = 0

    def add(self, r: dict, ev: str, path: Path, n: int) -> None:
        """Append record `r` (line `n` of `path`, its `event` field removed unless a column) as a row."""
        data = self.data
        for i, c in enumerate(self.named):
            v: Any = r.pop(c.name, None)
            if v is None:
                if c.required:
                    raise LogError(f"{path}:{n}: a {ev!r} record with no field {c.name!r}; record schemas: docs/formats.md")
                v = _FILL.get((ev, c.name))
            elif type(v) is not _PY_TYPE[c.type]:
                if c.type == FLOAT and type(v) is int:
                    v = float(v)
                else:
                    raise LogError(f"{path}:{n}: a {ev!r} record whose {c.name!r} is {v!r}, expected {c.type}; record schemas: docs/formats.md")
            elif c.type == INT and not _INT64_MIN <= v < _INT64_END:
                raise LogError(f"{path}:{n}: a {ev!r} record whose {c.name!r} = {v} does not fit int64")
            data[i].append(v)
        data[-1].append(orjson.dumps(r).decode() if r else None)
        self.rows += 1

    def take(self) -> list[list[Any]]:
        out, self.data = self.data, [[] for _ in self.cols]
        self.total += self.rows
        self.rows = 0
        return out


class _CsvSink:
    """A CSV file: a header, then rows; null is an empty field, booleans are true/false, floats repr."""

    def __init__(self, path: Path, cols: tuple[Column, ...]) -> None:
        self.f = open(path, "w", newline="", encoding="utf-8")
        self.w = csv.writer(self.f, lineterminator="\n")
        self.w.writerow([c.name for c in cols])
        self.bools = [i for i, c in enumerate(cols) if c.type == BOOL]

    def write(self, data: list[list[Any]]) -> None:
        for i in self.bools:
            data[i] = [None if v is None else "true" if v else "false" for v in data[i]]
        self.w.writerows(zip(*data))

    def close(self) -> None:
        self.f.close()


def _pyarrow():
    try:
        import pyarrow
    except ImportError:
        raise ExportError("Parquet and Arrow exports need pyarrow: pip install 'netemu[export]' (or --format csv)") from None
    return pyarrow


class _ArrowSink:
    """A Parquet file (zstd, one row group per batch) or an Arrow IPC file (one record batch per batch)."""

    def __init__(self, path: Path, cols: tuple[Column, ...], fmt: str, table: str) -> None:
        pa = _pyarrow()
        self.pa = pa
        types = {INT: pa.int64(), FLOAT: pa.float64(), STR: pa.string(), BOOL: pa.bool_()}
        self.schema = pa.schema([pa.field(c.name, types[c.type], nullable=not c.required) for c in cols],
                                metadata={"netemu.table": table, "netemu.schema": "1"})
        if fmt == "parquet":
            import pyarrow.parquet as pq

            self.writer = pq.ParquetWriter(path, self.schema, compression="zstd")
        else:
            import pyarrow.ipc

            self.writer = pyarrow.ipc.new_file(str(path), self.schema)

    def write(self, data: list[list[Any]]) -> None:
        arrays = [self.pa.array(col, type=f.type) for col, f in zip(data, self.schema)]
        self.writer.write_batch(self.pa.record_batch(arrays, schema=self.schema))

    def close(self) -> None:
        self.writer.close()


def export_log(log: str | Path, out: str | Path, fmt: str = "parquet", *, batch_rows: int = BATCH_ROWS,
               tables: Sequence[str] = tuple(TABLES)) -> list[ExportedTable]:
    """Write the log's records as `OUT/TABLE.EXT`, one file per table (every table, empty or not),
    in log order within each table.  Returns what was written."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)} (or tensorboard for metrics.csv)")
    path = log_path(log)
    if fmt != "csv":
        _pyarrow()  # refuse before reading anything
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"{out}: cannot create the export folder ({exc.strerror})") from None
    final = {t: out / f"{t}.{_EXT[fmt]}" for t in tables}
    partial = {t: p.with_name(f".{p.name}.partial") for t, p in final.items()}
    sinks: dict[str, Any] = {}
    batches = {t: _Batch(TABLES[t]) for t in tables}
    done = False
    try:
        for t in tables:
            sinks[t] = _CsvSink(partial[t], TABLES[t]) if fmt == "csv" else _ArrowSink(partial[t], TABLES[t], fmt, t)
        for n, r in _numbered(path):
            ev = r["event"]
            t = table_of(ev)
            b = batches.get(t)
            if b is None:
                continue
            if t not in ("messages", "lifecycle", "other"):
                del r["event"]
            b.add(r, ev, path, n)
            if b.rows >= batch_rows:
                sinks[t].write(b.take())
        for t, b in batches.items():
            if b.rows:
                sinks[t].write(b.take())
        for t in tables:  # closing writes the last bytes: a full disk may refuse them
            sinks.pop(t).close()
        done = True
    except OSError as exc:
        raise _unwritten(out, exc, "the export") from None
    finally:
        for sink in sinks.values():  # after a failure: closed without a second error, the partial files removed
            with contextlib.suppress(OSError):
                sink.close()
        for t in tables:
            if done:
                os.replace(partial[t], final[t])
            else:
                partial[t].unlink(missing_ok=True)
    return [ExportedTable(t, final[t], batches[t].total) for t in tables]


def _safe_name(name: str) -> str:
    """A folder name for an algorithm label: characters other than letters, digits and ._=+- become _."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", name).lstrip(".") or "_"


def export_tensorboard(run_dir: str | Path, out: str | Path) -> list[ExportedTable]:
    """metrics.csv as TensorBoard scalars: one event file per algorithm and Monte Carlo run,
    `OUT/ALGORITHM/run-R/events.out.tfevents.0.netemu` (TensorBoard's runs), a tag per metric,
    the round as step and the virtual time of the report as wall time (so the file does not
    depend on the wall clock).  `rows` counts the scalars written per file."""
    from netemu.report import read_metrics
    from netemu.report.tfevents import EventWriter

    run_dir = Path(run_dir)
    folder = run_dir if run_dir.is_dir() else run_dir.parent
    groups: dict[tuple[str, int], list[tuple]] = defaultdict(list)
    for alg, run, rnd, t, metric, value in read_metrics(folder):
        groups[(alg, run)].append((metric, value, rnd, t))
    written = []
    try:
        for (alg, run), rows in groups.items():
            d = Path(out) / _safe_name(alg) / f"run-{run}"
            d.mkdir(parents=True, exist_ok=True)
            with EventWriter(d / "events.out.tfevents.0.netemu") as w:
                for metric, value, rnd, t in rows:
                    w.scalar(metric, value, rnd, t)
            written.append(ExportedTable(f"{alg}/run-{run}", w.path, len(rows)))
    except OSError as exc:
        raise _unwritten(out, exc, "the TensorBoard files") from None
    return written


def _unwritten(out: Path | str, exc: OSError, what: str) -> Exception:
    """What to raise when writing `what` into `out` failed: `WriteFailed` (exit 1) for a write
    the machine refused (disk full, read-only, I/O error), else `ExportError` (bad input, exit 2)."""
    if exc.errno in WRITE_ERRNOS:
        return WriteFailed(out, exc)
    return ExportError(f"{out}: cannot write {what} ({exc.strerror})")
