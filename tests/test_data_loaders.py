"""Readers for data in its published formats (MNIST/EMNIST IDX files, MedMNIST .npz,
CIFAR-10 python batches, CalCOFI's bottle.csv), tested on small files written here in those formats."""

import gzip
import pickle
import struct

import numpy as np
import pytest

from netemu.config import ConfigError
from netemu.data.clustered import load_images
from netemu.data.federated import FederatedDigits, make_federated_digits
from netemu.data.files import DataError, read_cifar, read_idx_folder
from netemu.engine.rng import Streams


def medmnist(path, rng, n=(60, 20, 30), classes=4, rgb=False):
    """A MedMNIST-format archive: {train,val,test}_{images,labels}, uint8 images, N×1 labels."""
    arrays = {}
    for split, count in zip(("train", "val", "test"), n, strict=True):
        shape = (count, 28, 28, 3) if rgb else (count, 28, 28)
        arrays[f"{split}_images"] = rng.integers(0, 256, shape, dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(count) % classes).reshape(-1, 1).astype(np.uint8)
    np.savez_compressed(path, **arrays)
    return arrays


def _py2_string(b: bytes) -> bytes:
    """A Python 2 str as cPickle protocol 2 writes it (SHORT_BINSTRING / BINSTRING)."""
    return (b"U" + bytes([len(b)]) if len(b) < 256 else b"T" + struct.pack("<i", len(b))) + b


def _py2_int(v: int) -> bytes:
    return b"K" + bytes([v]) if v < 256 else b"M" + struct.pack("<H", v) if v < 65536 else b"J" + struct.pack("<i", v)


