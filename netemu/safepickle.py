"""Bounded reading of trace files and a restricted unpickler for FedScale's pickles.

A device trace comes from strangers: `read_bounded` reads no more than `LIMITS["file_bytes"]`,
and `load_pickle` builds only plain data (dicts, lists, tuples, numbers, strings, booleans,
None) and numeric NumPy values, refusing every other global in the pickle unexecuted
(`DeviceError`).  netemu.devices uses both; `LIMITS` is the same dict there.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import stat
from pathlib import Path
from typing import Any

from netemu.errors import DeviceError

__all__ = ["LIMITS", "load_pickle", "read_bounded"]

LIMITS = {
    "file_bytes": 1 << 30,        # any trace or devices file: read no more than 1 GiB
    "devices": 5_000_000,         # devices in one document
    "intervals": 50_000_000,      # online intervals over all devices
    "array_items": 50_000_000,    # items of one NumPy array inside a FedScale pickle
}


def read_bounded(path: Path) -> bytes:
    """The bytes of a trace file, refused (DeviceError) above LIMITS["file_bytes"] or when unreadable."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block open(), a device never end: never opened
            raise DeviceError(f"{path}: not a regular file (a device, FIFO or socket)")
        size = st.st_size
        if size > LIMITS["file_bytes"]:
            raise DeviceError(f"{path}: {size} bytes is more than the limit of {LIMITS['file_bytes']} bytes for a trace file")
        with open(path, "rb") as f:
            data = f.read(size + 1)  # the size stat gave (a read of the limit would allocate the limit)
        if len(data) > LIMITS["file_bytes"]:
            raise DeviceError(f"{path}: more than the limit of {LIMITS['file_bytes']} bytes for a trace file")
        return data
    except IsADirectoryError:
        raise DeviceError(f"{path}: is a folder, expected a trace file") from None
    except OSError as exc:
        raise DeviceError(f"{path}: cannot read ({exc.strerror})") from None


def _numeric_dtype(path: Path):
    import numpy as np

    def make(spec, *args):
        dt = np.dtype(spec)
        if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
            raise DeviceError(f"{path}: refused NumPy dtype {str(spec)!r}: only numeric arrays are read from a trace")
        return dt

    return make


def _reconstruct(path: Path):
    import numpy as np

    def make(subtype, shape, dtype):
        # NumPy pickles an array as an empty _reconstruct(ndarray, (0,), b'b') filled by
        # __setstate__ (which checks the data length against the shape): refuse any other
        # shape, or a crafted file would allocate it before any data is read.
        if subtype is not _NDARRAY or tuple(shape) != (0,):
            raise DeviceError(f"{path}: refused a NumPy array reconstruction with shape {shape!r}")
        return np.ndarray.__new__(np.ndarray, (0,), "b")

    return make


def _frombuffer(path: Path):
    import numpy as np

    def make(buf, dtype, shape, order="C"):
        # pickle protocol 5 writes an array as _frombuffer(bytes, dtype, shape, order): check that
        # the bytes present hold exactly the declared shape before building anything
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else None
        if (not isinstance(buf, (bytes, bytearray)) or not isinstance(dtype, np.dtype) or shape is None
                or not all(isinstance(n, int) and n >= 0 for n in shape) or order not in ("C", "F")
                or math.prod(shape) * dtype.itemsize != len(buf)):
            raise DeviceError(f"{path}: refused a NumPy array whose declared shape {shape!r} does not match its {len(buf) if isinstance(buf, (bytes, bytearray)) else '?'} bytes")
        return np.frombuffer(bytes(buf), dtype=dtype).reshape(shape, order=order).copy()

    return make


def _latin1(path: Path):
    def encode(text, encoding="utf-8"):
        if not isinstance(text, str) or encoding != "latin1" or len(text) > LIMITS["file_bytes"]:
            raise DeviceError(f"{path}: refused _codecs.encode({type(text).__name__}, {encoding!r})")
        return text.encode("latin1")

    return encode


