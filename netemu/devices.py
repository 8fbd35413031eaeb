"""Real device traces: import FedScale and FLGo traces into netemu's devices file.

The file's format, reading and checking it, and scheduling devices in a World are in
netemu/devicefile.py (re-exported here); the restricted unpickler in netemu/safepickle.py.

Importers (the projects' semantics, with the source they follow):
* FedScale (SymbioticLab/FedScale: fedscale/cloud/client_manager.py,
  fedscale/cloud/internal/client_metadata.py, fedscale/cloud/aggregation/aggregator.py,
  benchmark/dataset/data/device_info/README.md): client ids count from 1; client c
  takes the availability record at *position* ``c % len(availability)`` and the
  capacity record with *key* ``c % len(capacity)`` (FedScale's defaults 1.0 ms and
  1.0 kbps when that key is missing); online when ``active[i] <= t % finish_time <=
  inactive[i]``; a local update of B samples x S steps takes ``3 * B * S * ms / 1000``
  seconds (backward pass ~ 2x the forward one), so speed = 1000 / (3 ms).
* FLGo (WwZzz/easyFL: flgo/simulator/phone_simulator.py): availability from Kaggle's
  "Users Active Time Prediction" `pings.csv` (`id,timestamp`): a user is online in
  the 15-second slot of each ping, the table repeating after its last timestamp;
  users ordered by number of pings (FLGo's ``HIGH``, or ``LOW``); compute speed
  from Benchmark-On-Device-Training time tables (`batchsize,expr_train`, ms per
  batch), one table per device type, assigned round-robin.
* netemu's own CSV: availability rows `client,start,end`, capacity rows
  `client,speed,bandwidth`.

Every reader is bounded (file size, record counts) and checks every number
(finite, positive where it must be); FedScale pickles are read with a restricted
unpickler that constructs only plain data and numeric NumPy values, never code
(netemu/safepickle.py, which also holds the reading `LIMITS`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from netemu.devicefile import (  # re-exported: netemu.devices stays the one public name
    DeviceTraceWarning, attach_devices, document, finite, offline_windows, read_devices,
    refuse_constant, write_devices,
)
from netemu.errors import DeviceError
from netemu.safepickle import LIMITS, load_pickle, read_bounded
from netemu.terminal import printable

__all__ = [
    "DeviceError", "DeviceTraceWarning", "LIMITS", "attach_devices", "from_csv", "from_fedscale", "from_flgo",
    "from_netemu_csv", "load_pickle", "offline_windows", "read_devices", "write_devices",
]


FEDSCALE_FACTOR = 3.0   # FedScale's augmentation_factor: forward + backward ~ 3 x the inference latency
FLGO_SLOT = 15.0        # seconds between two pings in Kaggle's pings.csv (FLGo's `t - t % 15`)


# ------------------------------------------------------------------ mappings and numbers


def _load_mapping(path: Path) -> dict:
    path = Path(path)
    raw = read_bounded(path)
    if raw.lstrip()[:1] in (b"{", b"["):
        try:
            data = json.loads(raw, parse_constant=refuse_constant(path))
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep for the decoder
            raise DeviceError(f"{path}: not JSON ({str(exc)[:200]})") from None
    else:
        data = load_pickle(path, raw)
    if not isinstance(data, dict):
        raise DeviceError(f"{path}: expected a mapping of client id to its record, got {type(data).__name__}")
    if len(data) > LIMITS["devices"]:
        raise DeviceError(f"{path}: {len(data)} clients is more than the limit of {LIMITS['devices']}")
    return data


def _sorted_ids(ids) -> list:
    return sorted(ids, key=lambda i: (len(str(i)), str(i)))


# ------------------------------------------------------------------ FedScale


def _fedscale_online(path: Path, cid: Any, rec: Any, time_scale: float) -> tuple[list[list[float]], float]:
    """(online intervals, finish_time) of one FedScale availability record, scaled."""
    import numpy as np

    where = f"client {printable(cid)}"
    lists = (list, tuple, np.ndarray)
    if not isinstance(rec, dict) or not isinstance(rec.get("active"), lists) or not isinstance(rec.get("inactive"), lists):
        raise DeviceError(f"{path}: {where} has no 'active' and 'inactive' lists")
    if any(np.ndim(rec[k]) != 1 for k in ("active", "inactive") if isinstance(rec[k], np.ndarray)):
        raise DeviceError(f"{path}: {where}: 'active' and 'inactive' must be one-dimensional")
    active = [finite(path, where, f"active[{i}]", a, minimum=0.0) for i, a in enumerate(rec["active"])]
    inactive = [finite(path, where, f"inactive[{i}]", b, minimum=0.0) for i, b in enumerate(rec["inactive"])]
    if len(inactive) > len(active):
        raise DeviceError(f"{path}: {where}: {len(inactive)} 'inactive' times for {len(active)} 'active' ones")
    default_finish = max(active + inactive, default=0.0)
    finish = finite(path, where, "finish_time", rec.get("finish_time", default_finish), minimum=0.0)
    # an `active` without its `inactive` (the last one) stays online until finish_time
    ends = inactive + [finish] * (len(active) - len(inactive))
    online = []
    for i, (a, b) in enumerate(zip(active, ends, strict=True)):
        if b < a:
            raise DeviceError(f"{path}: {where}: interval {i} is reversed: inactive {b:g} comes before active {a:g}; "
                              "accepted: active[i] <= inactive[i]")
        if b > a:
            online.append([a * time_scale, b * time_scale])
    if online and online[-1][1] > finish * time_scale and rec.get("finish_time") is not None:
        raise DeviceError(f"{path}: {where}: an interval ends at {online[-1][1] / time_scale:g}, after finish_time {finish:g}")
    return sorted(online), finish * time_scale


def _record_intervals(rec: Any) -> int:
    """How many online intervals a FedScale availability record makes (its `active` times), read
    without building them; a malformed record counts 0 (`_fedscale_online` says what is wrong)."""
    active = rec.get("active") if isinstance(rec, dict) else None
    try:
        return len(active) if active is not None and not isinstance(active, (str, bytes, dict)) else 0
    except TypeError:
        return 0


def _check_intervals(path: Path, uses: Iterator[tuple[Any, int]]) -> None:
    """Refuse, before any interval is built, a trace whose devices would hold more than
    LIMITS["intervals"] intervals in all: a record shared by many ids (one pickled object, the
    pickle's memo) counts once per device that uses it, as it would be built."""
    total = 0
    for rec, times in uses:
        total += _record_intervals(rec) * times
        if total > LIMITS["intervals"]:
            raise DeviceError(f"{path}: the devices would hold more than {LIMITS['intervals']:,} online intervals in all "
                              "(records shared by many clients count once per client); accepted: at most "
                              f"{LIMITS['intervals']:,}")


def _fedscale_capacity(path: Path, cid: Any, rec: Any, factor: float) -> dict:
    where = f"client {printable(cid)}"
    if not isinstance(rec, dict):
        raise DeviceError(f"{path}: {where} needs numeric 'computation' (ms/sample) and 'communication' (kbps)")
    ms = finite(path, where, "computation", rec.get("computation"), positive=True)
    kbps = finite(path, where, "communication", rec.get("communication"), positive=True)
    return {"speed": 1000.0 / (factor * ms), "bandwidth": kbps * 1000.0}


def _lookup(mapping: dict, key: int):
    """FedScale's `profiles.get(mapped_id)`, also for JSON files whose keys are strings."""
    if key in mapping:
        return mapping[key]
    return mapping.get(str(key))


def from_fedscale(
    availability: Path | None,
    capacity: Path | None,
    time_scale: float = 1.0,
    *,
    pairing: str = "position",
    periodic: bool = True,
    count: int | None = None,
    factor: float = FEDSCALE_FACTOR,
) -> dict:
    """A devices document from FedScale's behaviour and capacity traces.

    `pairing="position"` (FedScale's own): device i is FedScale client c = i + 1, with
    availability record ``list(avail)[c % len(avail)]`` and capacity record
    ``capacity[c % len(capacity)]``; `count` devices (default: the larger file).
    `pairing="id"`: records with the same client id form one device.
    """
    time_scale = finite(Path("--time-scale"), "option", "time_scale", time_scale, positive=True)
    avail = _load_mapping(Path(availability)) if availability is not None else None
    cap = _load_mapping(Path(capacity)) if capacity is not None else None
    if avail is not None and not avail:
        raise DeviceError(f"{availability}: the availability trace has no client")
    if cap is not None and not cap:
        raise DeviceError(f"{capacity}: the capacity trace has no client")
    avail_path, cap_path = Path(str(availability)), Path(str(capacity))  # named in errors (read only if given)
    devices: list[dict[str, Any]] = []
    notes: list[str] = []
    if pairing == "id":
        ids = set(map(str, avail or ())) | set(map(str, cap or ()))
        avail_s = {str(k): v for k, v in (avail or {}).items()}
        cap_s = {str(k): v for k, v in (cap or {}).items()}
        _check_intervals(avail_path, ((rec, 1) for rec in avail_s.values()))
        for cid in _sorted_ids(ids):
            d: dict[str, Any] = {"id": cid}
            if cid in avail_s:
                d["online"], finish = _fedscale_online(avail_path, cid, avail_s[cid], time_scale)
                if periodic:
                    d["period"] = finish
            if cid in cap_s:
                d.update(_fedscale_capacity(cap_path, cid, cap_s[cid], factor))
            devices.append(d)
        if avail is not None and cap is not None:
            lonely = sum(1 for d in devices if ("online" in d) != ("speed" in d))
            if lonely:
                notes.append(f"{lonely} of {len(devices)} ids appear in only one of the two files "
                             "(FedScale pairs by position; see --pairing)")
    elif pairing == "position":
        n = count if count is not None else max(len(avail or ()), len(cap or ()))
        if not 1 <= n <= LIMITS["devices"]:
            raise DeviceError(f"--count = {n}: accepted 1 .. {LIMITS['devices']}")
        keys = list(avail) if avail is not None else []
        if avail:  # device i uses record (i + 1) % len(keys): key k serves n // K devices, one more for the first n % K of 1..n
            K = len(keys)
            _check_intervals(avail_path, ((avail[keys[c % K]], n // K + (1 if j < n % K else 0))
                                                       for j, c in enumerate(range(1, K + 1))))
        missing_capacity = 0
        for i in range(n):
            c = i + 1  # FedScale's client ids start at 1 (aggregator.py: num_of_clients + 1)
            d = {"id": str(c)}
            if avail is not None:
                key = keys[c % len(keys)]
                d["id"] = f"{c}"
                d["availability_id"] = str(key)
                d["online"], finish = _fedscale_online(avail_path, key, avail[key], time_scale)
                if periodic:
                    d["period"] = finish
            if cap is not None:
                mapped = c % len(cap)
                rec = _lookup(cap, mapped)
                if rec is None:  # aggregator.py: client_profiles.get(mapped_id, {'computation': 1.0, 'communication': 1.0})
                    missing_capacity += 1
                    rec = {"computation": 1.0, "communication": 1.0}
                d["capacity_id"] = str(mapped)
                d.update(_fedscale_capacity(cap_path, mapped, rec, factor))
            devices.append(d)
        if cap is not None and missing_capacity:
            notes.append(f"{missing_capacity} of {n} clients found no capacity record under key c % {len(cap)} and got "
                         "FedScale's default (computation 1.0 ms, communication 1.0 kbps)")
    else:
        raise DeviceError(f"pairing = {pairing!r}: accepted 'position' (FedScale's) or 'id'")
    for d in devices:
        if periodic and "online" in d and not d.get("period"):
            raise DeviceError(f"{availability}: client {d.get('availability_id', d['id'])}: finish_time 0 cannot repeat")
    return document(devices, notes)


# ------------------------------------------------------------------ FLGo


def _csv_rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict]]:
    """(line number, row) of a UTF-8 CSV with a header holding `columns`."""
    raw = read_bounded(Path(path))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DeviceError(f"{path}: not a UTF-8 text CSV file (byte {exc.start}); expected a header {','.join(columns)}") from None
    if "\x00" in text:
        raise DeviceError(f"{path}: contains NUL bytes: not a text CSV file; expected a header {','.join(columns)}")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        fields = [f.strip() for f in (reader.fieldnames or [])]
        reader.fieldnames = fields
        missing = [c for c in columns if c not in fields]
        if missing:
            raise DeviceError(f"{path}: missing column(s) {', '.join(missing)}; expected a header {','.join(columns)}")
        for row in reader:
            yield reader.line_num, row
    except csv.Error as exc:
        raise DeviceError(f"{path}: not a readable CSV file ({exc})") from None