def py2_cifar_batch(data: np.ndarray, labels: list, extra: bytes = b"") -> bytes:
    """The bytes of a CIFAR-10 python batch as Python 2's cPickle.dump(d, f, 2) wrote them:
    a dict with str keys; b"data" a uint8 array pickled through numpy's _reconstruct."""
    array = (b"cnumpy.core.multiarray\n_reconstruct\nq\x01cnumpy\nndarray\nq\x02" + _py2_int(0) + b"\x85"
             + _py2_string(b"b") + b"\x87R(" + _py2_int(1) + _py2_int(data.shape[0]) + _py2_int(data.shape[1])
             + b"\x86cnumpy\ndtype\n" + _py2_string(b"u1") + b"\x89\x88\x87R(" + _py2_int(3) + _py2_string(b"|")
             + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xff" + _py2_int(0) + b"tb\x89" + _py2_string(data.tobytes()) + b"tb")
    label_list = b"](" + b"".join(_py2_int(v) for v in labels) + b"e"
    return (b"\x80\x02}(" + _py2_string(b"batch_label") + _py2_string(b"training batch 1 of 5")
            + _py2_string(b"labels") + label_list + _py2_string(b"data") + array + extra
            + _py2_string(b"filenames") + b"](" + b"".join(_py2_string(b"img%d.png" % i) for i in range(len(labels)))
            + b"eu.")


def cifar(folder, rng, batches=2, n=30, test=20):
    folder.mkdir(exist_ok=True)
    written = {}
    for name, count in [(f"data_batch_{i}", n) for i in range(1, batches + 1)] + [("test_batch", test)]:
        data = rng.integers(0, 256, (count, 3072), dtype=np.uint8)
        labels = [int(v) for v in np.arange(count) % 10]
        (folder / name).write_bytes(py2_cifar_batch(data, labels))
        written[name] = (data, labels)
    return written


def test_the_py2_batch_writer_makes_what_the_official_reader_reads(tmp_path):
    data = np.arange(2 * 3072).astype(np.uint8).reshape(2, 3072)
    d = pickle.loads(py2_cifar_batch(data, [3, 7]), encoding="bytes")  # the CIFAR-10 page's unpickle()
    assert d[b"labels"] == [3, 7] and np.array_equal(d[b"data"], data) and d[b"data"].dtype == np.uint8


def test_medmnist_npz_feeds_digits_fl_with_its_own_classes(tmp_path):
    arrays = medmnist(tmp_path / "pathmnist.npz", np.random.default_rng(0), classes=4)
    (xtr, ytr), (xte, yte) = load_images(str(tmp_path / "pathmnist.npz"), 0.3, np.random.default_rng(0))
    assert xtr.shape == (60, 784) and np.array_equal(ytr, arrays["train_labels"][:, 0])
    assert np.array_equal(xte, arrays["test_images"].reshape(30, -1))  # val is not used
    params = FederatedDigits(source=str(tmp_path / "pathmnist.npz"), labels_per_client=2, samples=20, test_samples=10)
    task = make_federated_digits(params, ["a", "b", "c"], Streams(0))
    assert task.classes == 4 and task.dim == 784
    assert all(np.count_nonzero(p) == 2 for p in task.proportions.values())
    assert all(x.max() <= 1.0 for x, _ in task.parts.values())


def test_rgb_medmnist_images_flatten_to_rows_of_3_x_784(tmp_path):
    medmnist(tmp_path / "bloodmnist.npz", np.random.default_rng(1), classes=8, rgb=True)
    task = make_federated_digits(FederatedDigits(source=str(tmp_path / "bloodmnist.npz"), samples=10, test_samples=5),
                                 ["a", "b"], Streams(0))
    assert task.dim == 3 * 784 and task.classes == 8


def test_more_labels_per_client_than_the_data_has_classes_is_refused(tmp_path):
    medmnist(tmp_path / "m.npz", np.random.default_rng(0), classes=3)
    with pytest.raises(ConfigError, match="labels_per_client: between 1 and 3, the classes of .*m.npz"):
        make_federated_digits(FederatedDigits(source=str(tmp_path / "m.npz"), labels_per_client=4), ["a"], Streams(0))


def test_multi_label_medmnist_is_refused_with_the_key_named(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {f"{s}_images": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8) for s in ("train", "test")}
    arrays |= {f"{s}_labels": rng.integers(0, 2, (5, 14), dtype=np.uint8) for s in ("train", "test")}
    np.savez(tmp_path / "chestmnist.npz", **arrays)
    with pytest.raises(DataError, match=r"chestmnist.npz: train_labels has shape \(5, 14\).*multi-label"):
        load_images(str(tmp_path / "chestmnist.npz"), 0.3, np.random.default_rng(0))


def test_malformed_npz_files_are_refused_with_the_file_and_the_fault_named(tmp_path):
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="junk.npz: not a readable .npz archive"):
        load_images(str(tmp_path / "junk.npz"), 0.3, np.random.default_rng(0))
    np.savez(tmp_path / "obj.npz", train_images=np.array([{"a": 1}], dtype=object))
    with pytest.raises(DataError, match="obj.npz: train_images.npy has dtype object"):
        load_images(str(tmp_path / "obj.npz"), 0.3, np.random.default_rng(0))
    medmnist(tmp_path / "half.npz", np.random.default_rng(0))
    arrays = dict(np.load(tmp_path / "half.npz"))
    del arrays["test_labels"]
    np.savez(tmp_path / "half.npz", **arrays)
    with pytest.raises(DataError, match=r"half.npz: missing arrays \['test_labels'\]"):
        load_images(str(tmp_path / "half.npz"), 0.3, np.random.default_rng(0))


def test_npz_arrays_are_sized_from_their_headers_before_they_are_read(tmp_path, monkeypatch):
    from netemu.data import files

    medmnist(tmp_path / "m.npz", np.random.default_rng(0))
    monkeypatch.setitem(files.LIMITS, "array_items", 1000)
    with pytest.raises(DataError, match=r"m.npz: train_images.npy has shape \(60, 28, 28\), more than 1000 items"):
        load_images(str(tmp_path / "m.npz"), 0.3, np.random.default_rng(0))


def test_cifar10_python_batches_are_read_in_order_and_feed_digits_fl(tmp_path):
    written = cifar(tmp_path / "cifar-10-batches-py", np.random.default_rng(0))
    (xtr, ytr), (xte, yte) = read_cifar(tmp_path / "cifar-10-batches-py")
    assert np.array_equal(xtr, np.concatenate([written["data_batch_1"][0], written["data_batch_2"][0]]))
    assert ytr.tolist() == written["data_batch_1"][1] + written["data_batch_2"][1]
    assert np.array_equal(xte, written["test_batch"][0]) and yte.tolist() == written["test_batch"][1]
    task = make_federated_digits(FederatedDigits(source=str(tmp_path / "cifar-10-batches-py"), samples=10, test_samples=5),
                                 ["a", "b"], Streams(0))
    assert task.dim == 3072 and task.classes == 10 and task.global_test[0].max() <= 1.0


