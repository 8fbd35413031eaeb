"""netemu log export: the message log as tables with a fixed schema, read back by pandas,
polars and duckdb; metrics.csv as TensorBoard event files."""

import math
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from netemu.cli import main
from netemu.errors import LogError
from netemu.report.export import TABLES, columns, export_log, export_tensorboard, table_of
from netemu.report.tfevents import crc32c, read_events

ROOT = Path(__file__).parent.parent

# One record of every event family, with the fields that apply to some records only (a
# duplicate, a routed message's hops/attempts/hop/last, an in_flight's sent_at), a field
# the schema does not name (`note`) and an event it does not know (`flower`).
SYNTHETIC = [
    {"t": 0, "event": "send", "algorithm": "fedavg", "run": 0, "id": 0, "src": "server", "dst": "client-1", "kind": "model",
     "round": 0, "bytes": 120, "link": "downlink", "payload_bytes": 90},
    {"t": 0.0, "event": "send", "algorithm": "fedavg", "run": 0, "id": 1, "src": "client-1", "dst": "server", "kind": "update",
     "round": 0, "bytes": 2**40, "link": "uplink", "payload_bytes": 2**40 - 30, "hops": 2},
    {"t": 0.5, "event": "deliver", "algorithm": "fedavg", "run": 0, "id": 0, "src": "server", "dst": "client-1", "kind": "model",
     "round": 0, "bytes": 120, "link": "downlink", "delay": 0.5},
    {"t": 0.5, "event": "deliver", "algorithm": "fedavg", "run": 0, "id": 0, "src": "server", "dst": "client-1", "kind": "model",
     "round": 0, "bytes": 120, "link": "downlink", "delay": 0.5, "duplicate": True},
    {"t": 0.75, "event": "compute", "algorithm": "fedavg", "run": 0, "actor": "client-1", "round": 0, "work": 50, "duration": 0.25},
    {"t": 1.0, "event": "drop", "algorithm": "fedavg", "run": 0, "id": 1, "src": "client-1", "dst": "server", "kind": "update",
     "round": 0, "bytes": 2**40, "link": "uplink", "reason": "timeout", "hops": 2, "attempts": 3, "hop": "client-1->ap", "last": "loss"},
    {"t": 1.0, "event": "load", "algorithm": "fedavg", "run": 0, "src": "ap", "dst": "server", "link": "backhaul", "bps": 5e5, "capacity": 1e6},
    {"t": 1.5, "event": "outage", "algorithm": "fedavg", "run": 0, "src": "client-1", "dst": "server", "link": "uplink", "until": 3.0},
    {"t": 2.0, "event": "crash", "algorithm": "fedavg", "run": 0, "actor": "client-1"},
    {"t": 2.5, "event": "recover", "algorithm": "fedavg", "run": 0, "actor": "client-1", "note": "back"},
    {"t": 3.0, "event": "metric", "algorithm": "fedavg", "run": 0, "actor": "server", "round": 0, "metric": "mse", "value": 1.25},
    {"t": 3.0, "event": "flower", "algorithm": "fedavg", "run": 0, "id": 2, "message_type": "train", "error": False},
    {"t": 4.0, "event": "in_flight", "algorithm": "fedavg", "run": 0, "id": 3, "src": "server", "dst": "client-1", "kind": "model",
     "round": 1, "bytes": 120, "link": "downlink", "sent_at": 3.5},
]

SCENARIO = """
[run]
name = "tiny"
seed = 4
rounds = 4
runs = 2
[topology]
kind = "star"
clients = 5
[links.uplink]
latency = { model = "exponential", mean = 0.2 }
loss = { model = "bernoulli", p = 0.2 }
[nodes]
speed = 1000.0
[data]
kind = "linear"
dim = 3
[[algorithm]]
name = "fedavg"
round_time = 2.0
"""


