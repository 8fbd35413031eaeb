"""netemu sweep: grids, one folder per point, resume, both executors, plots against a parameter."""

import csv
import json
from pathlib import Path

import pytest

from netemu.cli import main
from netemu.run.sweep import SweepError, grid_points, parse_grid, sweep

SCENARIO = """
[run]
rounds = 3
[topology]
kind = "star"
clients = 3
[nodes]
speed = 1000.0
[data]
kind = "linear"
dim = 2
[[algorithm]]
name = "fedavg"
"""


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


def test_grids_parse_lists_and_inclusive_ranges():
    grid = parse_grid(["algorithm.lr=0.1,0.2", "run.seed=1..3", "algorithm.label=a,b"])
    assert grid == {"algorithm.lr": [0.1, 0.2], "run.seed": [1, 2, 3], "algorithm.label": ["a", "b"]}
    assert len(list(grid_points(grid))) == 12
    assert next(grid_points(grid))[0] == "lr=0.1__seed=1__label=a"


def test_two_values_that_would_share_a_folder_are_refused():
    with pytest.raises(SweepError, match="would both run in the folder 'lr=0.1'"):
        list(grid_points(parse_grid(["algorithm.lr=0.1,0.10"])))


@pytest.mark.parametrize("bad", ["run.seed", "run.seed=", "run.seed=5..1"])
def test_a_bad_grid_says_what_is_expected(bad):
    with pytest.raises(SweepError, match="run.seed"):
        parse_grid([bad])