def test_a_cifar_batch_naming_code_is_refused_without_running_it(tmp_path):
    folder = tmp_path / "c"
    cifar(folder, np.random.default_rng(0), batches=1)
    evil = b"\x80\x02cposix\nsystem\n" + _py2_string(b"touch " + str(tmp_path / "pwned").encode()) + b"\x85R."
    (folder / "data_batch_1").write_bytes(evil)
    with pytest.raises(DataError, match="data_batch_1: refused to load posix.system"):
        read_cifar(folder)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("data, labels, fault", [
    (np.zeros((3, 1024), np.uint8), [0, 1, 2], r"b'data' is uint8 \(3, 1024\); expected uint8 N×3072"),
    (np.zeros((3, 3072), np.uint8), [0, 1], "b'labels' must be a list of 3 integers in 0..9"),
    (np.zeros((2, 3072), np.uint8), [0, 10], "b'labels' must be a list of 2 integers in 0..9"),
])
def test_malformed_cifar_batches_are_refused_with_the_file_named(tmp_path, data, labels, fault):
    cifar(tmp_path, np.random.default_rng(0), batches=1)
    (tmp_path / "test_batch").write_bytes(py2_cifar_batch(data, labels))
    with pytest.raises(DataError, match="test_batch: " + fault):
        read_cifar(tmp_path)


def test_a_truncated_cifar_batch_is_refused(tmp_path):
    cifar(tmp_path, np.random.default_rng(0), batches=1)
    raw = (tmp_path / "data_batch_1").read_bytes()
    (tmp_path / "data_batch_1").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataError, match="data_batch_1: not a readable pickle"):
        read_cifar(tmp_path)


# The first columns of CalCOFI's bottle.csv (Kaggle "sohier/calcofi"), Latin-1 encoded,
# and rows as they appear there: station ids with spaces, empty cells for unmeasured values.
BOTTLE_HEADER = ("Cst_Cnt,Btl_Cnt,Sta_ID,Depth_ID,Depthm,T_degC,Salnty,O2ml_L,STheta,O2Sat,Oxy_µmol/Kg,"
                 "BtlNum,RecInd,T_prec,T_qual,S_prec,S_qual")


def bottle_csv(path, rng, n=40, gaps=(3, 7)):
    lines = [BOTTLE_HEADER]
    for i in range(n):
        depth, t = 10.0 * i, 15.0 - 0.1 * i + rng.normal(0, 0.1)
        s = f"{33.4 + 0.01 * i:.3f}" if i not in gaps else ""
        lines.append(f"1,{i + 1},054.0 056.0,19-4903CR-HY-060-0930-05400560-{i:04d}A-3,{depth:g},{t:.2f},{s},"
                     f"{5.0 + 0.01 * i:.2f},25.649,,,,3,1,,2,")
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("latin-1"))


def calcofi(path, **overrides):
    from netemu.data.online import OnlineData

    kw = {"csv": str(path), "csv_columns": ("Depthm", "T_degC", "O2ml_L"), "csv_target": "Salnty",
          "iterations": 20, "test_samples": 8} | overrides
    return OnlineData(**kw)


def test_calcofi_bottle_csv_streams_named_columns_and_skips_rows_with_empty_cells(tmp_path):
    from netemu.data.online import make_online

    bottle_csv(tmp_path / "bottle.csv", np.random.default_rng(0))
    data = make_online(calcofi(tmp_path / "bottle.csv"), ["a", "b"], Streams(0))
    X, y = data.test
    assert X.shape == (8, 3) and np.allclose(y, [33.4 + 0.01 * i for i in range(32, 40)])
    assert sum(len(v) for v in data.outputs) == 40 - 2 - 8  # rows 3 and 7 have no salinity
    assert data.inputs[0][0].tolist()[0] == 0.0 and data.outputs[0][0] == pytest.approx(33.4)


