"""The message log's fields and their types: what `netemu log export` writes as tables and
the Arrow message log (`output.log_format = "arrow"`, netemu.logarrow) as columns.

Each event belongs to a table (`TABLES`: messages, compute, lifecycle, outages, load,
metric_events, unused, other) whose columns have fixed types (int64, float64, string, bool);
a field named in two tables has the same type in both, so `FIELDS`, every table's columns
once, is a schema too: the Arrow log's.  Record schemas: docs/formats.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOOL", "FIELDS", "FLOAT", "INT", "STR", "TABLES", "Column", "columns", "table_of"]

INT, FLOAT, STR, BOOL = "int64", "float64", "string", "bool"


@dataclass(frozen=True)
class Column:
    """A column: its name (the log's field name), its type and whether every record of its table has it."""

    name: str
    type: str
    required: bool = False


def _cols(spec: str) -> tuple[Column, ...]:
    """Columns from 'name:type' words; a trailing '!' marks a field every record of the table must have."""
    out = []
    for word in spec.split():
        name, kind = word.split(":")
        out.append(Column(name, kind.rstrip("!"), kind.endswith("!")))
    return tuple(out)


_CONTEXT = "algorithm:string run:int64 t:float64! "
TABLES: dict[str, tuple[Column, ...]] = {
    "messages": _cols(_CONTEXT + "event:string! id:int64! src:string! dst:string! kind:string! round:int64! bytes:int64! link:string! "
                      "payload_bytes:int64 delay:float64 reason:string duplicate:bool sent_at:float64 hops:int64 hop:string "
                      "attempts:int64 last:string extra:string"),
    "compute": _cols(_CONTEXT + "actor:string! round:int64 work:float64 duration:float64! extra:string"),
    "lifecycle": _cols(_CONTEXT + "event:string! actor:string! extra:string"),
    "outages": _cols(_CONTEXT + "src:string! dst:string! link:string until:float64! extra:string"),
    "load": _cols(_CONTEXT + "src:string! dst:string! link:string bps:float64! capacity:float64 extra:string"),
    "metric_events": _cols(_CONTEXT + "actor:string round:int64 metric:string! value:float64 extra:string"),
    "unused": _cols(_CONTEXT + "id:int64! src:string! dst:string! kind:string! round:int64! reason:string! late:float64 extra:string"),
    "other": _cols(_CONTEXT + "event:string! extra:string"),
}
_TABLE_OF_EVENT = {"send": "messages", "deliver": "messages", "drop": "messages", "in_flight": "messages", "compute": "compute",
                   "crash": "lifecycle", "recover": "lifecycle", "outage": "outages", "load": "load", "metric": "metric_events",
                   "unused": "unused"}


def _fields() -> dict[str, str]:
    out = {"t": FLOAT, "event": STR}
    for cols in TABLES.values():
        for c in cols:
            if out.setdefault(c.name, c.type) != c.type:
                raise AssertionError(f"the log field {c.name!r} has two types in TABLES")  # a mistake in this file, caught at import
    del out["extra"]
    return out


#: every field a table names, with its type: `t` and `event` first, then in the order of TABLES (no `extra`)
FIELDS: dict[str, str] = _fields()


def table_of(event: str) -> str:
    """The table a record of `event` goes to (`other` for an event the schema does not know, e.g. `flower`)."""
    return _TABLE_OF_EVENT.get(event, "other")


def columns(table: str) -> dict[str, str]:
    """Column name -> type name ("int64", "float64", "string", "bool") of a table, in order:
    what a CSV reader should be told (e.g. pandas' `dtype=`, polars' `schema=`)."""
    return {c.name: c.type for c in TABLES[table]}
