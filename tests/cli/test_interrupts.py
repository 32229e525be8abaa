"""SIGINT at any moment of the console command (:func:`numerics.cli.main` with no arguments): it ends with status 130
and one line, never by a signal (a negative status here, 139 for SIGSEGV in a shell), and a resumed ``lintf train``
or ``lintf reproduce`` ends with the uninterrupted run's models and losses.

The moments are drawn from a seeded generator over the whole run from one second in: JAX's import, XLA compiling
the training step, training, evaluation, a sweep's baselines and report, the end of the run.  The default run's two
moments of ``lintf train`` are ones its process shows from outside: JAX's import under way (a jaxlib extension
mapped) and XLA's CPU client up (its threads running) as the first programs compile.  A SIGINT within the first
0.2 s meets Python starting: once lintf's handler is in place it is the same one line; before, the signal ends the
interpreter as it ends any Python program.  In-process, a KeyboardInterrupt that a garbage-collector callback
swallows is raised again until the command catches it.
"""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from numerics import cli
from tests.fakes import TINY_CONSOLE, TINY_TRAIN

TRAIN = ["train", *TINY_TRAIN]
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "LINTF_HOST_DEVICES": "1", "PYTHONWARNINGS": "ignore"}


def _interrupted(
    argv: list[str], after: float, script: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``lintf argv`` as the console command (``script``: ``python -c script argv`` instead) and send it SIGINT
    ``after`` seconds in (if it still runs)."""
    p = subprocess.Popen(
        [sys.executable, *(["-c", script] if script else ["-m", "numerics.cli"]), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        text=True,
        cwd=ROOT,
    )
    try:
        p.wait(after)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=600)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _jax_importing(pid: int) -> bool:
    """Whether process ``pid`` has mapped one of jaxlib's extensions (Linux ``/proc``): JAX's
    import is under way, or done."""
    return "/jaxlib/" in Path(f"/proc/{pid}/maps").read_text()


def _xla_up(pid: int) -> bool:
    """Whether process ``pid`` runs the threads of XLA's CPU client (named ``tf_XLAEigen``; Linux
    ``/proc``): its backend is up and the command's first programs compile."""
    names = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            names.append((task / "comm").read_text().strip())
        except OSError:  # the thread ended
            continue
    return "tf_XLAEigen" in names