def test_csv_rows_bounds_how_much_of_the_table_is_read(tmp_path):
    from netemu.data.online import read_columns

    bottle_csv(tmp_path / "bottle.csv", np.random.default_rng(0))
    table = read_columns(tmp_path / "bottle.csv", ("T_degC",), "Salnty", max_rows=5)
    assert table.shape == (5, 2) and table[-1, 1] == pytest.approx(33.45)  # rows 0,1,2,4,5


def test_an_unknown_column_is_named_with_the_header(tmp_path):
    from netemu.data.online import make_online

    bottle_csv(tmp_path / "bottle.csv", np.random.default_rng(0))
    with pytest.raises(DataError, match=r"bottle.csv: no column 'Salinity' in the header \(has Cst_Cnt, Btl_Cnt"):
        make_online(calcofi(tmp_path / "bottle.csv", csv_target="Salinity"), ["a"], Streams(0))


def test_a_non_number_in_a_chosen_column_is_refused_with_its_line(tmp_path):
    from netemu.data.online import make_online

    bottle_csv(tmp_path / "bottle.csv", np.random.default_rng(0))
    text = (tmp_path / "bottle.csv").read_bytes().decode("latin-1").split("\r\n")
    text[5] = text[5].replace(",5.04,", ",n/a,")  # line 6 of the file: the row i = 4
    (tmp_path / "bottle.csv").write_bytes("\r\n".join(text).encode("latin-1"))
    with pytest.raises(DataError, match=r"bottle.csv: line 6, column 'O2ml_L': 'n/a' is not a number"):
        make_online(calcofi(tmp_path / "bottle.csv"), ["a"], Streams(0))


@pytest.mark.parametrize("bad, field", [({"csv_target": ""}, "csv_target"), ({"csv": ""}, "csv_columns"),
                                        ({"csv_rows": -1}, "csv_rows"), ({"csv_columns": "T_degC"}, "csv_columns")])
def test_inconsistent_csv_options_are_refused(tmp_path, bad, field):
    with pytest.raises(ConfigError, match=field):
        calcofi(tmp_path / "bottle.csv", **bad)


def harbox(folder, rng, users=3, per_class=4):
    """large_scale_HARBox: user folders 1..U with <Class>_train.txt, 1000 numbers per sample."""
    from netemu.data.files import HARBOX_CLASSES

    written = []
    for u in range(1, users + 1):
        (folder / str(u)).mkdir(parents=True)
        for label, name in enumerate(HARBOX_CLASSES):
            if u == 2 and name == "Hop":
                continue  # a user need not have every activity
            samples = rng.normal(0, 5, (per_class, 100, 10))
            samples[:, :, 0] = np.arange(100) * 0.01  # the time column
            np.savetxt(folder / str(u) / f"{name}_train.txt", samples.reshape(per_class, 1000), fmt="%.6f")
            written.append((samples[:, :, 1:].reshape(per_class, 900).round(6), label))
    return written


def test_harbox_users_are_pooled_without_the_time_column_and_feed_digits_fl(tmp_path):
    written = harbox(tmp_path / "large_scale_HARBox", np.random.default_rng(0))
    (xtr, ytr), (xte, yte) = load_images(str(tmp_path / "large_scale_HARBox"), 0.25, np.random.default_rng(0))
    X, y = np.concatenate([xtr, xte]), np.concatenate([ytr, yte])
    assert X.shape == (14 * 4, 900) and len(xte) == 14
    expected = {tuple(row): label for rows, label in written for row in rows}
    assert all(expected[tuple(row)] == label for row, label in zip(X, y, strict=True))
    task = make_federated_digits(FederatedDigits(source=str(tmp_path / "large_scale_HARBox"), labels_per_client=2,
                                                 samples=10, test_samples=5), ["a", "b"], Streams(0))
    assert task.classes == 5 and task.dim == 900 and np.abs(task.parts["a"][0]).max() <= 1.0


def test_a_harbox_file_of_partial_samples_is_refused(tmp_path):
    harbox(tmp_path, np.random.default_rng(0), users=1)
    np.savetxt(tmp_path / "1" / "Walk_train.txt", np.zeros((2, 999)))
    with pytest.raises(DataError, match=r"1/Walk_train.txt: 1998 numbers is not a whole number of samples of 1000"):
        load_images(str(tmp_path), 0.3, np.random.default_rng(0))


