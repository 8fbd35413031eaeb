"""TensorBoard event files of scalars, written and read by hand (no tensorflow, no tensorboard).

A file is a sequence of TFRecords (tensorflow/core/lib/io/record_writer.cc): the data's
length as a little-endian uint64, the masked CRC32C of those 8 bytes, the data, the masked
CRC32C of the data.  Each data is an `Event` protobuf (tensorflow/core/util/event.proto):
wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5
(a `Summary`: repeated value = 1, each a `Value` with tag = 1 (string) and
simple_value = 2 (float32)).  The first event names the version, "brain.Event:2".
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["EventWriter", "crc32c", "read_events"]


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1  # Castagnoli polynomial, reflected
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of `data`, as TFRecord uses it."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(crc: int) -> int:
    """TFRecord's masked CRC: rotate right by 15 bits and add a constant (a CRC of data holding CRCs stays useful)."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 is its two's complement, 10 bytes
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes_field(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _event(wall_time: float, step: int = 0, *, file_version: str | None = None, tag: str | None = None, value: float = 0.0) -> bytes:
    msg = _key(1, 1) + struct.pack("<d", wall_time)
    if step:
        msg += _key(2, 0) + _varint(step)
    if file_version is not None:
        msg += _bytes_field(3, file_version.encode())
    if tag is not None:
        summary_value = _bytes_field(1, tag.encode()) + _key(2, 5) + struct.pack("<f", value)
        msg += _bytes_field(5, _bytes_field(1, summary_value))
    return msg


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", _masked(crc32c(length))) + data + struct.pack("<I", _masked(crc32c(data)))


class EventWriter:
    """Scalars to one event file; `wall_time` is whatever clock the caller chooses (netemu: virtual time)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._f: BinaryIO = open(self.path, "wb")
        self._f.write(_record(_event(0.0, file_version="brain.Event:2")))

    def scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        self._f.write(_record(_event(wall_time, step, tag=tag, value=value)))

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field, wire type, value) of a protobuf message: an int for varints, bytes otherwise."""
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
            yield field, wire, v
        elif wire == 1:
            yield field, wire, buf[i:i + 8]
            i += 8
        elif wire == 5:
            yield field, wire, buf[i:i + 4]
            i += 4
        elif wire == 2:
            n, i = _read_varint(buf, i)
            yield field, wire, buf[i:i + n]
            i += n
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def read_events(path: str | Path) -> Iterator[dict]:
    """The events of a file as dicts: wall_time, step, and file_version or tag and value
    (scalar summaries only); a CRC that does not match raises ValueError."""
    data = Path(path).read_bytes()
    i = 0
    while i < len(data):
        head = data[i:i + 8]
        (n,) = struct.unpack("<Q", head)
        (crc,) = struct.unpack("<I", data[i + 8:i + 12])
        body = data[i + 12:i + 12 + n]
        (body_crc,) = struct.unpack("<I", data[i + 12 + n:i + 16 + n])
        if crc != _masked(crc32c(head)) or body_crc != _masked(crc32c(body)) or len(body) != n:
            raise ValueError(f"{path}: a damaged record at byte {i}")
        i += 16 + n
        event: dict = {"wall_time": 0.0, "step": 0}
        for field, _, v in _fields(body):
            if field == 1:
                (event["wall_time"],) = struct.unpack("<d", v)
            elif field == 2:
                event["step"] = v - (1 << 64) if isinstance(v, int) and v >= 1 << 63 else v
            elif field == 3:
                event["file_version"] = bytes(v).decode()
            elif field == 5:
                for f1, _, value in _fields(v):
                    if f1 == 1:
                        for f2, _, x in _fields(value):
                            if f2 == 1:
                                event["tag"] = bytes(x).decode()
                            elif f2 == 2:
                                (event["value"],) = struct.unpack("<f", x)
        yield event