def from_flgo(
    availability: Path | None,
    capacity: list[Path] | None,
    time_scale: float = 1.0,
    *,
    periodic: bool = True,
    order: str = "HIGH",
    count: int | None = None,
) -> dict:
    """A devices document from FLGo's real-world traces (flgo/simulator/phone_simulator.py).

    `availability`: Kaggle's pings.csv (`id,timestamp`, seconds): timestamps relative to
    the first row; a user is online in the 15-second slot ``[t - t % 15, t - t % 15 + 15)``
    of each ping; the table repeats after its last timestamp (FLGo: ``t % index[-1]``).
    Users are ordered by number of pings, most first (`order="HIGH"`, FLGo's HIGH/IDL)
    or fewest first (`"LOW"`); ties by id; `count` devices (default all users).
    `capacity`: Benchmark-On-Device-Training time tables (`batchsize,expr_train`, ms per
    batch), one per device type: speed = 1000 / mean(expr_train / batchsize) samples per
    second; device i gets table i mod k.
    """
    time_scale = finite(Path("--time-scale"), "option", "time_scale", time_scale, positive=True)
    if order not in ("HIGH", "LOW"):
        raise DeviceError(f"--order {order!r}: accepted HIGH (most pings first, FLGo's HIGH/IDL) or LOW")
    devices: list[dict[str, Any]] = []
    notes: list[str] = []
    if availability is not None:
        path = Path(availability)
        pings: dict[str, list[float]] = {}
        first = None
        last = 0.0
        total = 0
        for line, row in _csv_rows(path, ("id", "timestamp")):
            t = finite(path, f"line {line}", "timestamp", row["timestamp"])
            if first is None:
                first = t  # FLGo: timestamp - timestamp[0]
            rel = t - first
            if rel < 0:
                raise DeviceError(f"{path}: line {line}: timestamp {row['timestamp']} precedes the first row's {first:g}; "
                                  "FLGo measures time from the first row")
            total += 1
            if total > LIMITS["intervals"]:
                raise DeviceError(f"{path}: more than {LIMITS['intervals']} pings")
            pings.setdefault(row["id"].strip(), []).append(rel - rel % FLGO_SLOT)
            last = max(last, rel)
        if not pings:
            raise DeviceError(f"{path}: no pings")
        if periodic and last <= 0:
            raise DeviceError(f"{path}: every ping has the first timestamp: a table of length 0 cannot repeat")
        users = sorted(pings, key=lambda u: (-len(pings[u]) if order == "HIGH" else len(pings[u]), len(u), u))
        if count is not None:
            if not 1 <= count <= LIMITS["devices"]:
                raise DeviceError(f"--count = {count}: accepted 1 .. {LIMITS['devices']}")
            users = [users[i % len(users)] for i in range(count)]
        for u in users:
            online: list[list[float]] = []
            for slot in sorted(set(pings[u])):
                a, b = slot * time_scale, min(slot + FLGO_SLOT, last if periodic else slot + FLGO_SLOT) * time_scale
                if b <= a:
                    continue
                if online and online[-1][1] >= a:
                    online[-1][1] = max(online[-1][1], b)
                else:
                    online.append([a, b])
            d: dict[str, Any] = {"id": u, "online": online}
            if periodic:
                d["period"] = last * time_scale
            devices.append(d)
    if capacity:
        speeds = []
        for path in map(Path, capacity):
            per_sample = []
            for line, row in _csv_rows(path, ("batchsize", "expr_train")):
                bs = finite(path, f"line {line}", "batchsize", row["batchsize"], positive=True)
                ms = finite(path, f"line {line}", "expr_train", row["expr_train"], positive=True)
                per_sample.append(ms / bs)
            if not per_sample:
                raise DeviceError(f"{path}: a time table without rows")
            speeds.append((path.stem, 1000.0 / (sum(per_sample) / len(per_sample))))
        if not devices:
            devices = [{"id": name} for name, _ in speeds]
        for i, d in enumerate(devices):
            d["speed"] = speeds[i % len(speeds)][1]
    if not devices:
        raise DeviceError("give --availability (pings.csv), --capacity (time tables) or both")
    return document(devices, notes, keep_order=True)