def _interrupted_when(
    argv: list[str], moment: Callable[[int], bool]
) -> subprocess.CompletedProcess:
    """Run ``lintf argv`` as the console command and send it SIGINT as soon as ``moment(pid)``
    holds; the command must still run then."""
    p = subprocess.Popen(
        [sys.executable, "-m", "numerics.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 120
    try:
        while p.poll() is None and not moment(p.pid) and time.monotonic() < deadline:
            time.sleep(0.002)
    except OSError:  # /proc/PID is gone: the command has ended
        pass
    running = p.poll() is None and time.monotonic() < deadline
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=600)
    assert running, (
        f"{moment.__name__} never held while the command ran",
        p.returncode,
        err[-2000:],
    )
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _ended_cleanly(res: subprocess.CompletedProcess, command: str) -> None:
    assert res.returncode in (0, 130), (res.returncode, res.stderr[-2000:])
    if res.returncode == 130:
        lines = res.stderr.strip().splitlines()
        assert (
            lines
            and lines[-1]
            == f"lintf {command}: interrupted; finished work is kept, rerun the same command "
            "to resume"
        ), res.stderr[-2000:]
        assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr[
            -2000:
        ]


def _model(run: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(run / "model.npz") as z:
        return np.array(z["P"]), np.array(z["Q"])


def _train_interrupts(tmp_path: Path, interrupts: int, seed: int) -> None:
    """``interrupts`` SIGINTs at seeded moments of ``lintf train``, each to a fresh run directory, each then resumed
    to the end and compared with the uninterrupted run.  The moments are drawn over the span of the last run that
    finished (the uninterrupted one's at first): a run that finishes before its moment counts no interrupt, and
    its span is the next draws'."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    ref = _interrupted([*TRAIN, "--out", str(tmp_path / "ref")], after=3600)
    span = time.perf_counter() - t0
    assert ref.returncode == 0, ref.stderr[-2000:]
    sent, k = 0, 0
    while sent < interrupts:
        k += 1
        assert k <= 4 * interrupts, f"{sent} interrupts in {k - 1} runs"
        run = tmp_path / f"run{k}"
        after = rng.uniform(1.0, max(span, 1.5))
        t0 = time.perf_counter()
        res = _interrupted([*TRAIN, "--out", str(run)], after=after)
        _ended_cleanly(res, "train")
        if res.returncode == 130:
            sent += 1
        else:
            span = time.perf_counter() - t0
        left = sorted(p.name for p in run.iterdir()) if run.exists() else []
        again = _interrupted([*TRAIN, "--out", str(run)], after=3600)
        assert again.returncode == 0, again.stderr[-2000:]
        for a, b in zip(_model(run), _model(tmp_path / "ref"), strict=True):
            np.testing.assert_array_equal(a, b)
        print(
            f"run {k}: SIGINT at {after:.2f} s of {span:.2f} s, status {res.returncode}, "
            f"left {left or 'nothing'}, resumed equal",
            flush=True,
        )
    print(f"{sent} interrupts in {k} runs, each resumed equal")


def test_sigint_during_train_ends_it_with_130_and_one_line(tmp_path: Path) -> None:
    """Two moments in the first seconds: JAX's import, and XLA compiling the first programs."""
    for moment in (_jax_importing, _xla_up):
        res = _interrupted_when([*TRAIN, "--out", str(tmp_path / moment.__name__)], moment)
        assert res.returncode == 130, (moment.__name__, res.returncode, res.stderr[-2000:])
        _ended_cleanly(res, "train")


@pytest.mark.slow
def test_sigint_at_twenty_moments_of_train_then_resume_equals_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    _train_interrupts(tmp_path, interrupts=20, seed=1)


def _tiny_reproduce(out: Path) -> list[str]:
    """The console command's arguments for the tiny sweep of Table 1 into ``out`` (``out/runs``: its runs)."""
    return ["reproduce", "--budget", "tiny", "--only", "table1", "--out", str(out / "res"),
            "--runs", str(out / "runs")]  # fmt: skip


def _records(out: Path) -> dict[str, tuple]:
    """Every cell's losses (its record's evaluation and profile) and model arrays, and every baselines file, of
    the sweep in ``out``: what a resumed sweep must give exactly as an uninterrupted one."""
    res, found = out / "res", {}
    for cell in sorted((res / "models").iterdir()):
        rec = json.loads((cell / "metrics.json").read_text())
        found[cell.name] = (rec["failed"], rec["eval"], rec["profile"])
        if (cell / "model.npz").exists():
            found[cell.name] += _model(cell)
    for base in sorted((res / "baselines").iterdir()):
        found[base.name] = json.loads(base.read_text())
    return found


def _same(a: dict[str, tuple], b: dict[str, tuple]) -> None:
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    for k in a:
        for x, y in zip(a[k], b[k], strict=True) if isinstance(a[k], tuple) else [(a[k], b[k])]:
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=k)
            else:
                assert x == y, k


def _startup_interrupt(out: Path, after: float | None) -> None:
    """SIGINT ``after`` seconds into the console command, while Python starts (``None``: the moment lintf's
    handler is in place, which also catches SIGALRM, as Python's own does not).  Once lintf's handler is in: status
    130 and one line.  Before (Python's site set-up and the first imports take the first 0.05-0.1 s here), the
    signal ends the interpreter as it ends any Python program, lintf's code not yet running: by the signal, or
    with Python's own "Fatal Python error: init_..." and status 1 while the interpreter initialises (its streams,
    site's imports), or not at all: while Python imports ``warnings`` it prints "'import warnings' failed" and
    goes on, and the command runs to its end.  Either way ``--out`` holds
    nothing."""
    p = subprocess.Popen(
        [sys.executable, "-c", TINY_CONSOLE, *_tiny_reproduce(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        text=True,
        cwd=ROOT,
    )
    if after is None:
        deadline = time.monotonic() + 60
        while not _catches_sigalrm(p.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
    else:
        time.sleep(after)
    handled = _catches_sigalrm(p.pid)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=600)
    res = subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
    print(
        f"start-up SIGINT at {'the handler' if after is None else f'{after:.2f} s'} (lintf's handler "
        f"{'in' if handled else 'not yet in'}): status {res.returncode}",
        flush=True,
    )
    if handled or after is None:
        assert handled and res.returncode == 130, (after, res.returncode, stderr[-2000:])
        _ended_cleanly(res, "reproduce")
    else:
        assert res.returncode in (130, 1, -signal.SIGINT, 0), (
            after,
            res.returncode,
            stderr[-2000:],
        )
        assert res.returncode != 1 or "Fatal Python error: init_" in stderr, stderr[-2000:]
        if res.returncode == 0:
            # the interrupt was lost before lintf's handler was in (Python reported it in its
            # start-up, or an import swallowed it) and the sweep ran: it must have finished whole
            assert (out / "res" / "report.md").exists(), stderr[-2000:]
            assert "Traceback" not in stderr, stderr[-2000:]
            return
    # nothing but, at most, the sweep's marker and its lock: an interrupt that lands in an import is
    # raised when the import ends, which may be just after the sweep claimed its --out (a rerun
    # resumes)
    left = {p.name for p in (out / "res").iterdir()} if (out / "res").exists() else set()
    assert left <= {"lintf-sweep.json", ".sweep.lock"}, (after, sorted(left))


def _catches_sigalrm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGALRM (Linux ``/proc``): lintf's console handlers are in."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGALRM - 1) & 1)
    return False


def _reproduce_interrupts(tmp_path: Path, interrupts: int, seed: int) -> None:
    """``interrupts`` SIGINTs at seeded moments, each to a run that resumes the one before it; a run that
    finishes first is compared with the uninterrupted sweep and the next starts anew.  The moments are drawn over
    the span of the last run that finished (the uninterrupted one's at first): on a machine whose load changes,
    they stay within the runs.  Every sweep, finished at the end, equals the uninterrupted one."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    ref = _interrupted(_tiny_reproduce(tmp_path / "ref"), after=3600, script=TINY_CONSOLE)
    span = time.perf_counter() - t0
    assert ref.returncode == 0, ref.stderr[-2000:]
    want = _records(tmp_path / "ref")
    chain, sent, runs = 0, 0, 0
    while sent < interrupts:
        runs += 1
        assert runs <= 4 * interrupts, f"{sent} interrupts in {runs} runs"
        t0 = time.perf_counter()
        after = rng.uniform(1.0, max(span, 1.5))
        res = _interrupted(
            _tiny_reproduce(tmp_path / f"chain{chain}"), after=after, script=TINY_CONSOLE
        )
        _ended_cleanly(res, "reproduce")
        print(
            f"run {runs}: SIGINT at {after:.2f} s of {span:.2f} s (sweep {chain + 1}): status "
            f"{res.returncode}",
            flush=True,
        )
        if res.returncode == 130:
            sent += 1
        else:
            span = time.perf_counter() - t0
            _same(_records(tmp_path / f"chain{chain}"), want)
            chain += 1
    last = _interrupted(
        _tiny_reproduce(tmp_path / f"chain{chain}"), after=3600, script=TINY_CONSOLE
    )
    assert last.returncode == 0, last.stderr[-2000:]
    _same(_records(tmp_path / f"chain{chain}"), want)
    print(
        f"{sent} interrupts in {runs} runs over {chain + 1} sweeps, each equal to the uninterrupted one"
    )


def test_sigint_while_reproduce_starts_ends_it_with_130_and_one_line(tmp_path: Path) -> None:
    """Two SIGINTs while Python starts (within 0.2 s; one the moment lintf's handler is in place), one while JAX
    loads or the first cell compiles."""
    rng = random.Random(3)
    _startup_interrupt(tmp_path / "start", after=rng.uniform(0.02, 0.2))
    _startup_interrupt(tmp_path / "handler", after=None)
    res = _interrupted(
        _tiny_reproduce(tmp_path / "early"), after=rng.uniform(1.0, 4.0), script=TINY_CONSOLE
    )
    _ended_cleanly(res, "reproduce")


@pytest.mark.slow
def test_sigint_at_twenty_moments_of_reproduce_then_resume_equals_the_uninterrupted_sweep(
    tmp_path: Path,
) -> None:
    for k, after in enumerate((0.03, 0.06, 0.09, 0.12, 0.2, None)):
        _startup_interrupt(tmp_path / f"start{k}", after=after)
    _reproduce_interrupts(tmp_path, interrupts=20, seed=4)


@pytest.fixture
def console_handlers():
    """The process's SIGINT and SIGALRM handlers and unraisable hook, as they were, after the test."""
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM), sys.unraisablehook
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGINT, saved[0])
    signal.signal(signal.SIGALRM, saved[1])
    sys.unraisablehook = saved[2]


def test_an_interrupt_a_gc_callback_swallows_is_raised_again(console_handlers, capsys) -> None:  # noqa: ANN001
    """The SIGINT lands in a garbage-collector callback (as in JAX's), where Python prints "Exception ignored" and
    drops the KeyboardInterrupt; the console handler raises it again, and prints nothing for the dropped one."""
    dropped: list = []
    sys.unraisablehook = (
        dropped.append
    )  # what the console handler passes on (pytest has a hook of its own)
    interrupts = cli._Interrupts()  # noqa: SLF001 - the console command's own handler, tested directly
    interrupts.install()

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            gc.callbacks.remove(callback)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):  # the handler runs here, between two bytecodes of the callback
                pass

    gc.callbacks.append(callback)
    with pytest.raises(KeyboardInterrupt):
        gc.collect()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.01)
    assert interrupts.pending
    interrupts.caught()
    assert dropped == [] and "Exception ignored" not in capsys.readouterr().err


