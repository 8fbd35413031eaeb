"""netemu's devices file: its format, reading and checking it, and scheduling its devices in a World.

netemu's devices file (JSON, docs/inspecting.md) describes clients by position:

    {"format": "netemu-devices", "version": 2, "horizon": 86400.0,
     "devices": [{"id": "f_12", "online": [[0.0, 310.5], [900.0, 1400.0]], "period": 86400.0,
                  "speed": 18.2, "bandwidth": 2.4e6}, ...]}

`online`: the intervals (virtual seconds) in which the device is reachable; outside
them it is offline (its actor is down and messages to it are dropped, reason
``crash``).  `period` (optional): the trace repeats, the device is online at t when
it is online at ``t % period`` (FedScale's and FLGo's semantics); without it the
device stays offline after its last interval, and a run that outlasts the trace's
`horizon` gets a `DeviceTraceWarning`.  `speed`: work units per second (one unit =
one sample).  `bandwidth`: bits/s of its uplink and downlink.  A scenario uses it
with `[devices] file = ...`: the i-th client of the topology gets the i-th device
(wrapping around when there are more clients than devices).

The importers that write this file from FedScale, FLGo and CSV traces are in netemu/devices.py.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from netemu.errors import DeviceError, writing
from netemu.safepickle import LIMITS, read_bounded

__all__ = [
    "FORMAT", "VERSION", "DeviceTraceWarning", "attach_devices", "document", "finite", "offline_windows",
    "read_devices", "refuse_constant", "write_devices",
]

FORMAT, VERSION = "netemu-devices", 2
READABLE_VERSIONS = (1, 2)  # version 1 had no `period`


class DeviceTraceWarning(UserWarning):
    """A run uses a device trace in a way that changes its outcome (e.g. it outlasts the trace)."""


# ------------------------------------------------------------------ numbers


def refuse_constant(path: Path):
    """A json `parse_constant` that refuses NaN and infinities, naming the file."""
    def refuse(name: str):
        raise DeviceError(f"{path}: {name} is not a number netemu accepts (every value must be finite)")

    return refuse


def finite(path: Path, where: str, key: str, value: Any, *, positive: bool = False, minimum: float | None = None) -> float:
    """`value` as a finite float (> 0 with `positive`, >= `minimum`), or a DeviceError naming file, place and key."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DeviceError(f"{path}: {where}: {key} = {value!r} is not a number") from None
    if not math.isfinite(x):
        raise DeviceError(f"{path}: {where}: {key} = {value!r} is not finite; accepted: a finite number")
    if positive and x <= 0:
        raise DeviceError(f"{path}: {where}: {key} = {value!r} must be > 0")
    if minimum is not None and x < minimum:
        raise DeviceError(f"{path}: {where}: {key} = {value!r} must be >= {minimum}")
    return x


# ------------------------------------------------------------------ the devices file


def document(devices: list[dict], notes: list[str], keep_order: bool = True) -> dict:
    """A devices document holding `devices` (its horizon: the latest interval end or period)."""
    if not devices:
        raise DeviceError("the traces describe no device")
    if len(devices) > LIMITS["devices"]:
        raise DeviceError(f"{len(devices)} devices is more than the limit of {LIMITS['devices']}")
    horizon = 0.0
    for d in devices:
        horizon = max(horizon, d.get("period") or 0.0, *(b for _, b in d.get("online", ())))
    doc = {"format": FORMAT, "version": VERSION, "horizon": horizon, "devices": devices}
    if notes:
        doc["notes"] = notes
    return doc


def write_devices(doc: dict, path: Path) -> None:
    """Write a devices document as strict JSON (no NaN or Infinity can be written)."""
    try:
        text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    except ValueError as exc:
        raise DeviceError(f"{path}: refusing to write a non-finite number ({exc})") from None
    try:
        with writing(path):  # disk full, read-only, I/O error: WriteFailed (exit 1), not bad input
            Path(path).write_text(text)
    except OSError as exc:
        raise DeviceError(f"{path}: cannot write ({exc.strerror})") from None