# ------------------------------------------------------------------ netemu's own CSV


def from_netemu_csv(
    availability: Path | None, capacity: Path | None, time_scale: float = 1.0, *, periodic: bool = False
) -> dict:
    """A devices document from netemu's own per-client CSV files (rows client,start,end and
    client,speed,bandwidth).  With `periodic`, the trace repeats after its last end."""
    time_scale = finite(Path("--time-scale"), "option", "time_scale", time_scale, positive=True)
    devices: dict[str, dict[str, Any]] = {}
    horizon = 0.0
    if availability is not None:
        path = Path(availability)
        for n, r in _csv_rows(path, ("client", "start", "end")):
            a = finite(path, f"line {n}", "start", r["start"], minimum=0.0) * time_scale
            b = finite(path, f"line {n}", "end", r["end"]) * time_scale
            if not a < b:
                raise DeviceError(f"{path}: line {n}: the interval [{r['start']}, {r['end']}] is empty or reversed; "
                                  "accepted: 0 <= start < end")
            devices.setdefault(r["client"], {}).setdefault("online", []).append([a, b])
            horizon = max(horizon, b)
            if len(devices) > LIMITS["devices"] or n > LIMITS["intervals"]:
                raise DeviceError(f"{path}: more than {LIMITS['devices']} devices or {LIMITS['intervals']} rows")
    if capacity is not None:
        path = Path(capacity)
        for n, r in _csv_rows(path, ("client", "speed", "bandwidth")):
            speed = finite(path, f"line {n}", "speed", r["speed"], positive=True)
            bw = finite(path, f"line {n}", "bandwidth", r["bandwidth"], positive=True)
            devices.setdefault(r["client"], {}).update(speed=speed, bandwidth=bw)
            if len(devices) > LIMITS["devices"]:
                raise DeviceError(f"{path}: more than {LIMITS['devices']} devices")
    for d in devices.values():
        if "online" in d:
            d["online"].sort()
            if periodic:
                d["period"] = horizon
    return document([{"id": cid, **devices[cid]} for cid in _sorted_ids(devices)], [])


from_csv = from_netemu_csv  # the name before netemu's CSV format was named as netemu's
