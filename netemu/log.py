"""The message log: one JSON line per event, in virtual time only.

Each record starts with ``t`` (virtual seconds) and ``event``; context bound with
`bind` (e.g. the algorithm and Monte Carlo run) follows in the order it was bound,
then the event's fields (a field named like a context key replaces its value in the
context's place).  A record is one dict rendered by orjson — compact, byte-stable for
equal inputs, NumPy scalars and arrays included — and written to the sink, a buffered
binary file that is flushed only by `MessageLog.flush` (the run flushes on every exit
path): no processor chain and no system call per event.  A write the machine refuses (disk
full, read-only, I/O error) raises `WriteFailed` naming the file, once: the logs bound to the
same sink then write nothing more, so the run stops on that one error.  Record schemas are in
docs/formats.md.

With an `ArrowSink` as the sink (`[output] log_format = "arrow"`, netemu.logarrow) the same
records are kept in columns per record layout, one list append per value (a message record's
template is its `Layout`), and written as Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import call
from typing import IO, Any

import orjson

from netemu.errors import WRITE_ERRNOS, WriteFailed
from netemu.logarrow import ArrowSink

__all__ = ["MessageLog"]

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


class MessageLog:
    """Writes records to a binary file object as JSON lines, to an `ArrowSink`, or nowhere (`sink` None)."""

    def __init__(self, sink: IO[bytes] | ArrowSink | None, _failed: list[WriteFailed] | None = None, **context: Any) -> None:
        self.sink = sink
        self._context = context
        self._arrow = sink if isinstance(sink, ArrowSink) else None
        self._write: Callable[[bytes], Any] | None = None if sink is None or isinstance(sink, ArrowSink) else sink.write
        self.records = 0
        # per link class: [records with `attempts`, their attempts, the most]: the reliable transport's
        # retransmissions, for summary.json's `network` (counted whether or not the log is written)
        self.attempts: dict[str, list[int]] = {}
        self._templates: dict[Any, Any] = {}  # record templates (a dict, or an ArrowSink's Layout): `message`'s by its last field's key, `message_with`'s by its fields' names
        self._layouts: dict[tuple[str, ...], Any] = {}  # an ArrowSink's Layout of keyword records, by their fields' names
        self._failed = [] if _failed is None else _failed  # the sink's refused write, shared by every log bound to it

    def bind(self, **context: Any) -> MessageLog:
        """A log writing to the same sink with extra context in every record."""
        return MessageLog(self.sink, self._failed, **{**self._context, **context})

    def _refused(self, exc: OSError) -> None:
        """The sink refused a write: raise `WriteFailed` the first time; afterwards write nothing (the run is stopping)."""
        if exc.errno not in WRITE_ERRNOS:
            raise exc
        if not self._failed:
            self._failed.append(WriteFailed(getattr(self.sink, "name", "the message log"), exc))
            raise self._failed[0] from None

    def __call__(self, *, t: float, event: str, **fields: Any) -> None:
        self.records += 1
        if "attempts" in fields:
            self._attempts(fields["link"], fields["attempts"])
        if self._write is not None and not self._failed:
            try:
                self._write(orjson.dumps({"t": t, "event": event, **self._context, **fields}, option=_OPTIONS))
            except OSError as exc:
                self._refused(exc)
        elif self._arrow is not None and not self._failed:
            names = tuple(fields)
            layout = self._layouts.get(names)
            if layout is None:
                layout = self._keyword_layout(names)
            if layout is False:  # the context binds t or event, a field takes a context key's place, or it is not hashable
                self._arrow.add({"t": t, "event": event, **self._context, **fields})
            else:
                any(map(call, layout.put, (t, event, *fields.values())))  # append each value to its column (None)
                self._arrow.order.append(layout.code)
            if len(self._arrow.order) >= self._arrow.batch:
                self._spill()

    def message(self, t: float, event: str, id: int, src: str, dst: str, kind: str, round: int, nbytes: int, link: str,
                key: str, value: Any) -> None:
        """A message's record (send, deliver, drop): the record `__call__` writes for
        `t`, `event`, `id`, `src`, `dst`, `kind`, `round`, `bytes`, `link` and `key`=`value`,
        byte for byte, without keyword dictionaries (the network writes two per message).

        The record is a template holding the keys in their order and the context's
        values, filled in (in place: no copy per record): a fraction of the cost of
        spreading the context into a new dict (issue 15).  A context binding ``t`` or ``event`` takes the
        keyword path, where the context's value wins."""
        template = self._templates.get(key)
        if template is None:
            template = self._template(key, (key,))
            if template is None:  # the context binds t or event, whose value wins: the keyword path
                self(t=t, event=event, **{"id": id, "src": src, "dst": dst, "kind": kind, "round": round, "bytes": nbytes,
                                          "link": link, key: value})
                return
        self.records += 1
        if self._write is None:
            if self._arrow is not None and not self._failed:  # the template is the records' Layout: a value per column
                p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 = template.put
                p0(t)
                p1(event)
                p2(id)
                p3(src)
                p4(dst)
                p5(kind)
                p6(round)
                p7(nbytes)
                p8(link)
                p9(value)
                order = self._arrow.order
                order.append(template.code)
                if len(order) >= self._arrow.batch:
                    self._spill()
            return
        # the template itself is filled in: every key but the context's is set at each call, in place
        # (the order stays the template's), and orjson calls back into no Python code — no copy needed
        record = template
        record["t"] = t
        record["event"] = event
        record["id"] = id
        record["src"] = src
        record["dst"] = dst
        record["kind"] = kind
        record["round"] = round
        record["bytes"] = nbytes
        record["link"] = link
        record[key] = value
        try:
            self._write(orjson.dumps(record, option=_OPTIONS))
        except OSError as exc:
            self._refused(exc)

    def message_with(self, t: float, event: str, id: int, src: str, dst: str, kind: str, round: int, nbytes: int, link: str,
                     fields: dict[str, Any]) -> None:
        """`message` with several event fields after `link` (a routed message's `hops`, `attempts`, ...):
        the record `__call__` writes, byte for byte, from a template per tuple of field names."""
        names = tuple(fields)
        template = self._templates.get(names)
        if template is None:
            template = self._template(names, names)
            if template is None:
                self(t=t, event=event, **{"id": id, "src": src, "dst": dst, "kind": kind, "round": round, "bytes": nbytes,
                                          "link": link, **fields})
                return
        self.records += 1
        if "attempts" in fields:
            self._attempts(link, fields["attempts"])
        if self._write is None:
            if self._arrow is not None and not self._failed:
                for put, v in zip(template.put, (t, event, id, src, dst, kind, round, nbytes, link, *fields.values())):
                    put(v)
                self._arrow.order.append(template.code)
                if len(self._arrow.order) >= self._arrow.batch:
                    self._spill()
            return
        record = template  # filled in place, as in `message`
        record["t"] = t
        record["event"] = event
        record["id"] = id
        record["src"] = src
        record["dst"] = dst
        record["kind"] = kind
        record["round"] = round
        record["bytes"] = nbytes
        record["link"] = link
        record.update(fields)
        try:
            self._write(orjson.dumps(record, option=_OPTIONS))
        except OSError as exc:
            self._refused(exc)

    def _attempts(self, link: str, k: int) -> None:
        a = self.attempts.get(link)
        if a is None:
            a = self.attempts[link] = [0, 0, 0]
        a[0] += 1
        a[1] += k
        if k > a[2]:
            a[2] = k

    def _template(self, key: Any, names: tuple[str, ...]) -> Any:
        """The record template of a message record whose fields after `link` are `names`, kept
        under `key` (`message` keeps its own unrolled fill for speed); None when the context
        binds ``t`` or ``event``: such records take the keyword path.  For an `ArrowSink` the
        template is the records' `Layout` (the context its constant part), and the keyword path
        is also taken when a field is named like a context key or the context is not hashable."""
        if "t" in self._context or "event" in self._context:
            return None
        template = {
            "t": None, "event": None, **self._context, "id": None, "src": None, "dst": None, "kind": None,
            "round": None, "bytes": None, "link": None, **dict.fromkeys(names),
        }
        if self._arrow is not None:
            const = tuple(self._context.values())
            if len(template) != 9 + len(const) + len(names):  # a field named like a context key takes its place
                return None
            try:
                layout = self._arrow.layout(tuple(template), const)
            except TypeError:  # a context value that cannot be a dict key: the keyword path
                return None
            self._templates[key] = layout
            return layout
        self._templates[key] = template
        return template

    def _keyword_layout(self, names: tuple[str, ...]) -> Any:
        """The `Layout` of keyword records (`__call__`) with the fields `names` after the context, kept;
        False when their keys are not t, event, the context's and `names`, each once, or the
        context cannot be a dict key: those records go to `ArrowSink.add` whole."""
        keys = ("t", "event", *self._context, *names)
        layout: Any = False
        if len(set(keys)) == len(keys):
            try:
                layout = self._arrow.layout(keys, tuple(self._context.values()))  # type: ignore[union-attr]
            except TypeError:
                pass
        self._layouts[names] = layout
        return layout

    def _spill(self) -> None:
        """Write an Arrow sink's full batch."""
        try:
            self._arrow.spill()  # type: ignore[union-attr]
        except OSError as exc:
            self._refused(exc)

    def flush(self) -> None:
        """Write what is held (an Arrow sink's pending records) and flush the file."""
        if self.sink is not None and not self._failed:
            try:
                self.sink.flush()
            except OSError as exc:
                self._refused(exc)

    def close(self) -> None:
        """`flush`, and end an Arrow sink's stream (its file stays open: its owner closes it)."""
        self.flush()
        if self._arrow is not None and not self._failed:
            try:
                self._arrow.close()
            except OSError as exc:
                self._refused(exc)
