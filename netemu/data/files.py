"""Readers for image sets a user already has, in their published formats (no downloads).

* `read_idx_folder`: MNIST's four IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte,
  t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte; each optionally gzipped, with a prefix
  such as EMNIST's emnist-digits- and "test" for "t10k").  Every header (magic, dimensions,
  the data size they imply against the file's length) is checked before the data is read.
  EMNIST stores each image transposed (column by column) relative to MNIST: files whose
  name starts with "emnist" are transposed back on reading, so both sets are upright
  row-major images and a model sees the same orientation from either.
* `read_npz`: a NumPy `.npz` archive, read without pickles and with every array's size
  checked from its `.npy` header before it is decompressed — MNIST-style
  (x_train, y_train, x_test, y_test) or MedMNIST (train_images, train_labels,
  val_images, val_labels, test_images, test_labels; images N×28×28 grayscale or
  N×28×28×3 RGB, labels N×1).
* `read_harbox`: the large_scale_HARBox folder (user folders 1, 2, …, each with
  Call/Hop/typing/Walk/Wave `_train.txt`): whitespace-separated numbers, 1000 per
  sample (100 time steps × [time, 9 IMU channels]); the time column is dropped, as in
  ClusterFL's reader, leaving 900 features; labels follow that class order.  The users are
  pooled (the natural per-user split is not kept) and `test_fraction` held out.
* `read_cifar`: a folder of CIFAR-10 "python version" batches (data_batch_1 … 5,
  test_batch): pickled dicts whose b"data" is uint8 N×3072 (1024 red, 1024 green,
  1024 blue values per image) and b"labels" a list of N ints in 0..9.  Pickles are read
  only by netemu.safepickle's restricted unpickler (plain data and numeric arrays).

Each returns ((X_train, y_train), (X_test, y_test)) with images as rows of floats and
integer labels; a malformed file is a `DataError` naming the file and what is wrong.
"""

from __future__ import annotations

import gzip
import math
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from netemu.errors import DeviceError, InputError

__all__ = [
    "DataError", "LIMITS", "MEDMNIST_KEYS", "MNIST_KEYS", "check_source", "cifar_folder", "feature_count", "harbox_folder",
    "images_from_npz", "read_cifar", "read_harbox", "read_idx", "read_idx_folder", "read_npz",
]

LIMITS = {
    "file_bytes": 4 << 30,          # a data file read: no more than 4 GiB on disk
    "array_items": 1 << 31,         # items of one array (TissueMNIST's training images are 1.3e8)
}

MNIST_KEYS = ("x_train", "y_train", "x_test", "y_test")
MEDMNIST_KEYS = ("train_images", "train_labels", "test_images", "test_labels")
CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST = "test_batch"
CIFAR_PIXELS = 3 * 32 * 32


class DataError(InputError):
    """A data file that cannot be read or is not in the format its kind expects."""


def _check_size(path: Path) -> None:
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror})") from None
    if size > LIMITS["file_bytes"]:
        raise DataError(f"{path}: {size} bytes is more than the limit of {LIMITS['file_bytes']} bytes for a data file")


DECODED_RATIO = 40  # a data file decodes to at most 40x its size on disk (MNIST's gzip: ~5x; savez_compressed images: ~2-10x)
DECODED_CAP = 2 << 30  # and to at most 2 GiB, unless NETEMU_DATA_BUDGET (bytes) says otherwise (docs/formats.md)
HELD_ITEM_BYTES = 8  # every value read is held as float64 (images) or int64 (labels): what the budget counts per item


def held_budget() -> int:
    """The bytes the arrays read from data files may take in memory: 2 GiB, or $NETEMU_DATA_BUDGET."""
    if (text := os.environ.get("NETEMU_DATA_BUDGET", "").strip()):
        try:
            return int(float(text))
        except ValueError:
            raise DataError(f"NETEMU_DATA_BUDGET = {text!r}: expected a number of bytes, e.g. 4e9") from None
    return DECODED_CAP


def decoded_budget(path: Path) -> int:
    """The bytes a compressed data file may decompress to: min(40 x its size, the held budget)."""
    return min(DECODED_RATIO * os.stat(path).st_size, held_budget())