def idx_bytes(array, magic=None, dims=None):
    """An IDX file as MNIST's are written: 0x00 0x00 0x08 ndim, big-endian uint32 dims, uint8 data."""
    array = np.asarray(array, dtype=np.uint8)
    head = bytes([0, 0, 8, array.ndim]) if magic is None else magic
    shape = array.shape if dims is None else dims
    return head + b"".join(int(n).to_bytes(4, "big") for n in shape) + array.tobytes()


def mnist_folder(folder, rng, n=(60, 20), side=28, prefix="", test="t10k", zipped=True, classes=10):
    """The four MNIST (or, with prefix "emnist-digits-" and test = "test", EMNIST) IDX files."""
    folder.mkdir(exist_ok=True)
    written = {}
    for split, count in zip(("train", test), n, strict=True):
        images = rng.integers(0, 256, (count, side, side), dtype=np.uint8)
        labels = (np.arange(count) % classes).astype(np.uint8)
        for kind, array, ndim in (("images", images, 3), ("labels", labels, 1)):
            name = f"{prefix}{split}-{kind}-idx{ndim}-ubyte" + (".gz" if zipped else "")
            (folder / name).write_bytes(gzip.compress(idx_bytes(array)) if zipped else idx_bytes(array))
            written[f"{split}-{kind}"] = array
    return written


def test_mnist_idx_files_feed_digits_fl_as_28x28_rows(tmp_path):
    written = mnist_folder(tmp_path / "mnist", np.random.default_rng(0))
    (xtr, ytr), (xte, yte) = read_idx_folder(tmp_path / "mnist")
    assert np.array_equal(xtr, written["train-images"].reshape(60, 784)) and np.array_equal(ytr, written["train-labels"])
    assert np.array_equal(xte, written["t10k-images"].reshape(20, 784)) and np.array_equal(yte, written["t10k-labels"])
    task = make_federated_digits(FederatedDigits(source=str(tmp_path / "mnist"), samples=20, test_samples=10),
                                 ["a", "b"], Streams(0))
    assert task.dim == 784 and task.classes == 10 and task.global_test[0].shape == (20, 784)


def test_plain_and_gzipped_idx_files_read_the_same(tmp_path):
    a = mnist_folder(tmp_path / "a", np.random.default_rng(1), zipped=True)
    mnist_folder(tmp_path / "b", np.random.default_rng(1), zipped=False)
    assert a and all(np.array_equal(u, v) for u, v in zip(sum(read_idx_folder(tmp_path / "a"), ()),
                                                          sum(read_idx_folder(tmp_path / "b"), ()), strict=True))


def test_emnist_images_are_transposed_to_mnists_orientation(tmp_path):
    """EMNIST stores each image column by column: the reader turns it back to rows."""
    rng = np.random.default_rng(2)
    written = mnist_folder(tmp_path, rng, side=6, prefix="emnist-digits-", test="test")
    (xtr, _), (xte, _) = read_idx_folder(tmp_path)
    assert np.array_equal(xtr.reshape(60, 6, 6), written["train-images"].transpose(0, 2, 1))
    assert np.array_equal(xte.reshape(20, 6, 6), written["test-images"].transpose(0, 2, 1))


def write(folder, name, raw):
    (folder / name).write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)


IMAGES = "train-images-idx3-ubyte"
LABELS = "train-labels-idx1-ubyte"


