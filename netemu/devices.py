"""Real device traces: import FedScale and FLGo-style traces into netemu's devices file.

netemu's devices file (JSON, docs/inspecting.md) describes clients by position:

    {"format": "netemu-devices", "version": 1, "horizon": 86400.0,
     "devices": [{"id": "f_12", "online": [[0.0, 310.5], [900.0, 1400.0]],
                  "speed": 18.2, "bandwidth": 2.4e6}, ...]}

`online`: the intervals (virtual seconds) in which the device is reachable; outside
them it is offline (its actor is down and messages to it are dropped, reason
``crash``).  `speed`: work units per second (one unit = one sample).  `bandwidth`:
bits/s of its uplink and downlink.  A scenario uses it with `[devices] file = ...`:
the i-th client of the topology gets the i-th device (wrapping around when there are
more clients than devices).

Importers:
* FedScale: the client behaviour trace — a pickle (or JSON) mapping client id to
  {"active": [...], "inactive": [...], "finish_time": ...}: active from active[i] to
  inactive[i]; and the device capacity file — client id to {"computation": ms per
  sample, "communication": kbps}.  Pickles can run code when loaded: import only
  files you trust.
* FLGo-style CSV: an availability file with a header and rows `client,start,end`
  (one online interval per row), and a capacity file `client,speed,bandwidth`
  (work units per second, bits/s).
"""

from __future__ import annotations

import csv
import json
import pickle
from pathlib import Path
from typing import Any

from netemu.errors import DeviceError

__all__ = ["DeviceError", "from_fedscale", "from_csv", "offline_windows", "read_devices", "write_devices"]

FORMAT, VERSION = "netemu-devices", 1


def _load_mapping(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DeviceError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = json.loads(raw) if raw.lstrip()[:1] in (b"{", b"[") else pickle.loads(raw)  # noqa: S301 - FedScale ships pickles
    except Exception as exc:  # noqa: BLE001 - any decoding failure is the file's fault
        raise DeviceError(f"{path}: neither JSON nor a pickle ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise DeviceError(f"{path}: expected a mapping of client id to its record, got {type(data).__name__}")
    return data


def _sorted_ids(ids) -> list:
    return sorted(ids, key=lambda i: (len(str(i)), str(i)))


def from_fedscale(availability: Path | None, capacity: Path | None, time_scale: float = 1.0) -> dict:
    """A devices document from FedScale's behaviour and capacity traces."""
    devices: dict[str, dict[str, Any]] = {}
    horizon = 0.0
    if availability is not None:
        for cid, rec in _load_mapping(Path(availability)).items():
            try:
                active, inactive = list(rec["active"]), list(rec["inactive"])
            except (KeyError, TypeError):
                raise DeviceError(f"{availability}: client {cid!r} has no 'active' and 'inactive' lists") from None
            ends = inactive + [rec.get("finish_time", max(active + inactive, default=0))] * (len(active) - len(inactive))
            online = [[float(a) * time_scale, float(b) * time_scale] for a, b in zip(active, ends) if b > a]
            devices.setdefault(str(cid), {})["online"] = online
            horizon = max(horizon, float(rec.get("finish_time", 0)) * time_scale, *(b for _, b in online))
    if capacity is not None:
        for cid, rec in _load_mapping(Path(capacity)).items():
            try:
                ms, kbps = float(rec["computation"]), float(rec["communication"])
            except (KeyError, TypeError, ValueError):
                raise DeviceError(f"{capacity}: client {cid!r} needs numeric 'computation' (ms/sample) and 'communication' (kbps)") from None
            if ms <= 0 or kbps <= 0:
                raise DeviceError(f"{capacity}: client {cid!r}: computation and communication must be > 0, got {ms}, {kbps}")
            devices.setdefault(str(cid), {}).update(speed=1000.0 / ms, bandwidth=kbps * 1000.0)
    return _document(devices, horizon)


def _read_csv(path: Path, columns: tuple[str, ...]) -> list[dict]:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise DeviceError(f"{path}: missing column(s) {', '.join(missing)}; expected a header {','.join(columns)}")
            return list(reader)
    except OSError as exc:
        raise DeviceError(f"{path}: cannot read ({exc.strerror})") from None


def _number(path: Path, row: int, key: str, value: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise DeviceError(f"{path}:{row}: {key} = {value!r} is not a number") from None


def from_csv(availability: Path | None, capacity: Path | None, time_scale: float = 1.0) -> dict:
    """A devices document from FLGo-style per-client CSV files."""
    devices: dict[str, dict[str, Any]] = {}
    horizon = 0.0
    if availability is not None:
        for n, r in enumerate(_read_csv(Path(availability), ("client", "start", "end")), 2):
            a, b = (_number(Path(availability), n, k, r[k]) * time_scale for k in ("start", "end"))
            if not 0 <= a < b:
                raise DeviceError(f"{availability}:{n}: an interval needs 0 <= start < end, got [{a}, {b}]")
            devices.setdefault(r["client"], {}).setdefault("online", []).append([a, b])
            horizon = max(horizon, b)
    if capacity is not None:
        for n, r in enumerate(_read_csv(Path(capacity), ("client", "speed", "bandwidth")), 2):
            speed, bw = (_number(Path(capacity), n, k, r[k]) for k in ("speed", "bandwidth"))
            if speed <= 0 or bw <= 0:
                raise DeviceError(f"{capacity}:{n}: speed and bandwidth must be > 0")
            devices.setdefault(r["client"], {}).update(speed=speed, bandwidth=bw)
    for d in devices.values():
        if "online" in d:
            d["online"].sort()
    return _document(devices, horizon)


def _document(devices: dict, horizon: float) -> dict:
    if not devices:
        raise DeviceError("the traces describe no device")
    return {
        "format": FORMAT,
        "version": VERSION,
        "horizon": horizon,
        "devices": [{"id": cid, **devices[cid]} for cid in _sorted_ids(devices)],
    }


def write_devices(doc: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def read_devices(path: Path) -> dict:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise DeviceError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise DeviceError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise DeviceError(f"{path}: not a netemu devices file (format {FORMAT!r}, version {VERSION})")
    if not doc.get("devices"):
        raise DeviceError(f"{path}: no devices")
    return doc


def offline_windows(online: list[list[float]]) -> list[tuple[float, float | None]]:
    """(offline from, back online at or None) covering [0, ∞) outside the online intervals."""
    out, t = [], 0.0
    for a, b in sorted(online):
        if a > t:
            out.append((t, a))
        t = max(t, b)
    out.append((t, None))
    return out