def _over_budget(path: Path, what: str, *, decoded: int = 0, held: int = 0) -> None:
    """Refuse `path` when `what` decompresses to more than `decoded_budget` bytes, or would be
    held as more than `held_budget` bytes of arrays (items x 8: float64 or int64)."""
    budget = decoded_budget(path)
    if decoded > budget:
        raise DataError(f"{path}: {what} decodes to {decoded:,} bytes, more than the budget of {budget:,} bytes "
                        f"(min({DECODED_RATIO} x the file's size, {DECODED_CAP >> 30} GiB or NETEMU_DATA_BUDGET); see docs/formats.md)")
    budget = held_budget()
    if held > budget:
        raise DataError(f"{path}: {what} would be held as {held:,} bytes ({held // HELD_ITEM_BYTES:,} values x "
                        f"{HELD_ITEM_BYTES} bytes, float64 or int64), more than the budget of {budget:,} bytes "
                        f"({DECODED_CAP >> 30} GiB or NETEMU_DATA_BUDGET); see docs/formats.md")


def _npy_header(z: zipfile.ZipFile, member: str, path: Path) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of an .npy member, read from its header only."""
    with z.open(member) as f:
        try:
            major, _ = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
        except ValueError as exc:
            raise DataError(f"{path}: {member} is not a NumPy array ({exc})") from None
    return shape, dtype


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive, refusing object arrays and arrays above LIMITS."""
    path = Path(path)
    check_npz(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise DataError(f"{path}: not a readable .npz archive ({exc})") from None


def check_npz(path: Path) -> None:
    """An .npz archive's members and arrays checked from its directory and the .npy headers, nothing decompressed
    beyond them: numeric arrays only, within LIMITS and within the decoded budget as the arrays netemu will hold."""
    _check_size(path)
    try:
        with zipfile.ZipFile(path) as z:
            # the sizes the archive states, checked before anything is decompressed: the members'
            # file_size and their arrays' shape x itemsize, in all
            stated = sum(info.file_size for info in z.infolist())
            _over_budget(path, "the archive", decoded=stated)
            arrays = 0
            for member in z.namelist():
                shape, dtype = _npy_header(z, member, path)
                if dtype.kind not in "biuf":
                    raise DataError(f"{path}: {member} has dtype {dtype}; expected numeric image or label arrays")
                if math.prod(shape) > LIMITS["array_items"]:
                    raise DataError(f"{path}: {member} has shape {shape}, more than {LIMITS['array_items']} items")
                arrays += math.prod(shape)
                _over_budget(path, f"the arrays up to {member}", held=arrays * HELD_ITEM_BYTES)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{path}: not a readable .npz archive ({exc})") from None


def _labels(y: np.ndarray, path: Path, key: str) -> np.ndarray:
    """Integer class labels from N or N×1 arrays (MedMNIST stores N×1)."""
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise DataError(f"{path}: {key} has shape {y.shape}; expected one class label per image "
                        "(N or N×1 — multi-label sets such as ChestMNIST are not single-label classification)")
    if y.size and (y.min() < 0 or np.any(y != np.round(y))):
        raise DataError(f"{path}: {key} holds labels that are not non-negative integers")
    return y.astype(int)


def images_from_npz(path: Path) -> tuple[tuple, tuple]:
    """MNIST-style or MedMNIST .npz → ((X_train, y_train), (X_test, y_test)); MedMNIST's
    validation split is not used (the papers train on train and report on test)."""
    arrays = read_npz(path)
    keys = MNIST_KEYS if set(MNIST_KEYS) & set(arrays) or not set(MEDMNIST_KEYS) & set(arrays) else MEDMNIST_KEYS
    missing = set(keys) - set(arrays)
    if missing:
        raise DataError(f"{path}: missing arrays {sorted(missing)} (has {sorted(arrays)}; "
                        f"accepted: {', '.join(MNIST_KEYS)} or MedMNIST's {', '.join(MEDMNIST_KEYS)})")
    xtr, ytr, xte, yte = (arrays[k] for k in keys)
    out = []
    for x, y, xk, yk in ((xtr, ytr, keys[0], keys[1]), (xte, yte, keys[2], keys[3])):
        if x.ndim not in (2, 3, 4) or (x.ndim == 4 and x.shape[3] not in (1, 3)):
            raise DataError(f"{path}: {xk} has shape {x.shape}; expected N×H×W (grayscale), N×H×W×3 (RGB) or N×pixels")
        labels = _labels(y, path, yk)
        if x.shape[0] != labels.size:
            raise DataError(f"{path}: {x.shape[0]} images in {xk} but {labels.size} labels in {yk}")
        out.append((x.reshape(len(x), -1).astype(float), labels))
    return out[0], out[1]


def cifar_folder(path: Path) -> bool:
    """Whether `path` is a folder holding CIFAR-10 python batches."""
    return path.is_dir() and (path / CIFAR_TEST).is_file()


def _load_py2_pickle(path: Path):
    """A pickle of plain data through netemu.safepickle's restricted unpickler, with Python 2
    strings read as bytes (CIFAR-10's batches were written by Python 2's cPickle; the
    official reader uses pickle.load(f, encoding="bytes"))."""
    from netemu.safepickle import load_pickle

    try:
        return load_pickle(path, encoding="bytes")
    except DeviceError as exc:
        raise DataError(str(exc)) from None


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    _check_size(path)
    batch = _load_py2_pickle(path)
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        keys = sorted(map(repr, batch)) if isinstance(batch, dict) else type(batch).__name__
        raise DataError(f"{path}: expected a CIFAR-10 batch, a dict with b'data' and b'labels' (has {keys})")
    data, labels = batch[b"data"], batch[b"labels"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != CIFAR_PIXELS:
        what = f"{data.dtype} {data.shape}" if isinstance(data, np.ndarray) else type(data).__name__
        raise DataError(f"{path}: b'data' is {what}; expected uint8 N×{CIFAR_PIXELS}")
    if not isinstance(labels, (list, np.ndarray)) or len(labels) != data.shape[0] or not all(
            isinstance(v, (int, np.integer)) and 0 <= v <= 9 for v in labels):
        raise DataError(f"{path}: b'labels' must be a list of {data.shape[0]} integers in 0..9")
    return data.astype(float), np.asarray(labels, dtype=int)


def read_cifar(folder: Path) -> tuple[tuple, tuple]:
    """CIFAR-10 python batches → ((X_train, y_train), (X_test, y_test)); the training
    batches present among data_batch_1..5 are concatenated (at least one is required)."""
    folder = Path(folder)
    train = [folder / name for name in CIFAR_TRAIN if (folder / name).is_file()]
    if not train:
        raise DataError(f"{folder}: no CIFAR-10 training batch (data_batch_1 … data_batch_5)")
    parts = [_cifar_batch(p) for p in train]
    test = _cifar_batch(folder / CIFAR_TEST)
    return (np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])), test