@pytest.mark.parametrize("name, raw, fault", [
    (IMAGES, idx_bytes(np.zeros((2, 3, 3)), magic=b"\x00\x00\x0d\x03"),
     "not an unsigned-byte IDX file of images, N × rows × columns: magic 0x00000d03, expected 0x00000803"),
    (IMAGES, idx_bytes(np.zeros(18)), ".*: magic 0x00000801, expected 0x00000803"),  # a labels file in the images' place
    (IMAGES, b"\x00\x00", ".*: magic 2 bytes, expected 0x00000803"),
    (IMAGES, b"\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00", r"dimensions: the header ends after 6 of 12 bytes"),
    (IMAGES, idx_bytes(np.zeros((0, 3, 3))), r"dimensions \(0, 3, 3\); expected every dimension >= 1"),
    (IMAGES, idx_bytes(np.zeros((2, 3, 3)))[:-1], r"size: dimensions \(2, 3, 3\) need 34 bytes, the file has 33"),
    (IMAGES, idx_bytes(np.zeros((2, 3, 3))) + b"\x00", r"size: dimensions \(2, 3, 3\) need 34 bytes, the file has 35"),
    (IMAGES + ".gz", idx_bytes(np.zeros((2, 3, 3)))[:-1], r"size: dimensions \(2, 3, 3\) need 18 bytes of data, the file holds 17"),
    (IMAGES + ".gz", idx_bytes(np.zeros((2, 3, 3))) + b"\x00", r"size: .* need 18 bytes of data, the file holds more than 18"),
])
def test_bad_idx_headers_are_refused_with_file_field_and_value(tmp_path, name, raw, fault):
    mnist_folder(tmp_path, np.random.default_rng(0), n=(2, 2), side=3, zipped=False)
    (tmp_path / IMAGES).unlink()
    write(tmp_path, name, raw)
    with pytest.raises(DataError, match=f"{name}: {fault}"):
        load_images(str(tmp_path), 0.3, np.random.default_rng(0))


def test_a_gz_file_that_is_not_gzip_is_refused(tmp_path):
    mnist_folder(tmp_path, np.random.default_rng(0), n=(2, 2), side=3)
    (tmp_path / (IMAGES + ".gz")).write_bytes(idx_bytes(np.zeros((2, 3, 3))))
    with pytest.raises(DataError, match=f"{IMAGES}.gz: not a readable gzipped IDX file"):
        read_idx_folder(tmp_path)


def test_idx_sizes_are_checked_from_the_header_before_the_data_is_read(tmp_path, monkeypatch):
    """A header claiming more than LIMITS is refused before its data is read or decompressed."""
    from netemu.data import files

    mnist_folder(tmp_path, np.random.default_rng(0), n=(60, 20))
    monkeypatch.setitem(files.LIMITS, "array_items", 1000)
    read, real = [], gzip.GzipFile.read

    def logged(self, size=-1):
        read.append(size)
        return real(self, size)

    monkeypatch.setattr(gzip.GzipFile, "read", logged)
    with pytest.raises(DataError, match=r"train-images-idx3-ubyte.gz: dimensions \(60, 28, 28\) make 47040 bytes, more than the limit of 1000"):
        read_idx_folder(tmp_path)
    assert read == [16]  # the header only


def test_a_gz_stream_longer_than_its_header_says_is_not_decompressed_past_it(tmp_path):
    """A small header over a large stream (a decompression bomb) is refused after header + 1 bytes."""
    mnist_folder(tmp_path, np.random.default_rng(0), n=(2, 2), side=3)
    bomb = idx_bytes(np.zeros((2, 3, 3))) + bytes(50_000_000)
    write(tmp_path, IMAGES + ".gz", bomb)
    with pytest.raises(DataError, match="holds more than 18"):
        read_idx_folder(tmp_path)


def test_image_and_label_counts_must_agree(tmp_path):
    mnist_folder(tmp_path, np.random.default_rng(0), n=(4, 2), side=3, zipped=False)
    write(tmp_path, LABELS, idx_bytes(np.zeros(3)))
    with pytest.raises(DataError, match=f"{LABELS}: 3 labels for the 4 images of {IMAGES}"):
        read_idx_folder(tmp_path)


def test_test_images_of_another_size_are_refused(tmp_path):
    mnist_folder(tmp_path, np.random.default_rng(0), n=(4, 2), side=3, zipped=False)
    write(tmp_path, "t10k-images-idx3-ubyte", idx_bytes(np.zeros((2, 4, 4))))
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte: images of 4 × 4 pixels, the training images are 3 × 3"):
        read_idx_folder(tmp_path)


def test_a_missing_idx_file_is_named_with_what_is_accepted(tmp_path):
    mnist_folder(tmp_path, np.random.default_rng(0), n=(2, 2), side=3, zipped=False)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match=r"no file t10k-labels-idx1-ubyte\[.gz\] \(accepted: the four MNIST IDX files"):
        read_idx_folder(tmp_path)