def write_log(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def log_records(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A small star run (two Monte Carlo runs) and a routed run over the reliable transport."""
    base = tmp_path_factory.mktemp("export")
    (base / "tiny.toml").write_text(SCENARIO)
    assert main(["run", str(base / "tiny.toml"), "--out", str(base / "star"), "--quiet"]) == 0
    assert main(["run", str(ROOT / "scenarios" / "lossy_reliable.toml"), "--out", str(base / "reliable"), "--quiet",
                 "--set", "run.rounds=4", "--set", "topology.clients=6", "--set", "network.connect_timeout=0.3"]) == 0
    return base


@pytest.fixture
def synthetic(tmp_path):
    return write_log(tmp_path / "messages.jsonl", SYNTHETIC)


# ------------------------------------------------------------------ schema and rows, without pyarrow


def test_every_record_is_one_row_of_its_events_table(folders, tmp_path):
    written = export_log(folders / "star", tmp_path, "csv")
    want = Counter(table_of(r["event"]) for r in log_records(folders / "star" / "messages.jsonl"))
    assert {w.table: w.rows for w in written} == {t: want.get(t, 0) for t in TABLES}
    for w in written:
        assert len(w.path.read_text().splitlines()) == w.rows + 1  # the header


def test_every_table_is_written_with_its_header_even_when_empty(synthetic, tmp_path):
    export_log(synthetic, tmp_path, "csv")
    for table, cols in TABLES.items():
        assert (tmp_path / f"{table}.csv").read_text().splitlines()[0] == ",".join(c.name for c in cols)


def test_a_field_the_schema_does_not_name_is_kept_in_extra(synthetic, tmp_path):
    pa = pytest.importorskip("pyarrow.parquet")
    export_log(synthetic, tmp_path, "parquet")
    (recover,) = [r for r in pa.read_table(tmp_path / "lifecycle.parquet").to_pylist() if r["event"] == "recover"]
    assert orjson.loads(recover["extra"]) == {"note": "back"}
    (flower,) = pa.read_table(tmp_path / "other.parquet").to_pylist()
    assert flower["event"] == "flower" and orjson.loads(flower["extra"]) == {"id": 2, "message_type": "train", "error": False}


def test_a_field_of_the_wrong_type_is_refused_naming_the_line_and_no_table_is_left(tmp_path):
    bad = [dict(SYNTHETIC[0]), {**SYNTHETIC[2], "id": 0.0}]
    path = write_log(tmp_path / "messages.jsonl", bad)
    with pytest.raises(LogError, match=r"messages.jsonl:2: a 'deliver' record whose 'id' is 0.0, expected int64"):
        export_log(path, tmp_path / "out", "csv")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_record_without_a_field_its_event_needs_is_refused(tmp_path):
    path = write_log(tmp_path / "messages.jsonl", [{k: v for k, v in SYNTHETIC[0].items() if k != "round"}])
    with pytest.raises(LogError, match=r":1: a 'send' record with no field 'round'"):
        export_log(path, tmp_path / "out", "csv")


def test_the_command_prints_each_file_with_its_rows(synthetic, tmp_path, capsys):
    assert main(["log", "export", str(synthetic), "--format", "csv", "--out", str(tmp_path / "x")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{tmp_path / 'x' / 'messages.csv'}  6 rows" and len(lines) == len(TABLES)


# ------------------------------------------------------------------ Parquet and Arrow


def test_without_pyarrow_parquet_and_arrow_are_refused_in_one_line_naming_the_extra(synthetic, tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    for fmt in ("parquet", "arrow"):
        assert main(["log", "export", str(synthetic), "--format", fmt, "--out", str(tmp_path / fmt)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pip install 'netemu[export]'" in err
    assert main(["log", "export", str(synthetic), "--format", "csv", "--out", str(tmp_path / "csv")]) == 0  # csv needs no pyarrow


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_every_value_of_the_log_is_in_its_row_with_the_documented_type(synthetic, tmp_path, fmt):
    pa = pytest.importorskip("pyarrow")
    export_log(synthetic, tmp_path, fmt)
    types = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string(), "bool": pa.bool_()}
    rows: dict[str, list] = {}
    for table in TABLES:
        t = read_arrow(tmp_path / f"{table}.{fmt}")
        assert [(f.name, f.type) for f in t.schema] == [(c, types[k]) for c, k in columns(table).items()]
        rows[table] = t.to_pylist()
    seen = Counter()
    for r in SYNTHETIC:
        table = table_of(r["event"])
        row = rows[table][seen[table]]
        seen[table] += 1
        for k, v in r.items():
            if k in row:
                assert row[k] == v and type(row[k]) is (float if columns(table)[k] == "float64" else type(v)), (k, row[k], v)
        assert all(row[k] is None for k in row if k not in r and k not in ("duplicate", "extra"))
    assert [r["duplicate"] for r in rows["messages"]] == [None, None, False, True, False, None]  # false on arrivals


def test_a_routed_reliable_runs_hops_attempts_and_hop_survive(folders, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    export_log(folders / "reliable", tmp_path, "parquet")
    rows = pq.read_table(tmp_path / "messages.parquet").to_pylist()
    logged = [r for r in log_records(folders / "reliable" / "messages.jsonl") if table_of(r["event"]) == "messages"]
    assert len(rows) == len(logged)
    keys = ("event", "id", "hops", "attempts", "hop", "last", "reason")
    assert [tuple(row[k] for k in keys) for row in rows] == [tuple(r.get(k) for k in keys) for r in logged]
    assert any(row["attempts"] for row in rows) and any(row["hop"] for row in rows)  # the fields are there to survive


def test_parquet_row_groups_are_the_batches_in_log_order(synthetic, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    export_log(synthetic, tmp_path, "parquet", batch_rows=4)
    f = pq.ParquetFile(tmp_path / "messages.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] == [4, 2]
    assert f.read().column("t").to_pylist() == [r["t"] for r in SYNTHETIC if table_of(r["event"]) == "messages"]


def read_arrow(path: Path):
    import pyarrow.ipc
    import pyarrow.parquet

    if path.suffix == ".parquet":
        return pyarrow.parquet.read_table(path)
    with pyarrow.ipc.open_file(path) as f:
        return f.read_all()


# ------------------------------------------------------------------ other readers


PANDAS = {"int64": "Int64", "float64": "Float64", "string": "string", "bool": "boolean"}
DUCKDB = {"int64": "BIGINT", "float64": "DOUBLE", "string": "VARCHAR", "bool": "BOOLEAN"}


@pytest.fixture(scope="module")
def exported(folders, tmp_path_factory):
    """The star run exported in every format, and the number of message records of its log."""
    out = tmp_path_factory.mktemp("tables")
    for fmt in ("csv", *(("parquet", "arrow") if has("pyarrow") else ())):
        export_log(folders / "star", out, fmt)
    n = sum(table_of(r["event"]) == "messages" for r in log_records(folders / "star" / "messages.jsonl"))
    return out, n


def has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv"])
def test_pandas_reads_every_column_with_its_type(exported, fmt):
    pd = pytest.importorskip("pandas")
    out, n = exported
    path = out / f"messages.{fmt}"
    if fmt == "csv":
        df = pd.read_csv(path, dtype={k: PANDAS[v] for k, v in columns("messages").items()}, keep_default_na=False, na_values=[""])
    else:
        pytest.importorskip("pyarrow")
        read = pd.read_parquet if fmt == "parquet" else pd.read_feather
        df = read(path, dtype_backend="numpy_nullable")
    assert len(df) == n
    assert {k: str(v) for k, v in df.dtypes.items()} == {k: PANDAS[v] for k, v in columns("messages").items()}


def test_pandas_reads_the_ids_of_a_csv_as_integers_without_being_told(exported):
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(exported[0] / "messages.csv")
    assert str(df["id"].dtype) == str(df["round"].dtype) == str(df["bytes"].dtype) == "int64"


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv"])
def test_polars_reads_every_column_with_its_type(exported, fmt):
    pl = pytest.importorskip("polars")
    out, n = exported
    types = {"int64": pl.Int64, "float64": pl.Float64, "string": pl.String, "bool": pl.Boolean}
    want = {k: types[v] for k, v in columns("messages").items()}
    if fmt == "csv":
        df = pl.read_csv(out / "messages.csv", schema=want)
    else:
        pytest.importorskip("pyarrow")
        df = (pl.read_parquet if fmt == "parquet" else pl.read_ipc)(out / f"messages.{fmt}")
    assert df.height == n and dict(df.schema) == want
    assert df.filter(pl.col("event") == "drop")["reason"].null_count() == 0  # a field first seen late is kept


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv"])
def test_duckdb_reads_every_column_with_its_type(exported, fmt):
    duckdb = pytest.importorskip("duckdb")
    out, n = exported
    path = out / f"messages.{fmt}"
    con = duckdb.connect()
    if fmt == "parquet":
        rel = con.sql(f"SELECT * FROM read_parquet('{path}')")
    elif fmt == "csv":
        cols = ", ".join(f"'{k}': '{DUCKDB[v]}'" for k, v in columns("messages").items())
        rel = con.sql(f"SELECT * FROM read_csv('{path}', header = true, columns = {{{cols}}})")
    else:  # duckdb reads Arrow IPC files through pyarrow (its own reader is an extension it would download)
        table = read_arrow(path)
        rel = con.from_arrow(table)
    assert dict(zip(rel.columns, map(str, rel.types))) == {k: DUCKDB[v] for k, v in columns("messages").items()}
    assert len(rel.fetchall()) == n


# ------------------------------------------------------------------ TensorBoard


def test_crc32c_is_the_castagnoli_checksum():
    assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C


def test_tensorboard_files_hold_every_metric_row_per_algorithm_and_run(folders, tmp_path):
    written = export_tensorboard(folders / "star", tmp_path)
    assert [w.table for w in written] == ["fedavg/run-0", "fedavg/run-1"]
    rows = [line.split(",") for line in (folders / "star" / "metrics.csv").read_text().splitlines()[1:]]
    for w in written:
        events = list(read_events(w.path))
        assert events[0] == {"wall_time": 0.0, "step": 0, "file_version": "brain.Event:2"}
        run = w.table.split("-")[-1]
        want = [(m, int(r), float(t), float(v)) for a, rr, r, t, m, v in rows if rr == run]
        assert [(e["tag"], e["step"], e["wall_time"]) for e in events[1:]] == [w_[:3] for w_ in want]
        assert all(math.isclose(e["value"], w_[3], rel_tol=1e-7) for e, w_ in zip(events[1:], want))  # float32 in the file


def test_tensorboards_own_reader_reads_the_files(folders, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert main(["log", "export", str(folders / "star"), "--format", "tensorboard", "--out", str(tmp_path)]) == 0
    acc = EventAccumulator(str(tmp_path / "fedavg" / "run-1"))
    acc.Reload()
    rows = [line.split(",") for line in (folders / "star" / "metrics.csv").read_text().splitlines()[1:]]
    mse = [(int(r), float(t), float(v)) for a, run, r, t, m, v in rows if run == "1" and m == "mse"]
    got = acc.Scalars("mse")
    assert [(s.step, s.wall_time) for s in got] == [x[:2] for x in mse]
    assert [s.value for s in got] == pytest.approx([x[2] for x in mse], rel=1e-7)