IDX_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_IDX_KIND = {3: "images, N × rows × columns", 1: "labels, N"}


def read_idx(path: Path, ndim: int) -> np.ndarray:
    """An unsigned-byte IDX array of `ndim` dimensions (3: images, 1: labels), gzipped if the
    name ends in .gz.  Header: magic 0x000008 followed by the dimension count, then one
    big-endian uint32 per dimension; the data is their product of bytes.  The header is
    checked before anything is allocated; a .gz file is decompressed only up to the size
    its header states (plus one byte, to notice trailing data)."""
    path = Path(path)
    zipped = path.suffix == ".gz"
    try:
        with (gzip.open(path, "rb") if zipped else open(path, "rb")) as f:
            head, dims, count = _idx_header(f, path, ndim)
            data = f.read(count + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: not a readable {'gzipped ' if zipped else ''}IDX file ({exc})") from None
    if len(data) != count:
        held = f"more than {count}" if len(data) > count else str(len(data))
        raise DataError(f"{path}: size: dimensions {dims} need {count} bytes of data, the file holds {held}")
    return np.frombuffer(data, dtype=np.uint8, count=count).reshape(dims)


def check_idx(path: Path, ndim: int) -> int:
    """An IDX file's header checked as `read_idx` checks it (a gzipped one decompressed only that
    far); the number of values it holds."""
    zipped = path.suffix == ".gz"
    try:
        with (gzip.open(path, "rb") if zipped else open(path, "rb")) as f:
            return _idx_header(f, path, ndim)[2]
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: not a readable {'gzipped ' if zipped else ''}IDX file ({exc})") from None


def _idx_header(f, path: Path, ndim: int) -> tuple[bytes, tuple[int, ...], int]:
    """(header bytes, dimensions, data bytes) of the IDX file open as `f`, checked: magic, dimensions,
    LIMITS, the decoded budget (every item held as float64 or int64) and, uncompressed, the file's length."""
    _check_size(path)
    expected = 0x0800 | ndim
    zipped = path.suffix == ".gz"
    head = f.read(4 + 4 * ndim)
    magic = int.from_bytes(head[:4], "big") if len(head) >= 4 else None
    if magic != expected:
        shown = f"0x{magic:08x}" if magic is not None else f"{len(head)} bytes"
        raise DataError(f"{path}: not an unsigned-byte IDX file of {_IDX_KIND[ndim]}: magic {shown}, "
                        f"expected 0x{expected:08x}")
    if len(head) < 4 + 4 * ndim:
        raise DataError(f"{path}: dimensions: the header ends after {len(head) - 4} of {4 * ndim} bytes")
    dims = tuple(int.from_bytes(head[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    if min(dims) < 1:
        raise DataError(f"{path}: dimensions {dims}; expected every dimension >= 1")
    count = math.prod(dims)
    if count > LIMITS["array_items"]:
        raise DataError(f"{path}: dimensions {dims} make {count} bytes, more than the limit of {LIMITS['array_items']}")
    if not zipped and os.stat(path).st_size != len(head) + count:
        raise DataError(f"{path}: size: dimensions {dims} need {len(head) + count} bytes, "
                        f"the file has {os.stat(path).st_size}")
    _over_budget(path, f"an IDX array of dimensions {dims}", decoded=count if zipped else 0, held=count * HELD_ITEM_BYTES)
    return head, dims, count


def _find_idx(folder: Path, stem: str) -> Path:
    """The IDX file `stem` in `folder`, gzipped or not, with "-idx" or ".idx", and with any
    prefix; "t10k-" may also be "test-" (EMNIST: emnist-digits-test-images-idx3-ubyte.gz)."""
    stems = {stem, stem.replace("t10k-", "test-")}
    names = tuple(sorted(stems | {n.replace("-idx", ".idx") for n in stems}))
    for name in names:
        for candidate in (folder / name, folder / (name + ".gz")):
            if candidate.is_file():
                return candidate
    found = sorted({p for name in names for p in folder.glob(f"*{name}*") if p.is_file()})
    if len(found) == 1:
        return found[0]
    what = f"several files match *{stem}*: {', '.join(p.name for p in found)}" if found else f"no file {stem}[.gz]"
    raise DataError(f"{folder}: {what} (accepted: the four MNIST IDX files {', '.join(IDX_STEMS)}, "
                    "optionally gzipped and with a prefix such as emnist-digits-)")


def check_source(path: Path) -> None:
    """A data `source` (not "sklearn") checked from its headers before anything is decoded: a
    regular .npz file (`check_npz`), a folder of CIFAR-10 batches or HARBOX users, or a folder
    of the four MNIST IDX files whose values, held as float64 or int64, fit the budget in all.
    A FIFO, a device or a socket is never opened."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise DataError(f"{path}: {exc.strerror}") from None
    if stat.S_ISREG(mode) and path.suffix == ".npz":
        check_npz(path)
    elif stat.S_ISDIR(mode):
        if cifar_folder(path) or harbox_folder(path):
            return
        values = sum(check_idx(_find_idx(path, stem), 3 if "images" in stem else 1) for stem in IDX_STEMS)
        _over_budget(path, "the four IDX files", held=values * HELD_ITEM_BYTES)
    else:
        what = "a file that is not a .npz archive" if stat.S_ISREG(mode) else "not a regular file (a device, FIFO or socket)"
        raise DataError(f"{path}: {what}")


def read_idx_folder(folder: Path) -> tuple[tuple, tuple]:
    """MNIST/EMNIST IDX files → ((X_train, y_train), (X_test, y_test)), images as rows of
    rows·columns floats (EMNIST's transposed to MNIST's orientation, module docstring)."""
    folder = Path(folder)
    out: list[tuple[np.ndarray, np.ndarray, tuple]] = []
    for images_stem, labels_stem in (IDX_STEMS[:2], IDX_STEMS[2:]):
        images_path = _find_idx(folder, images_stem)
        images = read_idx(images_path, 3)
        labels_path = _find_idx(folder, labels_stem)
        labels = read_idx(labels_path, 1)
        if images.shape[0] != labels.shape[0]:
            raise DataError(f"{labels_path}: {labels.shape[0]} labels for the {images.shape[0]} images of {images_path.name}")
        if images_path.name.lower().startswith("emnist"):
            images = images.transpose(0, 2, 1)
        if out and images.shape[1:] != out[0][2]:
            raise DataError(f"{images_path}: images of {images.shape[1]} × {images.shape[2]} pixels, "
                            f"the training images are {out[0][2][0]} × {out[0][2][1]}")
        out.append((images.reshape(len(images), -1).astype(float), labels.astype(int), images.shape[1:]))
    return out[0][:2], out[1][:2]


HARBOX_CLASSES = ("Call", "Hop", "typing", "Walk", "Wave")  # ClusterFL's class order and file names
HARBOX_STEPS, HARBOX_COLUMNS = 100, 10  # per sample: 100 time steps of [time, acc xyz, gyro xyz, mag xyz]


def harbox_folder(path: Path) -> bool:
    """Whether `path` looks like large_scale_HARBox: a folder "1" with a *_train.txt file."""
    return (path / "1").is_dir() and any((path / "1" / f"{c}_train.txt").is_file() for c in HARBOX_CLASSES)


def read_harbox(folder: Path, test_fraction: float, rng: np.random.Generator) -> tuple[tuple, tuple]:
    """All users' samples pooled, 900 features each; a `test_fraction` share drawn by `rng` is held out."""
    folder = Path(folder)
    users = sorted((p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
    X, y = [], []
    for user in users:
        for label, name in enumerate(HARBOX_CLASSES):
            path = user / f"{name}_train.txt"
            if not path.is_file():
                continue
            _check_size(path)
            try:
                values = np.loadtxt(path, dtype=float, ndmin=1).ravel()
            except ValueError as exc:
                raise DataError(f"{path}: expected whitespace-separated numbers ({exc})") from None
            per = HARBOX_STEPS * HARBOX_COLUMNS
            if values.size % per:
                raise DataError(f"{path}: {values.size} numbers is not a whole number of samples of {per} "
                                f"({HARBOX_STEPS} steps × {HARBOX_COLUMNS} columns)")
            samples = values.reshape(-1, HARBOX_STEPS, HARBOX_COLUMNS)[:, :, 1:].reshape(-1, per - HARBOX_STEPS)
            X.append(samples)
            y.append(np.full(len(samples), label))
    if not X:
        raise DataError(f"{folder}: no user folder holds a {'/'.join(HARBOX_CLASSES)}_train.txt file")
    Xa, ya = np.concatenate(X), np.concatenate(y)
    order = rng.permutation(ya.size)
    cut = int(round(ya.size * (1 - test_fraction)))
    return (Xa[order[:cut]], ya[order[:cut]]), (Xa[order[cut:]], ya[order[cut:]])


def feature_count(path: Path) -> int | None:
    """Features per sample of the image data at `path`, from headers only (nothing is
    decompressed beyond them): an .npz's training images, CIFAR-10 (3072), HARBOX (900),
    MNIST IDX images (rows × columns); None for anything else (its reader reports it)."""
    path = Path(path)
    if path.suffix == ".npz" and path.is_file():
        try:
            with zipfile.ZipFile(path) as z:
                names = {m.removesuffix(".npy"): m for m in z.namelist()}
                key = next((k for k in ("x_train", "train_images") if k in names), None)
                return None if key is None else math.prod(_npy_header(z, names[key], path)[0][1:])
        except (zipfile.BadZipFile, OSError, DataError):
            return None
    if cifar_folder(path):
        return CIFAR_PIXELS
    if harbox_folder(path):
        return HARBOX_STEPS * (HARBOX_COLUMNS - 1)
    if path.is_dir():
        try:
            images = _find_idx(path, IDX_STEMS[0])
            with (gzip.open(images, "rb") if images.suffix == ".gz" else open(images, "rb")) as f:
                head = f.read(16)
        except (DataError, OSError, EOFError, zlib.error):
            return None
        if len(head) == 16 and int.from_bytes(head[:4], "big") == 0x0803:
            return int.from_bytes(head[8:12], "big") * int.from_bytes(head[12:16], "big")
    return None
