"""The sweep executor (:mod:`numerics.reproduce.executor`): cells as Dask tasks on a two-worker
local cluster give the serial run's files, written by the client; a killed worker's cell is
retried and resumes; a stopped sweep goes on with :func:`pending`; one ``out`` takes one sweep.
The cells are the checkpointed fakes of ``tests/fakes.py`` (but for the one another process holds
``out`` with, which is its own).

One local cluster serves the module through its scheduler's address: the two worker processes
that ``run(..., jobs=2)`` starts for a sweep of the module (:func:`jobs_sweep`), kept past the
sweep's end, as starting a cluster and its workers' imports cost seconds each time.  The test that
kills a worker runs last: the nanny starts it again.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from numerics.errors import LintfError
from numerics.reproduce import executor
from numerics.reproduce.executor_display import SweepProgress
from numerics.train import devices
from tests import fakes

ROOT = Path(__file__).resolve().parents[2]
ENV_NAMES = ("LINTF_HOST_DEVICES", "XLA_FLAGS", "JAX_DEFAULT_MATMUL_PRECISION")


@pytest.fixture(scope="module")
def jobs_sweep(tmp_path_factory):
    """A sweep of ``run(..., jobs=2)`` into ``tmp/out`` (runs under ``tmp/runs``), started with
    none of ``ENV_NAMES`` set: a probe of its workers' environment and two cells.  The local cluster
    it starts (``started``: the arguments it was started with) is kept, its close at the sweep's end
    put off to the module's end, to serve the module's other tests as ``cluster``; a scheduler file
    is written at its start (as ``dask scheduler --scheduler-file`` writes one) at
    ``cluster.scheduler_file``."""
    from distributed import Client

    tmp = tmp_path_factory.mktemp("jobs")
    tasks = [("probe", functools.partial(fakes.environment_cell, names=ENV_NAMES)), *cells(2)]
    real, started = executor.on_dask.local_cluster, []

    def keep(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        c = real(*a, **kw)
        c.close = lambda *_, **__: None  # the sweep's own close, put off
        started.append((a, kw, c))
        # before any task: once one has run, the workers' metrics have tuple keys, which the
        # scheduler file's JSON cannot hold
        c.scheduler_file = str(tmp / "scheduler.json")
        with Client(c) as client:
            client.write_scheduler_file(c.scheduler_file)
        return c

    try:
        with pytest.MonkeyPatch.context() as mp:
            for name in ENV_NAMES:
                mp.delenv(name, raising=False)
            mp.setattr(executor.on_dask, "local_cluster", keep)
            executor.run(tasks, out=tmp / "out", jobs=2, runs=tmp / "runs", progress=False)
        ((a, kw, c),) = started
        yield SimpleNamespace(tmp=tmp, tasks=tasks, started=(a, kw), cluster=c)
    finally:
        for *_, c in started:
            del c.close  # the cluster's own close again
            c.close()


@pytest.fixture(scope="module")
def cluster(jobs_sweep):
    """The module's local cluster (:func:`jobs_sweep`'s), its scheduler file at
    ``cluster.scheduler_file``."""
    return jobs_sweep.cluster


def cells(n: int = 4, **kw) -> list[executor.Task]:
    return [
        (f"cell{i}", functools.partial(fakes.checkpointed_cell, seed=i, **kw)) for i in range(n)
    ]


def serial_files(tasks: list[executor.Task], tmp: Path) -> dict[str, dict[str, bytes]]:
    """Each task's files from one uninterrupted call of its ``fn`` in a fresh directory, here."""
    got = {}
    for name, fn in tasks:
        (tmp / name).mkdir(parents=True)
        got[name] = fn(tmp / name)
    return got


def written(out: Path) -> dict[str, dict[str, bytes]]:
    """The files under ``out/models/<cell>/``, cell by cell."""
    return {
        d.name: {f.name: f.read_bytes() for f in d.iterdir() if f.name[0] != "."}
        for d in sorted((out / "models").iterdir())
    }


