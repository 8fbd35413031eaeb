"""Record and replay every random fate the network drew.

A trace is a msgpack stream (schema in docs/formats.md):

1. header map: ``format`` = "netemu-trace", ``version`` (3), ``checksum`` =
   "blake2b-256", ``netemu`` version, ``scenario`` name, ``scenario_hash``, ``seed``,
   ``algorithms`` (labels), ``runs``: per Monte Carlo run its ``seed`` and ``topology``
   fingerprint, and ``network``: the random models the fates were drawn from (what the
   scenario layer says they are, `netemu.scenario.settings.network_model`); with measured
   compute times, ``calibration``;
2. the body, in draw order: one entry per fate, keyed ``("msg", src, dst, round,
   index)`` -> (drop reason or None, delay), ``("participation", node, round)`` ->
   bool, ``("compute", node, round, index)`` -> slowdown factor, ``("completeness",
   node, round)`` -> the fraction of its local work done, written compactly
   (names once, the algorithm and run as section markers, small codes: the layout is
   in `netemu.trace.body`).  A fate is written once per Monte Carlo run: when another
   algorithm of the run draws the same key with the same value (keyed draws make this
   the rule), nothing is written; only a differing value (stateful links) is;
3. ``["end", entries, complete, digest]`` — `digest` is the BLAKE2b-256 of every byte
   before the end marker followed by msgpack ``["end", entries, complete]``; absent when
   the file was cut short.

Version 2 traces (every entry ``["fate", algorithm, run, key, value]``) are read as well.

`TraceWriter.fates(algorithm, run)` records while drawing; `Trace.fates(algorithm,
run)` replays: the algorithm's own entries first, then the run's first recorded value
of the key; keys never recorded are drawn from the seeded streams and counted as new.
Both also take the participation fates of a round as one batch (`many`, see
`netemu.engine.net.network.ManyFates`): the same entries, bytes and values as one call per key.
`Trace.read` refuses, with a `TraceError` saying what is wrong, any file it cannot
trust: damage (checksum, shape of every entry), truncation, another format version;
it decodes with limits so that a crafted file cannot make it allocate more than a
small multiple of its own size.  `check_scenario` refuses a scenario whose random
network models differ from those the trace was drawn from.

The code is in three modules, re-exported here: `netemu.trace.header` (format constants,
the header), `netemu.trace.writer` (`TraceWriter`)
and `netemu.trace.reader` (`Trace`), over `netemu.trace.body` (the entries' encoding).
"""

from __future__ import annotations

from netemu.errors import TraceError
from netemu.trace.reader import Trace
from netemu.trace.header import FORMAT, VERSION, VERSIONS, header, topology_fingerprint
from netemu.trace.writer import TraceWriter

__all__ = ["FORMAT", "VERSION", "VERSIONS", "Trace", "TraceError", "TraceWriter", "header", "topology_fingerprint"]
