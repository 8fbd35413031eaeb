"""Inputs that would expand without bound are counted before anything is built (issue
"Hostile inputs, second round", B): node ranges are matched, not expanded; a sweep grid is
counted under a ceiling; a GraphML file's nodes are counted while it streams."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from netemu.scenario import ScenarioError, load_scenario
from netemu.scenario.crosscheck import match_nodes
from netemu.run.sweep import POINTS_CEILING, SweepError, parse_grid

STAR = """
[run]
rounds = 3
[topology]
kind = "star"
clients = 40
[data]
kind = "linear"
[[algorithm]]
name = "fedavg"
"""


def test_a_node_range_is_matched_not_expanded():
    names = [f"client-{i}" for i in range(50)]
    tracemalloc.start()
    try:
        got = match_nodes("client-{0..2000000}", names)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == names
    assert peak < 1_000_000  # expanded, two million names would be ~150 MB


@pytest.mark.parametrize(("pattern", "expected"), [
    ("client-{5..7}", ["client-5", "client-6", "client-7"]),
    ("client-{1..1}*", ["client-1", "client-10", "client-11"]),
    ("client-{0..99999999999}", [f"client-{i}" for i in range(12)]),
    ("client-{3..4}", ["client-3", "client-4"]),
])
def test_a_node_range_matches_what_its_expansion_would(pattern, expected):
    names = [f"client-{i}" for i in range(12)] + ["client-007", "server"]
    assert match_nodes(pattern, names) == expected


def test_a_group_of_a_hundred_billion_members_validates_at_once(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(STAR + '[[nodes.group]]\nname = "all"\nmembers = ["client-{0..99999999999}"]\nspeed = 10.0\n')
    t = time.perf_counter()
    load_scenario(path)
    assert time.perf_counter() - t < 10


def test_a_sweep_grid_beyond_the_ceiling_is_one_line_not_a_memory_error():
    with pytest.raises(SweepError) as info:
        parse_grid(["run.seed=1..100000000000"], 10**12)
    msg = str(info.value)
    assert "\n" not in msg and "--max-points 1000000000000" in msg and f"{POINTS_CEILING:,}" in msg


def test_a_sweep_grid_under_the_ceiling_is_still_counted_before_it_is_expanded():
    with pytest.raises(SweepError, match="100000000000 points"):
        parse_grid(["run.seed=1..100000000000"], POINTS_CEILING)


def graphml(path, nodes: int) -> None:
    body = "".join(f'<node id="n{i}"/>' for i in range(nodes))
    edges = "".join(f'<edge source="n0" target="n{i}"/>' for i in range(1, nodes))
    path.write_text('<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
                    f'<graph edgedefault="undirected">{body}{edges}</graph></graphml>')


def test_a_graphml_topology_is_held_to_the_node_limit_before_it_is_built(tmp_path, monkeypatch):
    import netemu.scenario.files as files

    monkeypatch.setattr(files, "MAX_NODES", 10)  # the limit of every topology (2,000,000), small for the test
    graphml(tmp_path / "g.graphml", 11)
    path = tmp_path / "s.toml"
    path.write_text(STAR.replace('kind = "star"\nclients = 40', 'kind = "graphml"\nfile = "g.graphml"'))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    (issue,) = info.value.issues
    assert issue.key == "topology.file" and "at most 10 nodes" in issue.accepts


def test_graphml_nodes_are_counted_while_the_file_streams(tmp_path):
    from netemu.scenario.files import graphml_nodes

    graphml(tmp_path / "g.graphml", 500)
    assert graphml_nodes(tmp_path / "g.graphml", 10**6) == 500
    assert graphml_nodes(tmp_path / "g.graphml", 100) == 100  # stops counting at the limit
    (tmp_path / "bad.graphml").write_text("<graphml><graph>")
    with pytest.raises(ValueError, match="not well-formed"):
        graphml_nodes(tmp_path / "bad.graphml", 10)


def test_a_fedscale_record_shared_by_many_ids_is_counted_per_id_before_any_interval_is_built(tmp_path, monkeypatch):
    import pickle

    import numpy as np

    from netemu import devices
    from netemu.errors import DeviceError
    from netemu.safepickle import LIMITS

    # NumPy arrays: one value each for the pickle's own check, ten intervals each once built
    shared = {"active": np.arange(0.0, 20.0, 2.0), "inactive": np.arange(1.0, 21.0, 2.0), "finish_time": 30.0}
    path = tmp_path / "client_behave_trace"
    path.write_bytes(pickle.dumps({i: shared for i in range(250)}, protocol=4))  # one record in the pickle's memo
    monkeypatch.setitem(LIMITS, "intervals", 2_000)  # 250 ids x 10 intervals = 2,500: above

    def built(*args):
        raise AssertionError("intervals were built before they were counted")

    monkeypatch.setattr(devices, "_fedscale_online", built)
    for pairing in ("position", "id"):
        with pytest.raises(DeviceError, match="more than 2,000 online intervals in all"):
            devices.from_fedscale(path, None, pairing=pairing)


def test_a_compressed_npz_is_held_to_its_byte_budget_before_it_is_decompressed(tmp_path):
    import numpy as np

    from netemu.data.files import DataError, read_npz

    path = tmp_path / "bomb.npz"
    zeros = np.zeros((50, 1000, 1000), dtype=np.uint8)  # 50 MB that compress to ~50 kB
    np.savez_compressed(path, train_images=zeros, train_labels=np.zeros(50, dtype=np.uint8))
    del zeros
    tracemalloc.start()
    try:
        with pytest.raises(DataError) as info:
            read_npz(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    assert str(path) in msg and "more than the budget of" in msg and "NETEMU_DATA_BUDGET" in msg and "\n" not in msg
    assert peak < 5_000_000


def test_the_data_budget_can_be_raised_by_the_environment(tmp_path, monkeypatch):
    import numpy as np

    from netemu.data.files import read_npz

    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, x=np.zeros((1000, 1000), dtype=np.uint8))
    monkeypatch.setenv("NETEMU_DATA_BUDGET", "1e9")
    monkeypatch.setattr("netemu.data.files.DECODED_RATIO", 10**6)
    assert read_npz(path)["x"].shape == (1000, 1000)


def test_a_gzipped_idx_is_held_to_its_byte_budget_before_it_is_decompressed(tmp_path):
    import gzip

    from netemu.data.files import DataError, read_idx

    path = tmp_path / "train-images-idx3-ubyte.gz"
    with gzip.open(path, "wb") as f:
        f.write(bytes([0, 0, 8, 3]) + (50_000).to_bytes(4, "big") + (28).to_bytes(4, "big") + (28).to_bytes(4, "big"))
        for _ in range(50):
            f.write(bytes(784_000))  # 39 MB of zeros: ~40 kB gzipped
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match="more than the budget of"):
            read_idx(path, 3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000