def test_a_sigint_after_the_command_finished_changes_nothing(console_handlers, monkeypatch) -> None:  # noqa: ANN001
    """The command's work is done and its status known: a SIGINT now (the interpreter shutting down) neither
    raises nor ends the process by the signal."""
    monkeypatch.setattr(sys, "argv", ["lintf", "verify"])
    monkeypatch.setattr(cli, "_main", lambda argv: 0)
    monkeypatch.setattr(cli, "_INTERRUPTS", cli._Interrupts())  # noqa: SLF001
    assert cli.main() == 0
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.5)  # the signal is handled (here: ignored) before this returns


def test_an_interrupt_inside_an_import_waits_for_its_end(
    console_handlers, tmp_path, monkeypatch
) -> None:  # noqa: ANN001
    """A SIGINT that lands while a module is imported is not raised there (an extension module cut
    off as it initialises can crash the process): it is raised by the first timer tick outside
    the import."""
    (tmp_path / "lintf_probe_import.py").write_text("import sys\nFRAME = sys._getframe()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lintf_probe_import  # noqa: PLC0415 - the frame of a module body, run by importlib

    inside, outside = lintf_probe_import.FRAME, sys._getframe()
    assert cli._importing(inside) and not cli._importing(outside)  # noqa: SLF001
    interrupts = cli._Interrupts()  # noqa: SLF001 - the console command's own handler
    try:  # held: no KeyboardInterrupt inside the import, at the SIGINT or at a tick
        interrupts.first(signal.SIGINT, inside)
        interrupts.again(signal.SIGALRM, inside)
    except KeyboardInterrupt:
        pytest.fail("the interrupt was raised inside an import")
    assert interrupts.pending
    with pytest.raises(KeyboardInterrupt):
        interrupts.again(signal.SIGALRM, outside)
    signal.setitimer(signal.ITIMER_REAL, 0)