def test_two_workers_give_every_cell_of_the_serial_run(cluster, tmp_path):
    tasks = cells(5)
    executor.run(
        tasks,
        out=tmp_path / "out",
        scheduler=cluster.scheduler_address,
        runs=tmp_path / "runs",
        progress=False,
    )
    assert written(tmp_path / "out") == serial_files(tasks, tmp_path / "serial")


def test_a_scheduler_file_reaches_the_cluster_it_names(cluster, tmp_path):
    tasks = cells(2)
    executor.run(tasks, out=tmp_path / "out", scheduler=cluster.scheduler_file, progress=False)
    assert written(tmp_path / "out") == serial_files(tasks, tmp_path / "serial")


def test_results_travel_back_and_the_client_writes_every_cell(cluster, tmp_path, monkeypatch):
    """The workers keep their run directories in temporary directories of their own
    (``runs=None``), apart from the client's ``out``; every file under ``out`` is one the client
    wrote, ``metrics.json`` last in each cell."""
    calls: list[tuple[Path, bytes]] = []
    real = executor.atomic_write_bytes

    def record(path, data, *a, **kw):  # noqa: ANN001, ANN002, ANN003
        calls.append((Path(path), data))
        real(path, data, *a, **kw)

    monkeypatch.setattr(executor, "atomic_write_bytes", record)
    probe = ("probe", functools.partial(fakes.environment_cell, names=ENV_NAMES))
    tasks = [*cells(3), probe]
    out = tmp_path / "out"
    executor.run(tasks, out=out, scheduler=cluster.scheduler_address, runs=None, progress=False)
    files = written(out)
    assert json.loads(files["probe"]["metrics.json"])["pid"] != os.getpid()  # ran on a worker
    by_client = {
        (p.parent.name, p.name): data for p, data in calls if p.parent.parent == out / "models"
    }
    assert {(c, f): data for c, got in files.items() for f, data in got.items()} == by_client
    for name, _ in tasks:
        order = [p.name for p, _ in calls if p.parent.name == name]
        assert order[-1] == "metrics.json" and len(order) == len(files[name])
    files.pop("probe")
    assert files == serial_files(tasks[:3], tmp_path / "serial")