_NDARRAY = ("numpy", "ndarray")  # what a pickle's reference to numpy.ndarray becomes: never callable


class _DataUnpickler(pickle._Unpickler):  # the pure-Python unpickler, on purpose
    """Constructs only plain data; any other global in the pickle is refused, unexecuted.

    Built on the pure-Python unpickler: its memo is a dict and it reads lengths from the
    bytes present, whereas the C unpickler sizes its memo table from the index a file
    declares (a crafted LONG_BINPUT of 1.5e9 makes it allocate gigabytes)."""

    def __init__(self, data: bytes, path: Path):
        super().__init__(io.BytesIO(data))
        self.path = path

    def find_class(self, module: str, name: str):  # pickle's hook
        import numpy as np

        if module in ("numpy.core.multiarray", "numpy._core.multiarray") and name == "_reconstruct":
            return _reconstruct(self.path)
        if module in ("numpy.core.multiarray", "numpy._core.multiarray") and name == "scalar":
            import importlib  # numpy 2 moved numpy.core to numpy._core

            return importlib.import_module("numpy._core.multiarray" if hasattr(np, "_core") else "numpy.core.multiarray").scalar
        if module in ("numpy.core.numeric", "numpy._core.numeric") and name == "_frombuffer":
            return _frombuffer(self.path)
        if module == "numpy" and name == "dtype":
            return _numeric_dtype(self.path)
        if module == "numpy" and name == "ndarray":
            return _NDARRAY  # a marker for _reconstruct: calling ndarray(shape) would allocate the shape
        if module == "_codecs" and name == "encode":
            return _latin1(self.path)
        raise DeviceError(f"{self.path}: refused to load {module}.{name} from a pickle: a trace holds only "
                          "dicts, lists, tuples, numbers, strings, booleans, None and numeric NumPy values")

    def persistent_load(self, pid):  # pickle's hook
        raise DeviceError(f"{self.path}: refused a persistent id in a pickle")


def _check_plain(obj: Any, path: Path, allow_bytes: bool = False) -> None:
    """Every value reachable from `obj` is one of the plain types (iterative: no recursion limit);
    `allow_bytes` admits bytes too (Python 2 pickles read with encoding="bytes")."""
    import numpy as np

    stack, seen = [obj], 0
    while stack:
        x = stack.pop()
        seen += 1
        if seen > LIMITS["intervals"] * 2:
            raise DeviceError(f"{path}: more than {LIMITS['intervals'] * 2} values in one trace")
        if x is None or isinstance(x, (bool, int, float, str)) or (allow_bytes and isinstance(x, bytes)):
            continue
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc" and x.dtype.fields is None:
            if isinstance(x, np.ndarray) and x.size > LIMITS["array_items"]:
                raise DeviceError(f"{path}: a NumPy array of {x.size} items is more than the limit of {LIMITS['array_items']}")
        else:
            raise DeviceError(f"{path}: refused a value of type {type(x).__module__}.{type(x).__qualname__} in a trace")


def load_pickle(path: Path, data: bytes | None = None, *, encoding: str = "ASCII") -> Any:
    """A pickle of plain data, read without running code (see `_DataUnpickler`).  With
    `encoding="bytes"` a Python 2 pickle's strings are read as bytes, as the official readers
    of such files do (e.g. CIFAR-10's batches), and bytes values are admitted."""
    path = Path(path)
    raw = read_bounded(path) if data is None else data
    try:
        unpickler = _DataUnpickler(raw, path)
        unpickler.encoding = encoding  # type: ignore[attr-defined]  # pickle._Unpickler's setting for Python 2 strings
        obj = unpickler.load()
    except DeviceError:
        raise
    except MemoryError:
        raise DeviceError(f"{path}: the pickle asks for more memory than is available") from None
    except Exception as exc:  # noqa: BLE001 - any decoding failure is the file's fault
        raise DeviceError(f"{path}: not a readable pickle ({type(exc).__name__}: {exc})") from None
    _check_plain(obj, path, allow_bytes=encoding == "bytes")
    return obj