def read_devices(path: Path) -> dict:
    """A netemu devices file, checked: format and version, every interval, period, speed
    and bandwidth finite and in range, sizes within `LIMITS`."""
    path = Path(path)
    raw = read_bounded(path)
    try:
        doc = json.loads(raw, parse_constant=refuse_constant(path))
    except DeviceError:
        raise
    except (ValueError, RecursionError) as exc:
        raise DeviceError(f"{path}: not JSON ({str(exc)[:200]})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") not in READABLE_VERSIONS:
        raise DeviceError(f"{path}: not a netemu devices file (format {FORMAT!r}, version "
                          f"{' or '.join(map(str, READABLE_VERSIONS))}; make one with `netemu devices import`)")
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        raise DeviceError(f"{path}: no devices")
    if len(devices) > LIMITS["devices"]:
        raise DeviceError(f"{path}: {len(devices)} devices is more than the limit of {LIMITS['devices']}")
    finite(path, "document", "horizon", doc.get("horizon", 0.0), minimum=0.0)
    intervals = 0
    for i, d in enumerate(devices):
        where = f"device {i}"
        if not isinstance(d, dict):
            raise DeviceError(f"{path}: {where}: expected an object, got {type(d).__name__}")
        online = d.get("online")
        if online is not None:
            if not isinstance(online, list):
                raise DeviceError(f"{path}: {where}: 'online' must be a list of [start, end] pairs")
            intervals += len(online)
            if intervals > LIMITS["intervals"]:
                raise DeviceError(f"{path}: more than {LIMITS['intervals']} online intervals")
            for j, iv in enumerate(online):
                if not isinstance(iv, list) or len(iv) != 2:
                    raise DeviceError(f"{path}: {where}: online[{j}] = {iv!r}: expected [start, end]")
                a = finite(path, where, f"online[{j}][0]", iv[0], minimum=0.0)
                b = finite(path, where, f"online[{j}][1]", iv[1])
                if not a < b:
                    raise DeviceError(f"{path}: {where}: online[{j}] = {iv!r} is empty or reversed; accepted: start < end")
        if "period" in d:
            p = finite(path, where, "period", d["period"], positive=True)
            if online and max(b for _, b in online) > p * (1 + 1e-12):
                raise DeviceError(f"{path}: {where}: an online interval ends after the period {p:g}")
        for key in ("speed", "bandwidth"):
            if key in d:
                finite(path, where, key, d[key], positive=True)
    return doc


# ------------------------------------------------------------------ devices in a World


def offline_windows(online: list[list[float]], period: float | None = None) -> Iterator[tuple[float, float | None]]:
    """(offline from, back online at or None), in time order, outside the online intervals.

    Without a period the windows cover [0, ∞) and the last one never ends.  With a
    period the online intervals repeat every `period` seconds (FedScale: online at t
    when online at ``t % finish_time``); the windows go on for ever, merged across
    period boundaries, and there are none when the intervals cover the whole period.
    """
    spans = sorted((float(a), float(b)) for a, b in online)
    if period is None:
        t = 0.0
        for a, b in spans:
            if a > t:
                yield (t, a)
            t = max(t, b)
        yield (t, None)
        return
    spans = [(max(a, 0.0), min(b, period)) for a, b in spans if b > 0 and a < period]
    covered = 0.0
    for a, b in spans:
        if a > covered:
            break
        covered = max(covered, b)
    if covered >= period:
        return
    if not spans:
        yield (0.0, None)
        return
    t, k = 0.0, 0
    while True:
        base = k * period
        for a, b in spans:
            if base + a > t:
                yield (t, base + a)
            t = max(t, base + b)
        k += 1


def _schedule_windows(world, name: str, windows: Iterator[tuple[float, float | None]]) -> None:
    """Schedule the next offline window of `name`; at its end, the one after it."""
    w = next(windows, None)
    if w is None:
        return
    start, end = w
    world.crash(name, at=max(start, world.env.now), recover_at=end)
    if end is not None:
        world.at(end, lambda: _schedule_windows(world, name, windows))


def attach_devices(world, devices: dict[str, dict], source: str = "the devices file", horizon: float | None = None) -> None:
    """Take each node of `devices` (name -> device) offline outside its online intervals,
    one window at a time (a periodic trace never ends), and warn when the run outlasts
    the trace of a device without a period."""
    finite_end = None
    for name, device in devices.items():
        if "online" not in device:
            continue
        _schedule_windows(world, name, offline_windows(device["online"], device.get("period")))
        if device.get("period") is None:
            last = max((b for _, b in device["online"]), default=0.0)
            finite_end = max(finite_end or 0.0, last, horizon or 0.0)
    if finite_end is not None:

        def outlasted() -> None:
            warnings.warn(
                f"{source}: the run has reached t = {finite_end:g} s, the end of its device trace, and goes on: devices "
                "without a period stay offline from their last interval (import with --periodic, or set run.until)",
                DeviceTraceWarning, stacklevel=1)

        world.at(finite_end, outlasted)