def test_jobs_starts_single_threaded_workers_with_their_share_of_the_cores(jobs_sweep, tmp_path):
    """The module's ``jobs=2`` sweep (:func:`jobs_sweep`): a local cluster of two workers, each with
    its share of the cores, and the serial run's files."""
    out, tasks = jobs_sweep.tmp / "out", jobs_sweep.tasks
    assert jobs_sweep.started == ((2,), {"dashboard": False})
    seen = json.loads((out / "models" / "probe" / "metrics.json").read_text())
    share = devices.default_count(devices.cores() // 2)
    assert seen["pid"] != os.getpid()
    assert seen["env"]["LINTF_HOST_DEVICES"] == str(share)
    assert seen["env"]["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"
    assert (f"{devices.FLAG}={share}" in (seen["env"]["XLA_FLAGS"] or "")) == (share > 1)
    serial = serial_files(tasks[1:], tmp_path / "serial")
    assert {k: v for k, v in written(out).items() if k != "probe"} == serial


def test_a_second_sweep_on_the_same_out_is_refused_in_one_line(tmp_path):
    """Another process runs a sweep on ``out`` (its one cell says it has started, then waits):
    this one is refused before any work, with the directory and the holder's process id, and goes
    ahead once the other is gone."""
    out, midway = tmp_path / "out", tmp_path / "midway"
    # the other process's cell is its own (tests/fakes.py imports JAX: seconds of start-up)
    code = (
        "import os, sys, time\n"
        "from numerics.reproduce import executor\n"
        "def held(rundir):\n"
        "    open(sys.argv[2] + '.tmp', 'w').write(str(os.getpid()))\n"
        "    os.replace(sys.argv[2] + '.tmp', sys.argv[2])\n"
        "    time.sleep(60)\n"
        "executor.run([('held', held)], out=sys.argv[1], progress=False)\n"
    )
    other = subprocess.Popen([sys.executable, "-c", code, str(out), str(midway)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not midway.exists() and other.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert midway.exists(), "the other sweep did not start"
        with pytest.raises(LintfError) as err:
            executor.run(cells(1), out=out, progress=False)
    finally:
        other.kill()
        other.wait()
    msg = str(err.value)
    assert "\n" not in msg and str(out) in msg and f"pid {other.pid} " in msg, msg
    assert not (out / "models" / "cell0").exists()  # refused before any work
    executor.run(cells(1), out=out, progress=False)  # free again once the other is gone
    assert (out / "models" / "cell0" / "metrics.json").is_file()


def test_a_process_that_holds_the_lock_may_run_sweeps_inside_it(tmp_path):
    with executor.sweep_lock(tmp_path / "out"):
        executor.run(cells(2), out=tmp_path / "out", progress=False)
        assert (tmp_path / "out" / executor.HOLDER).is_file()
    assert not (tmp_path / "out" / executor.HOLDER).exists()
    assert len(executor.pending(cells(2), tmp_path / "out")) == 0


def test_a_cell_without_runs_trains_in_a_scratch_directory_that_goes_when_it_ends(
    tmp_path, monkeypatch
):
    """``runs=None``: a cell's run directory is ``<scratch>/<name>`` in a temporary directory of its
    own, removed when the cell ends, whether it returns its files or raises."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen: list[Path] = []

    def cell(rundir: Path, fail: bool = False) -> dict[str, bytes]:
        seen.append(rundir)
        (rundir / "checkpoint.npz").write_bytes(b"state")
        if fail:
            raise RuntimeError("diverged")
        return {"metrics.json": b"{}"}

    assert executor.work("c1", cell, None) == ("c1", {"metrics.json": b"{}"})
    with pytest.raises(RuntimeError, match="diverged"):
        executor.work("c2", functools.partial(cell, fail=True), None)
    assert [p.name for p in seen] == ["c1", "c2"] and list(tmp_path.iterdir()) == []


def test_pending_skips_finished_cells_and_run_refuses_them(tmp_path):
    tasks, out = cells(3), tmp_path / "out"
    executor.run(tasks[1:2], out=out, progress=False)
    (out / "models" / "cell2").mkdir()
    (out / "models" / "cell2" / "model.npy").write_bytes(b"a cell stopped before metrics.json")
    assert [n for n, _ in executor.pending(tasks, out)] == ["cell0", "cell2"]
    with pytest.raises(LintfError, match="cell 'cell1' is finished already"):
        executor.run(tasks, out=out, progress=False)


def test_a_sweep_stopped_by_ctrl_c_goes_on_where_it_stopped(tmp_path):
    flag = str(tmp_path / "interrupted")
    tasks = cells(3)
    tasks[1] = ("cell1", functools.partial(fakes.interrupted_cell, flag=flag, seed=1))
    out, runs = tmp_path / "out", tmp_path / "runs"
    with pytest.raises(KeyboardInterrupt):
        executor.run(tasks, out=out, runs=runs, progress=False)
    assert [n for n, _ in executor.pending(tasks, out)] == ["cell1", "cell2"]
    executor.run(executor.pending(tasks, out), out=out, runs=runs, progress=False)
    assert written(out) == serial_files(cells(3), tmp_path / "serial")


def test_a_client_stopped_mid_sweep_goes_on_with_the_cluster(cluster, tmp_path, monkeypatch):
    """Ctrl-C reaches the client as it shows its second finished cell: that cell and the first
    are on disk, and the same sweep given :func:`pending` trains only the others."""
    real, count = SweepProgress.finished, []

    def stop_after_two(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003
        real(self, *a, **kw)
        count.append(1)
        if len(count) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(SweepProgress, "finished", stop_after_two)
    tasks, out, runs = cells(5, pause=0.05), tmp_path / "out", tmp_path / "runs"
    with pytest.raises(KeyboardInterrupt):
        executor.run(tasks, out=out, scheduler=cluster.scheduler_address, runs=runs, progress=False)
    assert len(executor.pending(tasks, out)) == 3
    monkeypatch.setattr(SweepProgress, "finished", real)
    executor.run(
        executor.pending(tasks, out),
        out=out,
        scheduler=cluster.scheduler_address,
        runs=runs,
        progress=False,
    )
    assert written(out) == serial_files(tasks, tmp_path / "serial")


@pytest.mark.slow
def test_ctrl_c_stops_a_jobs_sweep_and_the_same_sweep_goes_on(tmp_path):
    """SIGINT to a process running ``jobs=2`` after its second cell: it stops within a minute
    (workers and all), keeps its finished cells and frees ``out``; the rest then finishes here."""
    out, runs = tmp_path / "out", tmp_path / "runs"
    code = (
        "import functools, sys; from numerics.reproduce import executor; from tests import "
        "fakes\nif __name__ == '__main__':\n    executor.run([(f'cell{i}', functools.partial("
        "fakes.checkpointed_cell, seed=i, pause=0.5)) for i in range(6)], out=sys.argv[1], "
        "jobs=2, runs=sys.argv[2], progress=False)\n"
    )
    (tmp_path / "sweep.py").write_text(code)
    sweep = subprocess.Popen(
        [sys.executable, str(tmp_path / "sweep.py"), str(out), str(runs)],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 240
        while len(list(out.glob("models/*/metrics.json"))) < 2 and time.monotonic() < deadline:
            assert sweep.poll() is None, "the sweep ended before it was stopped"
            time.sleep(0.05)
        sweep.send_signal(signal.SIGINT)
        assert sweep.wait(60) != 0
    finally:
        sweep.kill()
        sweep.wait()
    tasks = cells(6, pause=0.5)
    assert 2 <= 6 - len(executor.pending(tasks, out)) < 6
    assert not (out / executor.HOLDER).exists()
    executor.run(executor.pending(tasks, out), out=out, runs=runs, progress=False)
    assert written(out) == serial_files(tasks, tmp_path / "serial")


def test_a_failed_cell_is_named_in_one_line_and_the_others_finish(tmp_path):
    tasks = [*cells(2), ("bad", functools.partial(fakes.failing_cell, why="diverged at step 3"))]
    with pytest.raises(LintfError) as err:
        executor.run(tasks, out=tmp_path / "out", progress=False)
    msg = str(err.value)
    assert "\n" not in msg and "bad: RuntimeError: diverged at step 3" in msg, msg
    assert [n for n, _ in executor.pending(tasks, tmp_path / "out")] == ["bad"]


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"jobs": 0}, "jobs must be an integer of 1 or more, got 0"),
        ({"jobs": 2, "scheduler": "tcp://h:8786"}, "jobs=2: not allowed with scheduler"),
        ({"scheduler": "no such file"}, "scheduler 'no such file' is neither an address"),
    ],
)
def test_bad_arguments_are_one_line_errors_before_any_work(tmp_path, kw, words):
    with pytest.raises(LintfError, match=words) as err:
        executor.run(cells(1), out=tmp_path / "out", progress=False, **kw)
    assert "\n" not in str(err.value) and not (tmp_path / "out" / "models").exists()


def test_a_scheduler_that_does_not_answer_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(executor.on_dask, "CONNECT_TIMEOUT", "0.3s")
    with pytest.raises(LintfError) as err:
        executor.run(cells(1), out=tmp_path / "out", scheduler="tcp://127.0.0.1:1", progress=False)
    msg = str(err.value)
    assert msg.startswith("scheduler 'tcp://127.0.0.1:1': no Dask scheduler answers (")
    assert "\n" not in msg
    assert not (tmp_path / "out" / "models").exists()


@pytest.mark.parametrize("name", ["", "..", "a/b", "-x"])
def test_a_cell_name_that_is_not_a_folder_name_is_refused(tmp_path, name):
    task = (name, functools.partial(fakes.checkpointed_cell, seed=0))
    with pytest.raises(LintfError, match="is not a folder name"):
        executor.run([task], out=tmp_path / "out", progress=False)


@pytest.mark.parametrize("files", [{"model.npy": b"x"}, {"metrics.json": b"{}", "../escape": b"x"}])
def test_a_task_result_that_is_no_cell_is_refused(tmp_path, files):
    with pytest.raises(LintfError, match="cell 'c'"):
        executor.write_cell(tmp_path, "c", files)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "models").exists()


def test_a_task_that_returns_no_cell_fails_in_one_line_and_the_others_finish(tmp_path):
    tasks = [("odd", lambda rundir: {"model.npy": b"x"}), *cells(2)]
    seen = []
    with pytest.raises(LintfError, match=r"^1 of 3 cells failed \(cell 'odd': its task returned"):
        executor.run(tasks, out=tmp_path / "out", progress=False, done=lambda n, f: seen.append(n))
    assert seen == ["cell0", "cell1"]
    assert [n for n, _ in executor.pending(tasks, tmp_path / "out")] == ["odd"]


@pytest.fixture
def client_only(tmp_path, monkeypatch):
    """A module ``client_only`` that this process imports and the cluster's workers (started
    before it existed) cannot."""
    (tmp_path / "client_only.py").write_text(
        "def cell(rundir, seed):\n    return {'metrics.json': b'{}'}\n\n"
        "def work(name, fn, runs):\n    return name, {'metrics.json': b'{}'}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import client_only

    yield client_only
    sys.modules.pop("client_only", None)


def error_within(seconds: float, **run) -> BaseException | None:  # noqa: ANN003
    """What ``executor.run(**run)`` raises (``None``: nothing), run in a thread; fails the test
    if it has not ended after ``seconds`` (a sweep that waits for ever)."""
    errors: list[BaseException] = []

    def sweep() -> None:
        try:
            executor.run(**run)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            errors.append(exc)

    thread = threading.Thread(target=sweep, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the sweep has not ended after {seconds} s"
    return errors[0] if errors else None


def test_a_cell_whose_code_a_worker_cannot_import_fails_in_one_line(cluster, tmp_path, client_only):
    """The cell's own error, not a sweep that waits for ever: the worker unpickles the cell's
    function inside the task."""
    tasks = [*cells(1), ("lost", functools.partial(client_only.cell, seed=0))]
    err = error_within(
        90, tasks=tasks, out=tmp_path / "out", scheduler=cluster.scheduler_address, progress=False
    )
    assert isinstance(err, LintfError), err
    msg = str(err)
    assert "\n" not in msg and "lost: ModuleNotFoundError: No module named 'client_only'" in msg
    assert executor.pending(tasks, tmp_path / "out") == tasks[1:]


def test_a_worker_that_cannot_import_lintf_is_named_before_any_cell(
    cluster, tmp_path, client_only, monkeypatch
):
    monkeypatch.setattr(executor, "work", client_only.work)  # as if lintf were not on the workers
    err = error_within(
        90,
        tasks=cells(2),
        out=tmp_path / "out",
        scheduler=cluster.scheduler_address,
        progress=False,
    )
    assert isinstance(err, LintfError), err
    assert re.fullmatch(
        r"worker tcp://\S+ cannot run lintf's cells \(import client_only: "
        r"ModuleNotFoundError: No module named 'client_only'\); install lintf "
        r"in the workers' environment",
        str(err),
    ), str(err)
    assert not (tmp_path / "out" / "models").exists()


def test_a_killed_worker_has_its_cell_retried_and_resumed(cluster, tmp_path):
    """SIGKILL the worker holding ``cell1`` half-way: the scheduler starts the task again, it
    resumes from the checkpoint under the shared ``runs``, and every cell equals the uninterrupted
    run's."""
    midway = tmp_path / "midway"
    tasks = cells(4, pause=0.05)
    tasks[1] = (
        "cell1",
        functools.partial(fakes.checkpointed_cell, seed=1, pause=0.05, midway=str(midway)),
    )
    killed: list[int] = []

    def kill_when_midway() -> None:
        deadline = time.monotonic() + 60
        while not midway.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if midway.exists():
            killed.append(int(midway.read_text()))
            os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_when_midway, daemon=True)
    killer.start()
    out, runs = tmp_path / "out", tmp_path / "runs"
    executor.run(tasks, out=out, scheduler=cluster.scheduler_address, runs=runs, progress=False)
    killer.join()
    assert killed and killed[0] != os.getpid()
    # started, then resumed at step 4 of 8
    assert (runs / "cell1" / "starts").read_text().split() == ["0", "4"]
    assert written(out) == serial_files(cells(4, pause=0.05), tmp_path / "serial")