def rows(out):
    with open(out / "sweep.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_a_small_sweep_runs_every_point_in_its_own_folder(scenario, tmp_path, executor):
    out = tmp_path / "sweep"
    sweep(scenario, parse_grid(["task.lr=0.05,0.1", "run.seed=1..2"]), out, executor=executor, workers=2)
    table = rows(out)
    assert {r["folder"] for r in table} == {f"lr={lr}__seed={s}" for lr in (0.05, 0.1) for s in (1, 2)}
    assert all((out / r["folder"] / "summary.json").is_file() for r in table)
    assert {r["metric"] for r in table} == {"mse", "participants"}


def test_each_final_value_carries_the_interval_of_its_runs(scenario, tmp_path):
    out = tmp_path / "sweep"
    sweep(scenario, parse_grid(["task.lr=0.05,0.1", "run.runs=1,3"]), out, workers=1)
    for r in rows(out):
        if r["folder"].endswith("runs=1"):
            assert (r["runs"], r["ci95_low"], r["ci95_high"]) == ("1", "", "")
            continue
        summary = json.loads((out / r["folder"] / "summary.json").read_text())
        ci = summary["final_ci95"][r["algorithm"]][r["metric"]]
        assert r["runs"] == "3" and float(r["ci95_low"]) == ci["lo"] and float(r["ci95_high"]) == ci["hi"]
        assert float(r["ci95_low"]) <= float(r["value"]) <= float(r["ci95_high"])


def test_a_sweep_run_again_skips_the_finished_points(scenario, tmp_path):
    out = tmp_path / "sweep"
    grid = parse_grid(["run.seed=1..2"])
    sweep(scenario, grid, out, workers=1)
    stamp = (out / "seed=1" / "summary.json").stat().st_mtime_ns
    (out / "seed=2" / "summary.json").unlink()  # as if interrupted
    seen = []
    sweep(scenario, grid, out, workers=1, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (1, 2) and seen[-1] == (2, 2)
    assert (out / "seed=1" / "summary.json").stat().st_mtime_ns == stamp
    assert len(rows(out)) == 4


def test_every_point_is_validated_before_anything_runs(scenario, tmp_path, capsys):
    assert main(["sweep", str(scenario), "--grid", "task.lr=0.1,-1", "--out", str(tmp_path / "s"), "--quiet"]) == 2
    assert "task.lr = -1" in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_plot_draws_a_final_metric_against_a_swept_parameter(scenario, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", str(scenario), "--grid", "task.lr=0.05,0.1", "--out", str(out), "--quiet", "--workers", "1"]) == 0
    png = tmp_path / "mse.png"
    assert main(["plot", str(out), "--metric", "mse", "--x", "task.lr", "--out", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["plot", str(out), "--metric", "mse", "--x", "run.seed"]) == 2
    assert "'run.seed' was not swept" in capsys.readouterr().err


def test_plot_leaves_out_points_that_did_not_complete(scenario, tmp_path):
    from netemu.report import ReportError, plot_sweep

    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.csv").write_text(
        "folder,task.lr,status,error,algorithm,metric,value\n"
        "a,0.1,complete,,fedavg,mse,1.0\n"
        "b,0.2,failed,boom,fedavg,mse,99.0\n"
    )
    with pytest.warns(UserWarning, match="1 value"):
        plot_sweep(out, "mse", "task.lr", tmp_path / "p.png")
    with pytest.raises(ReportError, match="'status' was not swept; swept: task.lr$"):
        plot_sweep(out, "mse", "status", tmp_path / "q.png")


# ------------------------------------------------------------- a bad point, resume, limits


@pytest.fixture
def scripted(tmp_path):
    """A scenario whose `script` grid value decides whether a point fails at run time."""
    (tmp_path / "ok.py").write_text("def setup(world):\n    pass\n")
    (tmp_path / "bad.py").write_text("def setup(world):\n    raise RuntimeError('boom in bad.py')\n")
    path = tmp_path / "s.toml"
    path.write_text('script = "ok.py"\n' + SCENARIO)
    return path


#: dask here repeats what the dask sweep tests check (10-14 s of the default run): `-m slow` runs it
@pytest.mark.parametrize("executor", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_a_failing_point_is_a_row_and_the_others_finish(scripted, tmp_path, capsys, executor):
    out = tmp_path / "sweep"
    args = ["sweep", str(scripted), "--grid", 'script="ok.py","bad.py"', "--grid", "run.seed=1..2", "--out", str(out),
            "--executor", executor, "--workers", "2", "--quiet"]
    assert main(args) == 1
    table = rows(out)
    status = {r["folder"]: (r["status"], r["error"]) for r in table}
    assert status["script=ok.py__seed=1"] == status["script=ok.py__seed=2"] == ("complete", "")
    for seed in (1, 2):
        st_, error = status[f"script=bad.py__seed={seed}"]
        assert st_ == "failed" and "boom in bad.py" in error
    assert {r["metric"] for r in table if r["status"] == "complete"} == {"mse", "participants"}
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("netemu: sweep: 4 points: 2 complete, 0 incomplete, 2 failed")
    assert "Traceback" not in "\n".join(err)


def test_a_point_whose_process_is_killed_fails_alone(scripted, tmp_path, capsys):
    # e.g. the out-of-memory killer: the other points (even those running beside it) finish
    (tmp_path / "kill.py").write_text("import os, signal\ndef setup(world):\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    out = tmp_path / "sweep"
    assert main(["sweep", str(scripted), "--grid", 'script="kill.py","ok.py"', "--grid", "run.seed=1..2", "--out", str(out),
                 "--workers", "2", "--quiet"]) == 1
    status = {r["folder"]: (r["status"], r["error"]) for r in rows(out)}
    assert status["script=ok.py__seed=1"][0] == status["script=ok.py__seed=2"][0] == "complete"
    assert status["script=kill.py__seed=1"] == ("failed", "the process running this point was killed by SIGKILL "
                                                "(the out-of-memory killer sends it)")
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("netemu: sweep: 4 points: 2 complete, 0 incomplete, 2 failed")


def test_resume_refuses_a_point_run_with_another_scenario_and_reruns_it_on_request(scenario, tmp_path, capsys):
    out = tmp_path / "sweep"
    args = ["sweep", str(scenario), "--grid", "run.seed=1..2", "--out", str(out), "--quiet", "--workers", "1"]
    assert main(args) == 0
    scenario.write_text(SCENARIO.replace("rounds = 3", "rounds = 4"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "2 finished point(s) were run with another scenario" in err and "run.rounds: 3 then, 4 now" in err
    assert "--rerun-stale" in err
    assert main([*args, "--rerun-stale"]) == 0
    assert "rounds = 4" in (out / "seed=1" / "scenario.toml").read_text()
    assert main(args) == 0  # now up to date: nothing to refuse


def test_only_absolute_paths_are_sent_to_the_workers(scenario, tmp_path, monkeypatch):
    import netemu.run.sweep as sw

    sent = []

    def execute(todo, *args):  # instead of a cluster: record what would be sent
        sent.extend(todo)
        for name, *_ in todo:
            args[-1](name, sw.PointResult("complete"))

    monkeypatch.setattr(sw, "_execute", execute)
    monkeypatch.chdir(tmp_path)
    sweep(Path(scenario.name), parse_grid(["run.seed=1..2"]), Path("relative-out"), executor="dask")
    assert len(sent) == 2
    for _name, scenario_path, _overrides, folder in sent:
        assert Path(scenario_path).is_absolute() and Path(folder).is_absolute()
        assert Path(scenario_path) == scenario


def test_a_grid_too_large_is_refused_before_anything_is_allocated(scenario, tmp_path, capsys):
    import tracemalloc

    tracemalloc.start()
    try:
        code = main(["sweep", str(scenario), "--grid", "run.seed=1..100000000", "--out", str(tmp_path / "s")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and peak < 50 * 2**20
    err = capsys.readouterr().err
    assert "100000000 points (100000000 (run.seed)) is more than the limit of 10000" in err and "--max-points" in err
    with pytest.raises(SweepError, match="6 points .*3 \\(task.lr\\) x 2 \\(run.seed\\).* limit of 5"):
        parse_grid(["task.lr=0.1,0.2,0.3", "run.seed=1..2"], max_points=5)


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_workers_below_one_are_refused(scenario, tmp_path, capsys, workers):
    assert main(["sweep", str(scenario), "--grid", "run.seed=1..2", "--out", str(tmp_path / "s"), "--workers", workers]) == 2
    assert f"--workers {workers}: expected a number of worker processes >= 1" in capsys.readouterr().err


def test_an_unreachable_scheduler_is_a_one_line_error(scenario, tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["sweep", str(scenario), "--grid", "run.seed=1..2", "--out", str(tmp_path / "s"), "--executor", "dask",
                 "--address", f"tcp://127.0.0.1:{port}", "--connect-timeout", "1"])
    err = capsys.readouterr().err
    assert code == 2 and f"--address tcp://127.0.0.1:{port}: cannot connect to the dask scheduler within 1 s" in err
    assert "Traceback" not in err


# ------------------------------------------------------------- Ctrl-C


def interrupt(scenario, out, executor, started_after, group=True, sig=None):
    """Start a sweep of slow points in its own process group, Ctrl-C the group (as a
    terminal does; or send `sig` to the sweep process alone) once `started_after` point
    folders exist; (exit code, stderr, seconds from the signal to the exit)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "netemu.cli", "sweep", str(scenario), "--grid", "run.seed=1..6", "--out", str(out),
           "--workers", "2", "--executor", executor, "--quiet"]
    # as from a terminal: Ctrl-C not ignored, even where pytest itself runs with SIGINT ignored (a
    # background job of a non-interactive shell), a disposition the sweep would inherit across exec
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        deadline = time.monotonic() + 120
        while not (out.is_dir() and len(list(out.iterdir())) >= started_after):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(0.5)
        t = time.monotonic()
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        return proc.returncode, err, time.monotonic() - t
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def slow_scenario(tmp_path):
    path = tmp_path / "slow.toml"
    # ~30 s per point (6 s at 20,000 rounds since issue 15's engine work): far longer than the test waits
    path.write_text(SCENARIO.replace("rounds = 3", "rounds = 100000"))
    return path


def check_interrupted(out, code, err, seconds, expected_code=130, what="interrupted"):
    assert code == expected_code, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"netemu: sweep {what}: 0 of 6 points finished"), err
    assert seconds < 20
    import time

    started = [p for p in out.iterdir() if p.is_dir()]
    assert len(started) <= 2  # the two running points; the queued ones never started
    size = lambda: sum(f.stat().st_size for d in started for f in d.iterdir())
    before = size()
    time.sleep(1.5)  # a running point writes its log at ~1 MB/s: the workers are gone if nothing grows
    assert size() == before
    assert (out / "sweep.csv").read_text().count("\n") == 1  # the header: nothing finished


def test_ctrl_c_stops_a_local_sweep_its_queue_and_workers_with_one_line(tmp_path):
    out = tmp_path / "sweep"
    code, err, seconds = interrupt(slow_scenario(tmp_path), out, "local", started_after=2)
    check_interrupted(out, code, err, seconds)


def test_sigterm_to_the_sweep_alone_stops_its_workers_too(tmp_path):
    import signal

    out = tmp_path / "sweep"
    code, err, seconds = interrupt(slow_scenario(tmp_path), out, "local", started_after=2, group=False, sig=signal.SIGTERM)
    check_interrupted(out, code, err, seconds, expected_code=143, what="terminated (SIGTERM)")


@pytest.mark.slow  # a LocalCluster start and close: ~15 s
def test_ctrl_c_stops_a_dask_sweep_its_queue_and_workers_with_one_line(tmp_path):
    out = tmp_path / "sweep"
    code, err, seconds = interrupt(slow_scenario(tmp_path), out, "dask", started_after=2)
    check_interrupted(out, code, err, seconds)


# ------------------------------------------------------------- TLS


def _tls_sweep(scenario, out, address, *extra):
    return main(["sweep", str(scenario), "--grid", "run.seed=1..2", "--out", str(out), "--executor", "dask",
                 "--address", address, "--connect-timeout", "5", "--quiet", *extra])


def test_a_sweep_runs_on_a_tls_secured_scheduler_and_needs_its_certificates(scenario, tmp_path, capsys):
    pytest.importorskip("cryptography")
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    sec = Security.temporary()  # a self-signed CA and certificate, generated now
    certs = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    certs["ca"].write_text(sec.tls_ca_file)
    certs["cert"].write_text(sec.tls_client_cert)
    certs["key"].write_text(sec.tls_client_key)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, security=sec, protocol="tls",
                      host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://127.0.0.1:")
        # with the certificates given on the command line
        opts = ["--tls-ca-file", str(certs["ca"]), "--tls-cert", str(certs["cert"]), "--tls-key", str(certs["key"])]
        assert _tls_sweep(scenario, tmp_path / "a", address, *opts) == 0
        assert {r["status"] for r in rows(tmp_path / "a")} == {"complete"}
        # with dask's own configuration (distributed.comm.tls.*)
        with dask.config.set({"distributed.comm.tls.ca-file": str(certs["ca"]),
                              "distributed.comm.tls.client.cert": str(certs["cert"]),
                              "distributed.comm.tls.client.key": str(certs["key"])}):
            assert _tls_sweep(scenario, tmp_path / "b", address) == 0
        assert len(rows(tmp_path / "b")) == 4
        # without certificates the scheduler cannot be reached: a one-line error
        capsys.readouterr()
        assert _tls_sweep(scenario, tmp_path / "c", address) == 2
        err = capsys.readouterr().err
        assert f"--address {address}: cannot connect to the dask scheduler" in err and "Traceback" not in err


def test_an_interrupted_sweep_closes_its_running_points_folders_like_an_interrupted_run(tmp_path):
    """Issue "Hostile inputs, second round" A: the points that were running when the sweep was
    stopped keep a summary.json (complete: false, the reason) and a trace with its end marker."""
    from netemu.trace import Trace

    out = tmp_path / "sweep"
    code, err, _ = interrupt(slow_scenario(tmp_path), out, "local", started_after=2)
    assert code == 130, err
    started = [p for p in out.iterdir() if p.is_dir()]
    assert started
    for folder in started:
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["complete"] is False and summary["stopped_by"] == "terminated (SIGTERM)", folder
        assert Trace.read(folder / "trace.msgpack").complete is False
