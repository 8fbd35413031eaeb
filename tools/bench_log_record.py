"""CPU per message-log record: netemu's orjson path (`MessageLog`) against structlog.

The same record — a `send` of the quick start, with the algorithm and run bound — written
N times into the same buffered file (/dev/null) by:

- orjson: `netemu.log.MessageLog.message`, what the network writes for every message (a
  record template filled in and rendered by orjson), and its keyword path (`MessageLog(...)`);
- structlog, lean: the message log as it was before it left structlog (a bound logger with
  one processor ordering the record and rendering it with orjson, a buffered sink);
- structlog, usual: `wrap_logger(..., processors=[JSONRenderer(serializer=orjson.dumps)])`
  and `.info(event, **fields)`, what structlog's documentation shows;
- arrow: `MessageLog.message` into an `ArrowSink` (`output.log_format = "arrow"`): the record
  kept as a tuple, written as Arrow record batches of `netemu.logarrow.BATCH` records (the
  batches' conversion and the stream's end are in the time), and its keyword path.

All write the same bytes for each record (checked; the Arrow log's record is read back and
rendered as JSON).  CPU time (`process_time`), min of --reps.

    python tools/bench_log_record.py [--records 200000] [--reps 3]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from typing import Any

import orjson
import structlog

from netemu.log import MessageLog
from netemu.logarrow import ArrowSink, read_arrow

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE
FIELDS = {"id": 0, "src": "server", "dst": "client-0", "kind": "model", "round": 0, "bytes": 126, "link": "downlink", "payload_bytes": 92}


class _Sink:
    """structlog's output logger: a buffered binary file."""

    def __init__(self, file: io.BufferedWriter) -> None:
        self.msg = file.write


def _render_line(_logger: Any, _name: str, event_dict: dict) -> bytes:
    ordered = {"t": event_dict.pop("t"), "event": event_dict.pop("event"), **event_dict}
    return orjson.dumps(ordered, option=_OPTIONS)


class _RecordLogger(structlog.BoundLoggerBase):
    def record(self, event: str, fields: dict) -> None:
        args, kwargs = self._process_event("msg", event, fields)
        self._logger.msg(*args, **kwargs)


def orjson_path(file: io.BufferedWriter):
    log = MessageLog(file).bind(algorithm="fedavg", run=0)
    return lambda t: log.message(t, "send", 0, "server", "client-0", "model", 0, 126, "downlink", "payload_bytes", 92)


def orjson_keywords(file: io.BufferedWriter):
    log = MessageLog(file).bind(algorithm="fedavg", run=0)
    return lambda t: log(t=t, event="send", **FIELDS)


def structlog_lean(file: io.BufferedWriter):
    log = structlog.wrap_logger(_Sink(file), processors=[_render_line], context_class=dict, wrapper_class=_RecordLogger)
    log = log.bind(algorithm="fedavg", run=0)
    return lambda t: log.record("send", {**FIELDS, "t": t})


def structlog_usual(file: io.BufferedWriter):
    def ordered(_logger: Any, _name: str, event_dict: dict) -> dict:
        return {"t": event_dict.pop("t"), "event": event_dict.pop("event"), **event_dict}

    renderer = structlog.processors.JSONRenderer(serializer=lambda d, **kw: orjson.dumps(d).decode() + "\n")
    log = structlog.wrap_logger(structlog.WriteLogger(io.TextIOWrapper(file, write_through=True)), processors=[ordered, renderer],
                                wrapper_class=structlog.make_filtering_bound_logger(0)).bind(algorithm="fedavg", run=0)
    return lambda t: log.info("send", t=t, **FIELDS)


def arrow_path(file: io.BufferedWriter):
    log = MessageLog(ArrowSink(file)).bind(algorithm="fedavg", run=0)
    write = lambda t: log.message(t, "send", 0, "server", "client-0", "model", 0, 126, "downlink", "payload_bytes", 92)
    write.finish = log.close  # type: ignore[attr-defined]
    return write


def arrow_keywords(file: io.BufferedWriter):
    log = MessageLog(ArrowSink(file)).bind(algorithm="fedavg", run=0)
    write = lambda t: log(t=t, event="send", **FIELDS)
    write.finish = log.close  # type: ignore[attr-defined]
    return write


def cpu_per_record(make, records: int, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        with open("/dev/null", "wb") as file:
            write = make(file)
            finish = getattr(write, "finish", lambda: None)
            start = time.process_time()
            for i in range(records):
                write(i * 0.5)
            finish()
            best = min(best, time.process_time() - start)
    return best / records * 1e6


def same_bytes(make) -> bytes:
    buffer = io.BytesIO()
    write = make(buffer)
    write(1.5)
    if hasattr(write, "finish"):  # an Arrow stream: its record read back, as JSON
        write.finish()
        with tempfile.NamedTemporaryFile(suffix=".arrows") as f:
            f.write(buffer.getvalue())
            f.flush()
            return b"".join(orjson.dumps(r) for _, r in read_arrow(f.name))
    return buffer.getvalue().rstrip(b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    paths = {"orjson (MessageLog.message)": orjson_path, "orjson (MessageLog keywords)": orjson_keywords,
             "structlog, lean": structlog_lean, "structlog, usual": structlog_usual,
             "arrow (MessageLog.message)": arrow_path, "arrow (MessageLog keywords)": arrow_keywords}
    reference = same_bytes(orjson_path)
    for name, make in paths.items():
        if same_bytes(make) != reference:
            raise SystemExit(f"{name} writes other bytes than the message log")
    out = {"records": args.records, "reps": args.reps, "structlog": structlog.__version__,
           "us_cpu_per_record": {name: round(cpu_per_record(make, args.records, args.reps), 3) for name, make in paths.items()}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
